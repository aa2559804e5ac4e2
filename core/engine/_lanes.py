"""The records a run is made of: its status, one lane per step (queue and bound), executions.

``begin`` and ``release`` (methods of :class:`~batonflow.core.engine._runtime.Run`, bound in its class
body) start an execution and free its slot.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..data.events import Event, JoinedEvents, StepState
from ..retrying.retry import RetryInfo
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


#: ``RunStatus.RUNNING`` as a module constant, for the checks made several times per
#: execution: reading an Enum member from its class costs ~0.1 µs on Python 3.11.
RUNNING = RunStatus.RUNNING


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
#: One completed execution in the run's trace: (step name, input class, output classes).
TraceEntry = tuple[str, type[Event], tuple[type[Event], ...]]


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
        "trace_entry",
        "trace_in",
        "trace_out",
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
        # The last execution's input and output classes (type(None) for no output) and its
        # run-trace entry, when that output class passed the output check without help
        # from a waiter (see _executing.succeeded): the next execution alike reuses both.
        self.trace_in: type | None = None
        self.trace_out: type | None = None
        self.trace_entry: TraceEntry = (spec.name, Event, ())

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
    """One execution of one step on one event (all its attempts).

    Made by :func:`begin` only, which sets its fields itself: a class call running an
    ``__init__`` costs ~0.13 µs more, and a fan-out event makes two executions.
    """

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
        "slot",
        "step_timeout",
        "tag",
        "task",
        "wait_count",
    )

    run: Run
    id: int
    lane: Lane
    event: Event
    origins: tuple[int, ...]
    attempt: int
    first_started: float
    #: The bit of the lowest worker slot free in the lane when this execution started (see
    #: Lane.busy): ``1 << worker``.
    slot: int
    tag: Tag
    # Set only by the features that use them, and read with getattr(ex, name, default): a
    # fan-out event makes two executions, which would otherwise store them for nothing.
    #: The worker task running it (None again once it is released).
    task: asyncio.Task[None] | None
    #: After a failed attempt that is retried.
    retry_info: RetryInfo
    #: During an attempt of a step with a timeout (None after it).
    step_timeout: asyncio.Timeout | None
    #: With step listeners: time.time() when the first attempt began.
    first_started_wall: float
    #: The wait_for_event calls made so far.
    wait_count: int
    #: With internal events: the first output's class, "" for none (set by _succeeded).
    output_name: str

    @property
    def worker(self) -> int:
        """The lane's worker slot this execution took, 0 to ``num_workers - 1``."""
        return self.slot.bit_length() - 1


_new_execution = object.__new__


def begin(self: Run, lane: Lane, event: Event, origin: Origin, eid: int | None, tag: Tag) -> None:
    """Start an execution of ``lane`` on ``event``: queue it for the run's workers.

    A worker finishing an execution (``_deferring``) takes it itself; otherwise, when no
    worker is on its way back to the queue, a new one is created for it.
    """
    if eid is None:
        eid = self.next_id
        self.next_id = eid + 1
    ex: Execution = _new_execution(Execution)
    ex.run = self
    ex.id = eid
    ex.lane = lane
    ex.event = event
    if type(origin) is int:
        ex.origins = (origin,)
    elif origin is None:
        ex.origins = ()
    else:
        ex.origins = tuple(origin)  # type: ignore[arg-type]
    ex.attempt = 0
    ex.first_started = 0.0
    busy = lane.busy
    slot = ~busy & (busy + 1)
    lane.busy = busy | slot
    ex.slot = slot
    ex.tag = tag
    if self.recoveries or self.recovering:
        self._inherit_recoveries(ex)
    lane.active += 1
    self.running[eid] = ex
    self._ready.append(ex)
    if not self._deferring and not self._idle:
        self._add_worker()


def release(self: Run, ex: Execution) -> None:
    """The execution ``ex`` is over: free its slot, start what may start."""
    self.running.pop(ex.id, None)
    # The task is done with ex: break Execution -> Task -> its contextvars -> Execution,
    # so finished executions are freed by refcount rather than by full GC passes.
    ex.task = None
    lane = ex.lane
    lane.active -= 1
    lane.busy &= ~ex.slot
    if ex.tag is not None and self.status is RUNNING:
        self._branch_done(ex.tag)
    if self.status is RUNNING:
        if self.internal:
            if not hasattr(ex, "output_name"):  # not reported by _succeeded (it failed)
                self._state_changed(lane.spec.name, StepState.NOT_RUNNING, ex.worker, ex.event)
            self._maybe_idle()
        if self.stepwise:
            if not self.running and self._wave is not None and not self._wave.done():
                self._wave.set_result(None)
        elif not self._hold:
            pending = lane.pending
            while pending and lane.active < lane.limit:
                origin, eid, tag = lane.meta.popleft()  # _start, inline
                self._begin(lane, pending.popleft(), origin, eid, tag)
    if self.status is not RUNNING and not self.running:
        self._resolve()
