"""The run loop: the only place that creates tasks.

One :class:`Run` per workflow run. It owns, for each step, a lane (a deque of pending events and
a count of active executions bounded by ``num_workers``), the set of running executions, the
``collect_events`` buffers, the waiters of ``wait_for_event``, and the event stream.

There is no central loop task: dispatching is synchronous. When an event is routed, each
target lane gets it and, if below its bound, starts a worker task for it. A worker runs the
step (retrying per its policy), then reports back to the run in the same task: its outputs are
routed, or its error fails the run. Then, rather than ending, the worker takes the next event
that may start (its own lane's first, then a lane its outputs just filled), so a fan-out of
10,000 events costs about ``num_workers`` tasks, not 20,000; it yields to the event loop
between executions, so other runs, timers and stream readers keep their turn. Workers never raise into the loop, so the user gets the
step's original exception from ``await handler``. When the run ends (stop, failure, timeout,
cancel) every other task is cancelled, and the handler is resolved only once all of them are
gone, so no task outlives its run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from contextvars import ContextVar
from datetime import UTC, datetime
from enum import Enum
from typing import TYPE_CHECKING, Any

from ._calls import call_in_scopes, run_sync
from ._collect import CollectBuffer, CollectionStream
from ._stream import EventStream
from ._waiters import Waiter, type_name
from .errors import (
    StepTimeoutError,
    WorkflowCancelledByUser,
    WorkflowRuntimeError,
    WorkflowTimeoutError,
)
from .events import (
    CollectedEvents,
    Event,
    InputRequiredEvent,
    JoinedEvents,
    StepFailedEvent,
    StepState,
    StepStateChanged,
    StopEvent,
    UnhandledEvent,
    WorkflowCancelledEvent,
    WorkflowFailedEvent,
    WorkflowIdleEvent,
    WorkflowTimedOutEvent,
)
from .graph import CALLER_EVENTS
from .hooks import StepBoundary
from .instrument import (
    EventEmitted,
    EventsJoined,
    InstrumentSet,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
)
from .retry import RetryInfo, ask_policy, retry_seed
from .step import ParamKind, StepSpec

if TYPE_CHECKING:
    from ._snapshot import RunSnapshot
    from .context import Context
    from .graph import Graph
    from .handler import WorkflowHandler
    from .workflow import Workflow

logger = logging.getLogger("batonflow.runtime")

_MISSING: Any = object()


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

    __slots__ = ("active", "call", "direct", "index", "joins", "limit", "meta", "pending", "spec")

    def __init__(self, index: int, spec: StepSpec, call: Callable[..., Any], scoped: bool) -> None:
        self.index = index
        self.spec = spec
        self.call = call
        self.limit = spec.num_workers
        self.active = 0
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
        "started",
        "step_timeout",
        "tag",
        "task",
        "wait_count",
    )

    def __init__(self, run: Run, eid: int, lane: Lane, event: Event, origin: Origin) -> None:
        self.run = run
        self.id = eid
        self.lane = lane
        self.event = event
        if origin is None:
            self.origins: tuple[int, ...] = ()
        elif isinstance(origin, int):
            self.origins = (origin,)
        else:
            self.origins = tuple(origin)
        self.attempt = 0
        self.retry_info: RetryInfo | None = None
        self.step_timeout: asyncio.Timeout | None = None
        self.task: asyncio.Task[None] | None = None
        self.first_started = 0.0
        self.first_started_wall = 0.0
        self.wait_count = 0
        self.started = False
        self.output_name: str | None = None
        self.tag: Tag = None


class Run:
    """The state and the loop of one workflow run."""

    def __init__(
        self,
        workflow: Workflow,
        graph: Graph,
        ctx: Context[Any],
        run_id: str,
        *,
        stepwise: bool,
        instruments: InstrumentSet,
        calls: list[Callable[..., Any]],
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self.thread_id = threading.get_ident()
        self.workflow = workflow
        self.graph = graph
        self.ctx = ctx
        self.run_id = run_id
        self.meta: dict[str, str] = ctx.meta
        self.stepwise = stepwise
        instruments = instruments.for_run(run_id, workflow.workflow_name)
        self.instruments = instruments
        self.calls = calls
        self.lanes: list[Lane | None] = [None] * len(graph.order)
        self.running: dict[int, Execution] = {}
        self.next_id = 1
        self.status = RunStatus.RUNNING
        self.error: BaseException | None = None
        self.stop_event: StopEvent | None = None
        self.stream = EventStream(self.loop)
        self.buffers: dict[tuple[str, str | None], CollectBuffer] = {}
        self.waiters: dict[str, Waiter] = {}
        self.waiter_results: dict[str, Event] = {}
        self.emitted_waiters: set[str] = set()
        #: Whether internal events (StepStateChanged, WorkflowIdleEvent) are written.
        self.internal = False
        self.waiting = 0
        self.paused_steps: tuple[str, ...] = ()
        #: Open collection streams (fan-outs of list-returning steps) by id.
        self.streams: dict[int, CollectionStream] = {}
        self.next_stream = 1
        #: @catch_error recoveries used on each execution's lineage (the events that led to
        #: it), by handler name; only executions downstream of a recovery have an entry. Kept
        #: for the run's life: executions started later look their emitters' entries up.
        self.recoveries: dict[int, dict[str, int]] = {}
        #: The counts a routed StepFailedEvent carries to its handler's execution, by id(event)
        #: (the event is kept too, so its id cannot be reused while the entry exists).
        self.recovering: dict[int, tuple[Event, dict[str, int]]] = {}
        self.handler: WorkflowHandler | None = None
        #: Set by cancel(): (queued and in-progress parts, waiters, unread stream events).
        self.cancelled_view: tuple[Any, list[Waiter], list[Event]] | None = None
        self.started = time.perf_counter()
        self._timeout_handle: asyncio.TimerHandle | None = None
        self._hold = 0
        self._resolved = False
        #: Whether the run took one of its workflow's ``num_concurrent_runs`` slots.
        self.counted = False
        #: (step name, input event class, output event classes) per completed execution.
        self.trace: list[tuple[str, type[Event], tuple[type[Event], ...]]] = []
        self._trace_entries: dict[
            tuple[str, type[Event], tuple[type[Event], ...]],
            tuple[str, type[Event], tuple[type[Event], ...]],
        ] = {}
        self._held_stop: StopEvent | None = None
        #: Set while a worker finishes an execution (routes its outputs, frees its slot): the
        #: executions that start meanwhile are created as usual but get no task yet; they are
        #: kept in ``_deferred`` (in start order) and the worker hands them out (_release).
        self._deferring = False
        self._deferred: list[Execution] = []
        self._step_outputs: list[Event] = []
        #: Stepwise outputs of collection branches held by the caller: id -> (event, branch).
        self._handed: dict[int, tuple[Event, tuple[int, int]]] = {}
        self._wave: asyncio.Future[None] | None = None
        self._clock: Callable[[], float] = workflow._clock
        self._sleep: Callable[[float], Coroutine[Any, Any, None]] = workflow._sleep
        ins = instruments
        self._want_started = ins.wants("step_started")
        self._want_finished = ins.wants("step_finished")
        self._want_scope = ins.wants("step_scope")
        self._want_record = self._want_started or self._want_finished or self._want_scope
        self._want_emitted = ins.wants("event_emitted")
        self._want_joined = ins.wants("events_joined")
        #: Whether a step returning an event nobody takes fails the run (unless opted out).
        self._check_outputs = not (
            workflow._disable_validation or "terminal_event" in workflow._skip_graph_checks
        )

    # ------------------------------------------------------------------ lifecycle

    def start(
        self, start_event: Event | None, timeout: float | None, snapshot: RunSnapshot | None
    ) -> None:
        """Begin the run with ``start_event``, or resume it from ``snapshot``."""
        if timeout is not None and not self.stepwise:
            self._timeout_handle = self.loop.call_later(timeout, self._on_timeout, timeout)
        if self.instruments.wants("run_started"):
            self.instruments.call(
                "run_started",
                RunStarted(
                    self.run_id,
                    self.workflow.workflow_name,
                    start_event,
                    snapshot is not None,
                    self.meta,
                ),
            )
        if snapshot is not None:
            self._restore(snapshot)
        elif start_event is not None:
            self.route(start_event, None, None, external=True)

    def _restore(self, snap: RunSnapshot) -> None:
        self.next_id = snap.next_execution_id
        self.emitted_waiters = set(snap.emitted_waiters)
        self.waiter_results = dict(snap.waiter_results)
        for w in snap.waiters:
            self.waiters[w.waiter_id] = Waiter(
                w.waiter_id, w.type_name, None, w.requirements, None, w.step, w.execution_id
            )
        for (step_name, buffer_id), events in snap.buffers.items():
            buf = CollectBuffer()
            buf.raw = [(e, ()) for e in events]
            self.buffers[(step_name, buffer_id)] = buf
        for ev in snap.stream_pending:
            self.stream.put(ev)
        self.stream.position = snap.stream_position
        if isinstance(snap.stop_event, StopEvent):
            self.complete(snap.stop_event)
            return
        self.next_stream = snap.next_stream
        index_of = {spec.name: i for i, spec in enumerate(self.graph.order)}
        for saved in snap.streams:
            stream = CollectionStream(
                saved["size"], tuple(index_of[n] for n in saved["collectors"])
            )
            stream.fired = {index_of[n] for n in saved["fired"]}
            stream.items = {index_of[n]: list(items) for n, items in saved["items"].items()}
            self.streams[saved["id"]] = stream
        for step_name, param, events in snap.joins:
            lane = self._lane(self.graph.order.index(self.graph.steps[step_name]))
            if lane.joins is not None and param in lane.joins:
                lane.joins[param].extend((e, None) for e in events)
        # In-progress executions re-run first (with their ids, so default waiter ids match),
        # then the queued events in their original order.
        self._hold += 1
        for item in (*snap.in_progress, *snap.queued):
            lane = self._lane(self.graph.order.index(self.graph.steps[item.step]))
            tag = item.tag
            lane.pending.append(item.event)
            lane.meta.append((item.origin, item.execution_id, tag))
            if tag is not None and tag[0] in self.streams:
                self.streams[tag[0]].live[tag[1]] += 1
        self._hold -= 1
        for sid in list(self.streams):
            self._check_stream(sid)
        self._kick_all()

    @property
    def held_stop(self) -> StopEvent | None:
        """The StopEvent a step returned, held while step listeners look at the run."""
        return self._held_stop

    def _on_timeout(self, timeout: float) -> None:
        self._timeout_handle = None
        if self.status is not RunStatus.RUNNING:
            return
        active = self.running_steps()
        self.stream.put(WorkflowTimedOutEvent(timeout=timeout, active_steps=active))
        self.fail(
            WorkflowTimeoutError(
                f"Operation timed out after {timeout} seconds: the run of "
                f"{self.workflow.workflow_name} did not finish ({self._activity(active)}). "
                "Raise Workflow(timeout=...) or pass timeout=None for no limit."
            ),
            RunStatus.TIMED_OUT,
        )

    def _activity(self, active: list[str]) -> str:
        """What the run was doing, for the timeout message."""
        waiting = sorted(
            {f"{w.step} for {w.type_name.rsplit('.', 1)[-1]}" for w in self.waiters.values()}
        )
        queued = sorted(
            {lane.spec.name for lane in self.lanes if lane is not None and lane.pending}
        )
        parts = []
        if active:
            parts.append(f"currently active steps: {', '.join(active)}")
        if waiting:
            parts.append(f"waiting for an event: {', '.join(waiting)}")
        if queued:
            parts.append(f"queued: {', '.join(queued)}")
        if not parts:
            return (
                "no step was running or waiting: the run was idle, waiting for an event sent "
                "from outside with handler.ctx.send_event()"
            )
        return "; ".join(parts)

    def cancel(self) -> None:
        """End the run as cancelled by the user."""
        if self.status is not RunStatus.RUNNING:
            return
        # What the run was doing, for ctx.to_dict() afterwards: a cancelled run can be resumed.
        self.cancelled_view = (
            self.snapshot_parts(),
            list(self.waiters.values()),
            self.stream.pending(),
        )
        self.stream.put(WorkflowCancelledEvent())
        self.fail(
            WorkflowCancelledByUser(f"The run {self.run_id} was cancelled."), RunStatus.CANCELLED
        )

    def fail(
        self,
        error: BaseException,
        status: RunStatus = RunStatus.FAILED,
        ex: Execution | None = None,
    ) -> None:
        """End the run with ``error``: cancel every other step, then resolve the handler.

        A failure of execution ``ex`` is announced on the stream with a WorkflowFailedEvent.
        """
        if self.status is not RunStatus.RUNNING:
            return
        if status is RunStatus.FAILED:
            self.stream.put(
                WorkflowFailedEvent(
                    step_name=ex.lane.spec.name if ex is not None else "",
                    exception=error,
                    attempts=ex.attempt if ex is not None else None,
                    elapsed_seconds=self._clock() - ex.first_started if ex is not None else None,
                )
            )
        self.status = status
        self.error = error
        self._end()

    def complete(self, stop: StopEvent) -> None:
        """End the run successfully with ``stop``."""
        if self.status is not RunStatus.RUNNING:
            return
        self.status = RunStatus.COMPLETED
        self.stop_event = stop
        self.stream.put(stop)
        self._end()

    def _end(self) -> None:
        self.stream.close()
        if self._timeout_handle is not None:
            self._timeout_handle.cancel()
            self._timeout_handle = None
        current = asyncio.current_task()
        for ex in list(self.running.values()):
            task = ex.task
            if task is not None and task is not current:
                task.cancel()
                if not ex.started:
                    # A task cancelled before its first step never runs its body (nor its
                    # finally), so it is released here.
                    del self.running[ex.id]
                    ex.task = None  # as in _release: no Execution-Task cycle left for the GC
        # Steps waiting for an event when the run ends: cancelled then, the run is paused.
        self.paused_steps = tuple(dict.fromkeys(w.step for w in self.waiters.values()))
        for waiter in self.waiters.values():
            if waiter.future is not None and not waiter.future.done():
                waiter.future.cancel()
        if self._wave is not None and not self._wave.done():
            self._wave.set_result(None)
        if not self.running:
            self._resolve()

    def _resolve(self) -> None:
        if self._resolved:
            return
        self._resolved = True
        handler = self.handler
        self.ctx._run_ended(self)
        if self.instruments.wants("run_finished"):
            stop = self.stop_event
            result = None
            if stop is not None:
                result = stop.result if type(stop) is StopEvent else stop
            self.instruments.call(
                "run_finished",
                RunFinished(
                    self.run_id,
                    self.workflow.workflow_name,
                    self.status.value,
                    result,
                    self.error,
                    time.perf_counter() - self.started,
                    self.meta,
                    self.paused_steps,
                ),
            )
        self.workflow._run_finished(self)
        # A finished run keeps no reference back to its handler or Context (both keep the
        # run): without these cycles a dropped run is freed by refcount, not by GC passes
        # whose cost grows with every live run.
        self.handler = None
        del self.ctx
        if handler is None or handler.done():
            return
        if self.status is RunStatus.COMPLETED:
            stop = self.stop_event
            assert stop is not None
            handler.set_result(stop.result if type(stop) is StopEvent else stop)
        else:
            handler.set_exception(self.error or WorkflowRuntimeError("The run ended."))

    # ------------------------------------------------------------------ routing

    def _lane(self, index: int) -> Lane:
        lane = self.lanes[index]
        if lane is None:
            lane = self.lanes[index] = Lane(
                index, self.graph.order[index], self.calls[index], self._want_scope
            )
        return lane

    def route(
        self,
        event: Event,
        origin: Origin,
        target: int | None,
        *,
        external: bool = False,
        emitter: Execution | None = None,
        tag: Tag = None,
    ) -> None:
        """Deliver ``event`` to the steps that accept it (or to step ``target`` only)."""
        if self.status is not RunStatus.RUNNING:
            return
        if self._handed and tag is None:
            handed = self._handed.pop(id(event), None)
            if handed is not None and handed[0] is event:
                # A stepwise output sent back by the caller rejoins its collection branch.
                self.route(event, origin, target, external=external, emitter=emitter, tag=handed[1])
                self._branch_done(handed[1])
                return
        if self._want_emitted:
            self.instruments.call(
                "event_emitted",
                EventEmitted(
                    self.run_id,
                    self.workflow.workflow_name,
                    event,
                    None if emitter is None else emitter.lane.spec.name,
                    None if emitter is None else emitter.id,
                ),
            )
        if isinstance(event, StopEvent):
            if self._hold:
                self._held_stop = event
            else:
                self.complete(event)
            return
        if self.waiters and self._offer_waiters(event):
            return
        if not external and isinstance(event, InputRequiredEvent):
            self.stream.put(event)
        targets = self.graph.targets(type(event)) if target is None else (target,)
        if not targets and self.internal:
            self._unhandled(event)
        hold = self._hold or self.stepwise
        for index in targets:
            lane = self.lanes[index] or self._lane(index)
            if lane.spec.collects:
                if tag is not None:
                    self._collect_member(lane, event, tag)
                elif self.internal:
                    self._unhandled(event)
                continue
            item: Event = event
            item_origin: Origin = origin
            item_tag = tag
            if lane.joins is not None:
                joined = lane.join(event, origin)
                if joined is None:
                    continue
                item, item_origin = joined
                item_tag = None
            lane.pending.append(item)
            lane.meta.append((item_origin, None, item_tag))
            if item_tag is not None:
                self.streams[item_tag[0]].live[item_tag[1]] += 1
            if not hold and lane.active < lane.limit:
                self._start(lane)
            elif self.internal:
                self._state_changed(lane.spec.name, StepState.PREPARING, None, item)

    def _offer_waiters(self, event: Event) -> bool:
        for waiter in list(self.waiters.values()):
            if not waiter.matches(event):
                continue
            if waiter.future is None:
                # Restored waiter whose step has not re-reached wait_for_event yet.
                del self.waiters[waiter.waiter_id]
                self.waiter_results[waiter.waiter_id] = event
                return True
            if not waiter.future.done():
                del self.waiters[waiter.waiter_id]
                waiter.future.set_result(event)
                return True
        return False

    def _kick_all(self) -> None:
        if self.stepwise or self.status is not RunStatus.RUNNING:
            return
        for lane in self.lanes:
            if lane is not None:
                while lane.pending and lane.active < lane.limit:
                    self._start(lane)

    def _start(self, lane: Lane) -> None:
        """Start an execution of ``lane``'s next event, in a new worker task.

        While a worker finishes an execution (``_deferring``), the execution gets no task yet:
        the worker gives the others tasks, in start order, and runs the last one itself, after
        yielding to the loop, so every execution starts in the order it would have with a
        task each.
        """
        event = lane.pending.popleft()
        origin, eid, tag = lane.meta.popleft()
        if eid is None:
            eid = self.next_id
            self.next_id += 1
        ex = Execution(self, eid, lane, event, origin)
        ex.tag = tag
        if self.recoveries or self.recovering:
            self._inherit_recoveries(ex)
        lane.active += 1
        self.running[eid] = ex
        if self._deferring:
            self._deferred.append(ex)
        else:
            ex.task = self.loop.create_task(self._work(ex))

    # ------------------------------------------------------------------ executing

    async def _work(self, ex: Execution) -> None:
        """A worker task: run ``ex``, then the next executions the run hands it."""
        worker = ex.task
        next_ex: Execution | None = ex
        while next_ex is not None:
            ex = next_ex
            try:
                await self._execute(ex)
            except BaseException:
                self._release(ex, None)
                raise
            self._deferring = not self.stepwise  # (already set when ex succeeded)
            next_ex = self._release(ex, worker)
            if next_ex is None:
                return
            # Let the loop run what is ready (other runs, timers, stream readers) before the
            # next execution, as a new task would have; cheaper than creating one. If the run
            # ends meanwhile, _end cancels this task and drops next_ex, as for a new task
            # cancelled before its first step.
            try:
                await asyncio.sleep(0)
            except asyncio.CancelledError:
                if next_ex.id in self.running:  # cancelled from outside the run
                    self._cancelled_outside(next_ex, None)
                    self._release(next_ex, None)
                raise

    def _cancelled_outside(self, ex: Execution, cancelled: BaseException | None) -> None:
        if self.status is RunStatus.RUNNING:
            # Not cancelled by the run (it only cancels steps once it has ended): the loop is
            # shutting down or someone cancelled the task directly.
            error = WorkflowRuntimeError(
                f"Step {ex.lane.spec.name} was cancelled from outside the run; use "
                "handler.cancel_run() to stop a run."
            )
            if cancelled is not None:
                error = error.with_traceback(cancelled.__traceback__)
            self.fail(error, ex=ex)

    async def _execute(self, ex: Execution) -> None:
        """Run one execution (all its attempts); the caller releases it."""
        ex.started = True
        cell: list[Execution | None] = [ex]
        CURRENT_EXECUTION.set(cell)
        if self.internal:
            self._state_changed(ex.lane.spec.name, StepState.RUNNING, ex.id, ex.event)
        lane = ex.lane
        spec = lane.spec
        try:
            ex.first_started = self._clock()
            if self.workflow._listeners:
                ex.first_started_wall = time.time()
            while True:
                ex.attempt += 1
                record: StepStarted | None = None
                if self._want_record:
                    record = StepStarted(
                        self.run_id,
                        self.workflow.workflow_name,
                        spec.name,
                        ex.id,
                        ex.attempt,
                        ex.event,
                        ex.origins,
                        self.meta,
                    )
                    if self._want_started:
                        self.instruments.call("step_started", record)
                began = time.perf_counter() if self._want_finished else 0.0
                try:
                    if lane.direct:
                        result = await lane.call(self.ctx, ex.event, None)
                    elif spec.timeout is None:
                        result = await self._attempt(ex, record)
                    else:
                        result = await self._attempt_with_timeout(ex, record, spec.timeout)
                except asyncio.CancelledError as cancelled:
                    self._cancelled_outside(ex, cancelled)
                    raise
                except (KeyboardInterrupt, SystemExit) as error:
                    self.fail(error, ex=ex)
                    raise
                except Exception as error:
                    if self.status is not RunStatus.RUNNING:
                        return
                    try:
                        delay = self._retry_delay(ex, error)
                    except WorkflowRuntimeError as broken:
                        if self._want_finished:
                            self._step_finished(ex, (), error, began)
                        self.fail(broken, ex=ex)
                        return
                    if self._want_finished:
                        self._step_finished(ex, (), error, began, delay is not None)
                    if delay is None:
                        if not self._recover(ex, error):
                            self.fail(error, ex=ex)
                        return
                    ex.retry_info = RetryInfo(
                        ex.attempt,
                        self._clock() - ex.first_started,
                        error,
                        datetime.now(UTC),
                    )
                    await self._sleep(delay)
                    if self.status is not RunStatus.RUNNING:
                        return
                    continue
                if self.status is not RunStatus.RUNNING:
                    return
                # Executions the outputs start are handed out by _release (see _start).
                self._deferring = not self.stepwise
                self._succeeded(ex, result, began)
                return
        finally:
            cell[0] = None

    def _recover(self, ex: Execution, error: Exception) -> bool:
        """Hand a failed execution to its ``@catch_error`` step, if it has one left to give.

        ``max_recoveries`` is a budget per lineage, as in LlamaIndex: a failure downstream of
        what a recovery produced counts against the same handler's budget, while independent
        branches (fan-out items, say) each have their own.
        """
        spec = ex.lane.spec
        if spec.error_handler:
            return False  # a handler that raises fails the run
        index = self.graph.error_handler_for(spec.name)
        if index is None:
            return False
        handler = self.graph.order[index]
        counts = self.recoveries.get(ex.id, {})
        used = counts.get(handler.name, 0)
        if used >= handler.max_recoveries:
            return False
        failed = StepFailedEvent(
            step_name=spec.name,
            input_event=ex.event,
            exception=error,
            attempts=ex.attempt,
            elapsed_seconds=self._clock() - ex.first_started,
            failed_at=datetime.now(UTC),
        )
        self.recovering[id(failed)] = (failed, {**counts, handler.name: used + 1})
        self.route(failed, ex.id, index, emitter=ex)
        return True

    def _inherit_recoveries(self, ex: Execution) -> None:
        """Give ``ex`` the recovery counts of the lineage its input event comes from."""
        carried = self.recovering.pop(id(ex.event), None)
        counts = carried[1] if carried is not None and carried[0] is ex.event else None
        if counts is None:
            for origin in ex.origins:
                found = self.recoveries.get(origin)
                if found is not None:
                    # A join of several lineages: the most used budget per handler counts.
                    counts = found if counts is None else _max_counts(counts, found)
        if counts:
            self.recoveries[ex.id] = counts

    def _retry_delay(self, ex: Execution, error: Exception) -> float | None:
        """Seconds before the next attempt, or None to give up.

        Raises:
            WorkflowRuntimeError: The policy raised, or returned something that is not a
                number of seconds (``>= 0``) or ``None``.
        """
        policy = ex.lane.spec.retry_policy
        if policy is None:
            return None
        name = ex.lane.spec.name
        try:
            seed = retry_seed(self.run_id, name, ex.attempt)
            delay = ask_policy(policy, self._clock() - ex.first_started, ex.attempt, error, seed)
        except Exception as bug:
            raise WorkflowRuntimeError(
                f"Retry policy {type(policy).__name__}.next() raised {type(bug).__name__}: "
                f"{bug} while deciding whether to retry step {name} after its "
                f"{type(error).__name__}: {error}. Fix the policy; it must return seconds to "
                "wait, or None to stop retrying."
            ) from bug
        if delay is None:
            return None
        if (
            isinstance(delay, bool)
            or not isinstance(delay, int | float)
            or math.isnan(delay)
            or delay < 0
        ):
            raise WorkflowRuntimeError(
                f"Retry policy {type(policy).__name__}.next() returned {delay!r} for step "
                f"{name}; it must return seconds to wait (a number >= 0), or None to stop "
                "retrying."
            ) from error
        return float(delay)

    async def _attempt(self, ex: Execution, record: StepStarted | None) -> Any:
        lane = ex.lane
        spec = lane.spec
        resources = await self._resources(spec) if spec.has_resources else None
        scopes = self.instruments.scopes(record) if self._want_scope and record else None
        if spec.is_async:
            if scopes:
                with contextlib.ExitStack() as stack:
                    for scope in scopes:
                        stack.enter_context(scope)
                    return await lane.call(self.ctx, ex.event, resources)
            return await lane.call(self.ctx, ex.event, resources)
        return await run_sync(call_in_scopes, lane.call, self.ctx, ex.event, resources, scopes)

    async def _attempt_with_timeout(
        self, ex: Execution, record: StepStarted | None, seconds: float
    ) -> Any:
        timer = asyncio.timeout(seconds)
        try:
            async with timer:
                ex.step_timeout = timer
                return await self._attempt(ex, record)
        except TimeoutError:
            if timer.expired():
                raise StepTimeoutError(
                    f"Step {ex.lane.spec.name} took longer than its timeout of {seconds} seconds "
                    "and was cancelled. Raise @step(timeout=...) or give it a retry_policy."
                ) from None
            raise
        finally:
            ex.step_timeout = None

    async def _resources(self, spec: StepSpec) -> dict[str, Any]:
        manager = self.workflow.resource_manager
        values: dict[str, Any] = {}
        scope: dict[Any, Any] = {}  # one execution: uncached resources are shared within it
        for param in spec.params:
            if param.kind is ParamKind.WORKFLOW:
                values[param.name] = self.workflow._nested_workflow(spec.name, param)
            elif param.kind is ParamKind.RESOURCE:
                values[param.name] = await manager.resolve(
                    param.resource,
                    step_name=spec.name,
                    param_name=param.name,
                    annotation=param.annotation,
                    localns=param.localns,
                    scope=scope,
                )
        return values

    def _step_finished(
        self,
        ex: Execution,
        outputs: tuple[Event, ...],
        error: BaseException | None,
        began: float,
        will_retry: bool = False,
    ) -> None:
        self.instruments.call(
            "step_finished",
            StepFinished(
                self.run_id,
                self.workflow.workflow_name,
                ex.lane.spec.name,
                ex.id,
                ex.attempt,
                ex.event,
                outputs,
                error,
                time.perf_counter() - began,
                will_retry,
                self.meta,
            ),
        )

    def _succeeded(self, ex: Execution, result: Any, began: float) -> None:
        # The execution is over: it is no longer in progress for snapshots.
        del self.running[ex.id]
        fan_out = False
        if result is None:
            outputs: tuple[Event, ...] = ()
            kinds: tuple[type[Event], ...] = ()
        elif isinstance(result, Event):
            outputs = (result,)
            kinds = (type(result),)
        elif isinstance(result, list) and all(isinstance(item, Event) for item in result):
            fan_out = True
            outputs = tuple(result)
            kinds = tuple(type(item) for item in outputs)
        else:
            error = WorkflowRuntimeError(
                f"Step function {ex.lane.spec.name} returned {type(result).__name__} instead of "
                f"an Event instance. It returned {result!r:.80}; a step must return an Event, a "
                "list of events, or None. Wrap the value in an event, e.g. "
                "StopEvent(result=value)."
            )
            if self._want_finished:
                self._step_finished(ex, (), error, began)
            self.fail(error, ex=ex)
            return
        if self._check_outputs and not self.stepwise:
            emitted = ex.lane.spec.emitted
            for ev in outputs:
                if type(ev) not in emitted and self._undeliverable(ev):
                    error = self._undelivered_error(ex, ev)
                    if self._want_finished:
                        self._step_finished(ex, (), error, began)
                    self.fail(error, ex=ex)
                    return
        if self._want_finished:
            self._step_finished(ex, outputs, None, began)
        if self.internal:
            # Reported here, before the outputs are routed (a StopEvent ends the stream).
            ex.output_name = str(type(outputs[0])) if outputs else ""
            self._state_changed(
                ex.lane.spec.name, StepState.NOT_RUNNING, ex.id, ex.event, ex.output_name or None
            )
        entry = (ex.lane.spec.name, type(ex.event), kinds)
        # Repeated entries share one tuple: a long run keeps 8 bytes per step, not ~130.
        self.trace.append(self._trace_entries.setdefault(entry, entry))
        if self.stepwise:
            self._hand_out(ex, outputs, fan_out)
            return
        listeners = self.workflow._listeners
        if not listeners:
            self._route_outputs(ex, outputs, fan_out)
            return
        # Queue the outputs without starting anything, let the listeners look at a quiet run,
        # then dispatch.
        self._hold += 1
        try:
            self._route_outputs(ex, outputs, fan_out)
            boundary = StepBoundary(
                self.run_id,
                ex.lane.spec.name,
                ex.id,
                ex.attempt,
                ex.event,
                outputs,
                self.ctx,
                ex.first_started_wall,
                time.time(),
            )
            for listener in listeners:
                listener(boundary)
        except Exception as error:
            self._hold -= 1
            self.fail(error, ex=ex)
            return
        self._hold -= 1
        stop, self._held_stop = self._held_stop, None
        if stop is not None:
            self.complete(stop)
        else:
            self._kick_all()

    def _hand_out(self, ex: Execution, outputs: tuple[Event, ...], fan_out: bool) -> None:
        """Stepwise runs: give a step's outputs to the caller, who sends them on.

        Outputs belonging to a collection stream (a ``list[E]`` fan-out feeding a ``list[R]``
        join) keep their branch: the branch stays open while the caller holds the event, and
        the event rejoins it when sent back with ``ctx.send_event``.
        """
        tags: list[Tag] = [ex.tag] * len(outputs)
        if fan_out:
            declared = tuple(e for e in ex.lane.spec.emitted if not issubclass(e, StopEvent))
            collectors = self.graph.collectors_from(declared)
            if collectors:
                sid = self.next_stream
                self.next_stream += 1
                self.streams[sid] = CollectionStream(len(outputs), collectors)
                tags = [(sid, i) for i in range(len(outputs))]
        for ev, tag in zip(outputs, tags, strict=True):
            self._step_outputs.append(ev)
            if isinstance(ev, StopEvent):
                self.complete(ev)
            elif tag is not None and tag[0] in self.streams:
                self._handed[id(ev)] = (ev, tag)
                self.streams[tag[0]].live[tag[1]] += 1

    def _undeliverable(self, event: Event) -> bool:
        if isinstance(event, CALLER_EVENTS) or self.graph.targets(type(event)):
            return False
        return not any(w.wants_type(event) for w in self.waiters.values())

    def _undelivered_error(self, ex: Execution, event: Event) -> WorkflowRuntimeError:
        spec = ex.lane.spec
        kind = type(event).__name__
        declared = ", ".join(e.__name__ for e in spec.emitted) or "None"
        return WorkflowRuntimeError(
            f"Step {spec.name} returned {kind}, but no step accepts {kind} and no step is "
            f"waiting for it, so the run could never go on (its return annotation says: "
            f"{declared}). Return one of the annotated events, or add a step that takes "
            f"`ev: {kind}`."
        )

    def _route_outputs(self, ex: Execution, outputs: tuple[Event, ...], fan_out: bool) -> None:
        if fan_out:
            declared = tuple(e for e in ex.lane.spec.emitted if not issubclass(e, StopEvent))
            collectors = self.graph.collectors_from(declared)
            if collectors:
                # A list feeding a list[E] join opens a collection stream: one branch per item.
                sid = self.next_stream
                self.next_stream += 1
                self.streams[sid] = CollectionStream(len(outputs), collectors)
                for i, ev in enumerate(outputs):
                    self.route(ev, ex.id, None, emitter=ex, tag=(sid, i))
                self._check_stream(sid)
                return
        tag = ex.tag
        for ev in outputs:
            self.route(ev, ex.id, None, emitter=ex, tag=tag)

    def _branch_done(self, tag: tuple[int, int]) -> None:
        stream = self.streams.get(tag[0])
        if stream is None:
            return
        stream.live[tag[1]] -= 1
        if stream.live[tag[1]] == 0:
            self._check_stream(tag[0])

    def _check_stream(self, sid: int) -> None:
        stream = self.streams.get(sid)
        if stream is None or not stream.closed():
            return
        del self.streams[sid]
        for index in stream.collectors:
            if index not in stream.fired:
                self._fire(index, stream)

    def _collect_member(self, lane: Lane, event: Event, tag: tuple[int, int]) -> None:
        stream = self.streams.get(tag[0])
        if stream is None or lane.index in stream.fired:
            return
        if lane.index not in stream.collectors:
            stream.collectors.append(lane.index)
        items = stream.items.setdefault(lane.index, [])
        items.append((tag[1], event))
        take = lane.spec.collect_take
        if take is not None and len(items) >= take:
            self._fire(lane.index, stream)

    def _fire(self, index: int, stream: CollectionStream) -> None:
        stream.fired.add(index)
        items = stream.items.pop(index, [])
        lane = self._lane(index)
        take = lane.spec.collect_take
        if take is not None:
            events = [e for _, e in items[:take]]
        else:
            events = [e for _, e in sorted(items, key=lambda item: item[0])]
        lane.pending.append(CollectedEvents(events=events))
        lane.meta.append((None, None, None))
        if not (self._hold or self.stepwise) and lane.active < lane.limit:
            self._start(lane)

    def stream_parts(self) -> list[dict[str, Any]]:
        """The open collection streams, by step names (for snapshots)."""
        names = [spec.name for spec in self.graph.order]
        return [
            {
                "id": sid,
                "size": stream.size,
                "collectors": [names[i] for i in stream.collectors],
                "fired": [names[i] for i in stream.fired],
                "items": {
                    names[i]: [(branch, ev) for branch, ev in items]
                    for i, items in stream.items.items()
                },
            }
            for sid, stream in self.streams.items()
        ]

    def _release(self, ex: Execution, worker: asyncio.Task[None] | None) -> Execution | None:
        """The execution ``ex`` is over: free its slot, start what may start.

        Returns:
            The execution ``worker`` (the task that ran ``ex``) runs next, or ``None`` (no
            worker given, nothing to run, or the run is over).
        """
        self.running.pop(ex.id, None)
        # The task is done with ex: break Execution -> Task -> its contextvars -> Execution,
        # so finished executions are freed by refcount rather than by full GC passes.
        ex.task = None
        lane = ex.lane
        lane.active -= 1
        if ex.tag is not None and self.status is RunStatus.RUNNING:
            self._branch_done(ex.tag)
        if self.status is RunStatus.RUNNING:
            if self.internal:
                if ex.output_name is None:  # not reported by _succeeded (it failed)
                    self._state_changed(lane.spec.name, StepState.NOT_RUNNING, ex.id, ex.event)
                self._maybe_idle()
            if self.stepwise:
                if not self.running and self._wave is not None and not self._wave.done():
                    self._wave.set_result(None)
            elif lane.pending and not self._hold:
                while lane.pending and lane.active < lane.limit:
                    self._start(lane)
        return self._hand_out_started(worker)

    def _hand_out_started(self, worker: asyncio.Task[None] | None) -> Execution | None:
        """End ``_deferring``: give tasks to the executions started meanwhile, but the last.

        The last one goes to ``worker`` (unless it is being cancelled): it yields to the loop
        before running it, so it starts after the others, as its own task would have.
        """
        started = self._deferred
        self._deferring = False
        if started:
            self._deferred = []
            if self.status is not RunStatus.RUNNING:
                for ex in started:  # never ran: _end left them to us
                    self.running.pop(ex.id, None)
                started = []
            elif worker is not None and not worker.cancelling():
                last = started.pop()
                last.task = worker
                for ex in started:
                    ex.task = self.loop.create_task(self._work(ex))
                return last
            for ex in started:
                ex.task = self.loop.create_task(self._work(ex))
        if self.status is not RunStatus.RUNNING and not self.running:
            self._resolve()
        return None

    def _state_changed(
        self,
        name: str,
        state: StepState,
        eid: int | None,
        event: Event,
        output: str | None = None,
    ) -> None:
        self.stream.has_internal = True
        # LlamaIndex's formats: a queued execution has no worker yet ("<enqueued>"); a finished
        # one names its input and output classes as str(type(ev)) ("<class 'mod.Name'>").
        self.stream.put(
            StepStateChanged(
                name=name,
                step_state=state,
                worker_id="<enqueued>" if eid is None else str(eid),
                input_event_name=str(type(event))
                if state is StepState.NOT_RUNNING
                else type(event).__name__,
                output_event_name=output,
            )
        )

    def _unhandled(self, event: Event) -> None:
        self.stream.has_internal = True
        idle = bool(self.waiting) and len(self.running) == self.waiting
        self.stream.put(
            UnhandledEvent(
                event_type=type(event).__name__,
                qualified_name=type_name(type(event)),
                idle=idle and not any(lane is not None and lane.pending for lane in self.lanes),
            )
        )

    def _maybe_idle(self) -> None:
        # Idle: every execution left is parked in wait_for_event and nothing is queued.
        if not self.waiting or len(self.running) != self.waiting:
            return
        if any(lane is not None and lane.pending for lane in self.lanes):
            return
        self.stream.has_internal = True
        self.stream.put(WorkflowIdleEvent())

    # ------------------------------------------------------------------ context services

    def collect(
        self, ex: Execution, event: Event, expected: Sequence[type[Event]], buffer_id: str | None
    ) -> list[Event] | None:
        """``ctx.collect_events`` for the execution ``ex``."""
        key = (ex.lane.spec.name, buffer_id)
        buf = self.buffers.get(key)
        if buf is None:
            buf = self.buffers[key] = CollectBuffer()
        if len(expected) != buf.size or (
            expected and (expected[0] is not buf.first or expected[-1] is not buf.last)
        ):
            buf.configure(expected)
        if not buf.add(event, ex.origins):
            return None
        released = buf.release()
        if released is None:
            return None
        events, origins = released
        if self._want_joined:
            self.instruments.call(
                "events_joined",
                EventsJoined(
                    self.run_id,
                    self.workflow.workflow_name,
                    ex.lane.spec.name,
                    ex.id,
                    tuple(events),
                    origins,
                ),
            )
        return events

    async def wait_for(
        self,
        ex: Execution,
        event_type: type[Event],
        waiter_event: Event | None,
        waiter_id: str | None,
        requirements: dict[str, Any] | None,
        timeout: float | None,
    ) -> Event:
        """``ctx.wait_for_event`` for the execution ``ex``."""
        if waiter_id is None:
            waiter_id = f"{ex.lane.spec.name}:{ex.id}:{ex.wait_count}"
        ex.wait_count += 1
        found = self.waiter_results.pop(waiter_id, None)
        if found is not None:
            return found
        future: asyncio.Future[Event] = self.loop.create_future()
        self.waiters[waiter_id] = Waiter(
            waiter_id,
            type_name(event_type),
            event_type,
            dict(requirements or {}),
            future,
            ex.lane.spec.name,
            ex.id,
        )
        if waiter_event is not None and waiter_id not in self.emitted_waiters:
            self.emitted_waiters.add(waiter_id)
            self.stream.put(waiter_event)
        self.waiting += 1
        if self.internal:
            self._maybe_idle()
        # Time spent waiting for someone else is not charged to the step's own timeout.
        step_timer = ex.step_timeout
        remaining: float | None = None
        if step_timer is not None:
            deadline = step_timer.when()
            if deadline is not None:
                remaining = deadline - self.loop.time()
                step_timer.reschedule(None)
        try:
            if timeout is None:
                return await future
            timer = asyncio.timeout(timeout)
            try:
                async with timer:
                    return await future
            except TimeoutError:
                if not timer.expired():
                    raise
                raise TimeoutError(
                    f"Step {ex.lane.spec.name} waited {timeout} seconds for "
                    f"{event_type.__name__} (waiter_id {waiter_id!r}) and none arrived. Send it "
                    "with handler.ctx.send_event(...), or pass a larger timeout= to "
                    "ctx.wait_for_event (None waits forever)."
                ) from None
        finally:
            self.waiting -= 1
            waiter = self.waiters.get(waiter_id)
            if waiter is not None and waiter.future is future:
                del self.waiters[waiter_id]
            if step_timer is not None and remaining is not None:
                step_timer.reschedule(self.loop.time() + remaining)

    # ------------------------------------------------------------------ stepwise

    async def run_wave(self) -> list[Event] | None:
        """Run every pending execution once (bounded per step); return what they produced."""
        while True:
            if self.status is not RunStatus.RUNNING:
                outputs, self._step_outputs = self._step_outputs, []
                return outputs or None
            started = False
            for lane in self.lanes:
                if lane is not None:
                    while lane.pending and lane.active < lane.limit:
                        self._start(lane)
                        started = True
            if not started and not self.running:
                outputs, self._step_outputs = self._step_outputs, []
                return outputs
            if self.running:
                self._wave = self.loop.create_future()
                await self._wave
                self._wave = None
            if self._step_outputs:
                outputs, self._step_outputs = self._step_outputs, []
                return outputs

    # ------------------------------------------------------------------ inspection

    def snapshot_parts(
        self,
    ) -> tuple[
        list[tuple[str, Event, Origin, int | None, Tag]],
        list[tuple[str, Event, Origin, int, Tag]],
    ]:
        """``(queued, in_progress)`` as ``(step, event, origin, execution id, tag)`` tuples."""
        queued: list[tuple[str, Event, Origin, int | None, Tag]] = []
        for lane in self.lanes:
            if lane is not None:
                for event, (origin, eid, tag) in zip(lane.pending, lane.meta, strict=True):
                    queued.append((lane.spec.name, event, origin, eid, tag))
        in_progress: list[tuple[str, Event, Origin, int, Tag]] = [
            (ex.lane.spec.name, ex.event, _origin_of(ex.origins), ex.id, ex.tag)
            for ex in sorted(self.running.values(), key=lambda e: e.id)
        ]
        return queued, in_progress

    def join_parts(self) -> list[tuple[str, str, list[Event]]]:
        """Events waiting for their set in steps with several event parameters."""
        return [
            (lane.spec.name, name, [event for event, _ in queue])
            for lane in self.lanes
            if lane is not None and lane.joins is not None
            for name, queue in lane.joins.items()
            if queue
        ]

    def running_steps(self) -> list[str]:
        """Names of the steps with an execution in progress."""
        return sorted({ex.lane.spec.name for ex in self.running.values()})


def _max_counts(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {name: max(a.get(name, 0), b.get(name, 0)) for name in a.keys() | b.keys()}


def _origin_of(origins: tuple[int, ...]) -> Origin:
    if not origins:
        return None
    return origins[0] if len(origins) == 1 else origins
