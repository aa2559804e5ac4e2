"""The records a run is made of: its status, one lane per step (queue and bound), executions."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar
from enum import Enum
from typing import TYPE_CHECKING, Any

from .events import Event, JoinedEvents
from .retry import RetryInfo
from .step import StepSpec

if TYPE_CHECKING:
    from ._runtime import Run


class RunStatus(Enum):
    """Lifecycle of a run."""

    RUNNING = "running"  # events are being dispatched and steps run
    COMPLETED = "completed"  # a StopEvent ended the run
    FAILED = "failed"  # a step raised and its retry policy gave up
    TIMED_OUT = "timed_out"  # the workflow's timeout passed
    CANCELLED = "cancelled"  # cancel_run(), or the handler future was cancelled


#: The execution the current task (or sync step thread) is running, in a one-item list that is
#: emptied when the execution ends: asyncio timer handles and tasks a step creates copy the
#: context, and a cell they keep must not keep the run (and its workflow) alive after it.
CURRENT_EXECUTION: ContextVar[list[Execution | None] | None] = ContextVar(
    "batonflow_execution", default=None
)


def current_execution() -> Execution | None:
    """The execution of the step running in this task (or sync step thread), if any."""
    cell = CURRENT_EXECUTION.get()
    return None if cell is None else cell[0]


#: Where an event came from: the execution that emitted it, several (a join), or outside.
Origin = int | tuple[int, ...] | None
#: The collection-stream branch an event belongs to: (stream id, branch index), or None.
Tag = tuple[int, int] | None


class Lane:
    """The pending events and active executions of one step within one run."""

    __slots__ = (
        "active",
        "busy",
        "call",
        "collects",
        "direct",
        "index",
        "joins",
        "limit",
        "meta",
        "pending",
        "plain",
        "spec",
    )

    def __init__(self, index: int, spec: StepSpec, call: Callable[..., Any], scoped: bool) -> None:
        self.index = index
        self.spec = spec
        self.call = call
        self.limit = spec.num_workers
        self.collects = spec.collects
        self.active = 0
        # The worker slots in use, one bit each: an execution takes the lowest free slot, as
        # LlamaIndex numbers its workers 0..num_workers-1 (StepStateChanged.worker_id).
        self.busy = 0
        # The common case (async, no resources, no step timeout, no instrument scope) calls the
        # step directly from the execution task.
        self.direct = (
            spec.is_async and not spec.has_resources and spec.timeout is None and not scoped
        )
        # The queued events, and in step with them (origin, execution id to reuse or None,
        # collection-stream branch). Two deques: the meta tuples hold no event, so the cyclic
        # GC untracks them, and a long queue costs it one tracked object per event, not two.
        self.pending: deque[Event] = deque()
        self.meta: deque[tuple[Origin, int | None, Tag]] = deque()
        # Steps with several event parameters: the events waiting for their set, per parameter.
        self.joins: dict[str, deque[tuple[Event, Origin]]] | None = (
            {name: deque() for name in spec.join} if spec.join else None
        )
        #: Neither a list[E] collector nor a step with several event parameters.
        self.plain = not spec.collects and self.joins is None

    def join(self, event: Event, origin: Origin) -> tuple[JoinedEvents, Origin] | None:
        """File ``event`` under its parameter; return a full set once there is one."""
        joins = self.joins
        assert joins is not None
        fitting = [
            p.name for p in self.spec.params if p.name in joins and isinstance(event, p.event_types)
        ]
        if not fitting:
            return None
        slot = min(fitting, key=lambda name: len(joins[name]))
        joins[slot].append((event, origin))
        if not all(joins.values()):
            return None
        events: dict[str, Event] = {}
        origins: list[int] = []
        for name, queue in joins.items():
            ev, org = queue.popleft()
            events[name] = ev
            if isinstance(org, int):
                origins.append(org)
            elif org:
                origins.extend(org)
        return JoinedEvents(events=events), tuple(origins)


class Execution:
    """One execution of one step on one event (all its attempts)."""

    __slots__ = (
        "attempt",
        "event",
        "first_started",
        "first_started_wall",
        "id",
        "lane",
        "origins",
        "output_name",
        "retry_info",
        "run",
        "step_timeout",
        "tag",
        "task",
        "wait_count",
        "worker",
    )

    def __init__(
        self, run: Run, eid: int, lane: Lane, event: Event, origin: Origin, tag: Tag = None
    ) -> None:
        self.run = run
        self.id = eid
        self.lane = lane
        self.event = event
        if type(origin) is int:
            self.origins: tuple[int, ...] = (origin,)
        elif origin is None:
            self.origins = ()
        else:
            self.origins = tuple(origin)  # type: ignore[arg-type]
        self.attempt = 0
        self.retry_info: RetryInfo | None = None
        self.step_timeout: asyncio.Timeout | None = None
        self.task: asyncio.Task[None] | None = None
        self.first_started = 0.0
        self.first_started_wall = 0.0
        self.wait_count = 0
        # The lowest worker slot free in the lane when this execution started (see Lane.busy).
        busy = lane.busy
        free = ~busy & (busy + 1)
        lane.busy = busy | free
        self.worker = free.bit_length() - 1
        self.output_name: str | None = None
        self.tag = tag
