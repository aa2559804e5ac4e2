"""The run loop: the only place that creates tasks.

One :class:`Run` per workflow run. It owns, for each step, a lane (a deque of pending events and
a count of active executions bounded by ``num_workers``), the set of running executions, the
``collect_events`` buffers, the waiters of ``wait_for_event``, and the event stream.

There is no central loop task: dispatching is synchronous. When an event is routed, each
target lane gets it and, if below its bound, starts an execution: the execution joins the
run's queue of ready executions (``_ready``, in start order), and a worker task takes it. A
worker runs the step (retrying per its policy), then reports back to the run in the same task:
its outputs are routed, or its error fails the run. Then, rather than ending, the worker takes
the first ready execution, so a fan-out of 10,000 events costs a few tasks, not 20,000. Every
worker takes the oldest ready execution, so executions begin in the order they started (as
with a task each, and as a run resumed from a snapshot begins them). A worker that takes one
while more are ready makes sure another worker is on its way, in case its step suspends; it
yields to the event loop between executions whenever something else is ready there (and at
least every 32 executions), so other runs, timers and stream readers keep their turn.
Workers never raise into the loop, so the user gets the step's original exception from
``await handler``. When the run ends (stop, failure, timeout, cancel) the task of every other
execution in progress is cancelled (idle workers find nothing left and end at their next
turn), and the handler is resolved only once those executions are gone.

This module holds the run's lifecycle and routing. The rest of :class:`Run` lives in one module
per concept, as functions bound in its class body (plain methods, no extra lookup):
``_lanes`` (the run's status, lanes and executions: starting and releasing one),
``_executing`` (one execution's attempts),
``_branches`` (collection streams), ``_services`` (what a Context asks of its run) and
``_run_parts`` (snapshot and restore).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Sized
from typing import TYPE_CHECKING, Any, cast

from ..data.events import (
    Event,
    StepState,
    StepStateChanged,
    StopEvent,
    UnhandledEvent,
    WorkflowCancelledEvent,
    WorkflowFailedEvent,
    WorkflowIdleEvent,
    WorkflowTimedOutEvent,
)
from ..errors import WorkflowCancelledByUser, WorkflowRuntimeError, WorkflowTimeoutError
from ..instruments.instrument import EventEmitted, InstrumentSet, RunFinished, RunStarted
from . import _boundary, _branches, _executing, _lanes, _run_parts, _services
from ._collect import CollectBuffer, CollectionStream
from ._lanes import CURRENT_EXECUTION as CURRENT_EXECUTION
from ._lanes import RUNNING, Lane, Origin, Tag
from ._lanes import Execution as Execution
from ._lanes import RunStatus as RunStatus
from ._lanes import current_execution as current_execution
from ._stream import EventStream
from ._waiters import Waiter, type_name
from .graph import INPUT_REQUIRED, STOP

if TYPE_CHECKING:
    from ._snapshot import RunSnapshot
    from .context import Context
    from .graph import Graph
    from .handler import WorkflowHandler
    from .workflow import Workflow

logger = logging.getLogger("batonflow.runtime")

_MISSING: Any = object()


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
        #: The loop's queue of ready callbacks (asyncio's own loop; ``None`` for others): a
        #: worker yields before its next execution while anything but the run's own idle
        #: workers is in it.
        self._loop_ready: Sized | None = getattr(self.loop, "_ready", None)
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
        self.status = RUNNING
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
        #: Step boundaries waiting for the store (see _boundary.wait_at_boundary), by
        #: execution id: (boundary, the listeners left to call, seconds to wait before
        #: calling the first, or the awaitable the first returned).
        self._parked: dict[int, tuple[Any, tuple[Any, ...], Any]] = {}
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
        #: The executions started and not yet taken by a worker, in start order: workers
        #: always take the first, so executions begin in the order they started, however
        #: many workers there are (see _executing.work).
        self._ready: deque[Execution] = deque()
        #: The workers that will come back for ``_ready`` without anyone waking them: new
        #: ones not yet begun and those yielding to the loop between two executions.
        self._idle: set[asyncio.Task[None]] = set()
        #: Set while a worker finishes an execution (routes its outputs, frees its slot): it
        #: takes the executions that start meanwhile itself, so they need no new worker.
        self._deferring = False
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
        #: (target lanes, kind) per event class, filled by graph.kind_of.
        self._kinds = graph.kinds
        #: Whether a step's outputs go straight to routing (no step_finished record, not
        #: stepwise): see _executing.succeeded.
        self._plain_finish = not (self._want_finished or stepwise)
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

    @property
    def held_stop(self) -> StopEvent | None:
        """The StopEvent a step returned, held while step listeners look at the run."""
        return self._held_stop

    def _on_timeout(self, timeout: float) -> None:
        self._timeout_handle = None
        if self.status is not RUNNING:
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
        if self.status is not RUNNING:
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
        if self.status is not RUNNING:
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
        if self.status is not RUNNING:
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
            task = getattr(ex, "task", None)
            if task is None:
                # Started but taken by no worker yet: it never runs, so it is released here.
                del self.running[ex.id]
            elif task is not current:
                task.cancel()
        # Idle workers (yet to begin, or yielding) find nothing left and end at their next
        # turn; not cancelled: a cancelled task's traceback would keep its frame in a cycle.
        self._ready.clear()
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
        if self.status is not RUNNING:
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
        targets, kind = self._kinds.get(type(event)) or self.graph.kind_of(type(event))
        if kind is STOP:
            if self._hold:
                self._held_stop = cast(StopEvent, event)
            else:
                self.complete(cast(StopEvent, event))
            return
        if self.waiters and self._offer_waiters(event):
            return
        if kind is INPUT_REQUIRED and not external:
            self.stream.put(event)
        if target is not None:
            targets = (target,)
        elif not targets and self.internal:
            self._unhandled(event)
        hold = self._hold or self.stepwise
        lanes = self.lanes
        for index in targets:
            lane = lanes[index] or self._lane(index)
            if not lane.plain:
                self._deliver_gathered(lane, event, origin, tag, hold)
                continue
            # _deliver, inline (the common case: a step taking one event at a time)
            if tag is not None:
                self.streams[tag[0]].live[tag[1]] += 1
            if hold or lane.active >= lane.limit or lane.pending:
                lane.pending.append(event)
                lane.meta.append((origin, None, tag))
                if not hold and lane.active < lane.limit:
                    self._start(lane)
                elif self.internal:
                    self._state_changed(lane.spec.name, StepState.PREPARING, None, event)
            else:  # nothing queued before it: it starts now
                self._begin(lane, event, origin, None, tag)

    def _deliver(self, lane: Lane, item: Event, origin: Origin, tag: Tag, hold: int | bool) -> None:
        """Start an execution of ``lane`` on ``item``, or queue it (held, or at its bound).

        :meth:`route` has this inline for a plain lane (2% fewer instructions per fan-out
        event and per chain step, counted with ``bench/hotspots.py --tool instructions``):
        a change here goes there too.
        """
        if tag is not None:
            self.streams[tag[0]].live[tag[1]] += 1
        if hold or lane.active >= lane.limit or lane.pending:
            lane.pending.append(item)
            lane.meta.append((origin, None, tag))
            if not hold and lane.active < lane.limit:
                self._start(lane)
            elif self.internal:
                self._state_changed(lane.spec.name, StepState.PREPARING, None, item)
        else:  # nothing queued before it: it starts now
            self._begin(lane, item, origin, None, tag)

    def _deliver_gathered(
        self, lane: Lane, event: Event, origin: Origin, tag: Tag, hold: int | bool
    ) -> None:
        """Deliver ``event`` to a ``list[E]`` collector, or to a step with several event
        parameters (which starts once it holds one event of each)."""
        if lane.collects:
            if tag is not None:
                self._collect_member(lane, event, tag)
            elif self.internal:
                self._unhandled(event)
            return
        assert lane.joins is not None
        joined = lane.join(event, origin)
        if joined is not None:
            self._deliver(lane, joined[0], joined[1], None, hold)

    def _kick_all(self) -> None:
        if self.stepwise or self.status is not RUNNING:
            return
        for lane in self.lanes:
            if lane is not None:
                while lane.pending and lane.active < lane.limit:
                    self._start(lane)

    def _start(self, lane: Lane) -> None:
        """Start an execution of ``lane``'s next event (see :meth:`_begin`)."""
        origin, eid, tag = lane.meta.popleft()
        self._begin(lane, lane.pending.popleft(), origin, eid, tag)

    def _add_worker(self) -> None:
        task = self.loop.create_task(self._work())
        self._idle.add(task)

    # ------------------------------------------------------------------ internal events

    def _state_changed(
        self,
        name: str,
        state: StepState,
        worker: int | None,
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
                worker_id="<enqueued>" if worker is None else str(worker),
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

    # ------------------------------------------------------------------ bound from modules
    # The rest of the run's methods live in one module per concept; binding the functions here
    # makes them plain methods (the same lookup as a ``def`` in this class body).

    # starting and releasing an execution: _lanes.py
    _begin = _lanes.begin
    _release = _lanes.release
    # executing a step: _executing.py
    _work = _executing.work
    _cancelled_outside = _executing.cancelled_outside
    _execute = _executing.execute
    _failed = _executing.failed
    _recover = _executing.recover
    _inherit_recoveries = _executing.inherit_recoveries
    _retry_delay = _executing.retry_delay
    _attempt = _executing.attempt
    _attempt_with_timeout = _executing.attempt_with_timeout
    _resources = _executing.resources
    _step_finished = _executing.step_finished
    _succeeded = _executing.succeeded
    # a step boundary waiting for the run store: _boundary.py
    _release_hold = _boundary.release_hold
    _wait_at_boundary = _boundary.wait_at_boundary
    _undeliverable = _executing.undeliverable
    _undelivered_error = _executing.undelivered_error
    # collection streams (a list fan-out and the list[E] steps collecting it): _branches.py
    _hand_out = _branches.hand_out
    _route_outputs = _branches.route_outputs
    _branch_done = _branches.branch_done
    _check_stream = _branches.check_stream
    _collect_member = _branches.collect_member
    _fire = _branches.fire
    # what a Context asks of its run (collect_events, wait_for_event, stepwise): _services.py
    collect = _services.collect
    _offer_waiters = _services.offer_waiters
    wait_for = _services.wait_for
    run_wave = _services.run_wave
    # a run taken apart for a snapshot, and put together from one: _run_parts.py
    _restore = _run_parts.restore
    stream_parts = _run_parts.stream_parts
    snapshot_parts = _run_parts.snapshot_parts
    join_parts = _run_parts.join_parts
    running_steps = _run_parts.running_steps
