"""The run loop: one :class:`Run` per workflow run; its workers are the only tasks it makes.

A run is its lifecycle (started, then completed, failed, timed out or cancelled, then
resolved), its routing (an event goes to its waiter, or to the lanes of the steps that accept
it), and these collaborators, each an object of its own module with a reference to the run:

* ``executions`` (:class:`~._lanes.Executions`): the lanes (one per step: queued events and a
  bound of ``num_workers``), the executions started from them, and the worker tasks that take
  them in start order;
* ``runner`` (:class:`~._executing.StepRunner`): one execution's attempts, retries and
  ``@catch_error`` recovery, and what the step returned (checked, traced, routed);
* ``boundaries`` (:class:`~._boundary.Boundaries`): step boundaries that hold the run while
  step listeners (the checkpointer) look at it, or wait for a store that is away;
* ``branches`` (:class:`~._branches.Branches`): collection streams, a list fan-out's branches
  and the ``list[E]`` steps they feed;
* ``waits`` (:class:`~._waiters.Waits`) and ``collecting`` (:class:`~._collect.Collecting`):
  what a Context asks of its run, ``wait_for_event`` and ``collect_events``;
* ``stream`` (:class:`~._stream.EventStream`): the events a caller reads.

Each collaborator takes its own part apart for a snapshot and puts it back (``restore``);
:meth:`Run.restore` puts a whole run back in order. When the run ends (stop, failure, timeout,
cancel) the task of every other execution in progress is cancelled (idle workers find nothing
left and end at their next turn), and the handler is resolved only once those executions are
gone; the collaborators' references back to the run are dropped then, so a finished run is
freed by reference counting.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Coroutine
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
from ._boundary import Boundaries
from ._branches import Branches
from ._collect import Collecting
from ._executing import StepRunner
from ._lanes import CURRENT_EXECUTION as CURRENT_EXECUTION
from ._lanes import RUNNING, Executions, Lane, Origin, Tag
from ._lanes import Execution as Execution
from ._lanes import RunStatus as RunStatus
from ._lanes import current_execution as current_execution
from ._stream import EventStream
from ._waiters import Waits, type_name
from .graph import INPUT_REQUIRED, STOP

if TYPE_CHECKING:
    from ._snapshot import RunSnapshot
    from .context import Context
    from .graph import Graph
    from .handler import WorkflowHandler
    from .workflow import Workflow

logger = logging.getLogger("batonflow.runtime")


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
        self.clock: Callable[[], float] = workflow._clock
        self.sleep: Callable[[float], Coroutine[Any, Any, None]] = workflow._sleep
        self.status = RUNNING
        self.error: BaseException | None = None
        self.stop_event: StopEvent | None = None
        self.stream = EventStream(self.loop)
        #: Whether internal events (StepStateChanged, WorkflowIdleEvent) are written.
        self.internal = False
        self.paused_steps: tuple[str, ...] = ()
        self.handler: WorkflowHandler | None = None
        #: Set by cancel(): (queued and in-progress parts, waiters, unread stream events).
        self.cancelled_view: tuple[Any, list[Any], list[Event]] | None = None
        self.started = time.perf_counter()
        self._timeout_handle: asyncio.TimerHandle | None = None
        self._resolved = False
        #: Whether the run took one of its workflow's ``num_concurrent_runs`` slots.
        self.counted = False
        #: While above 0, routed events are queued and nothing starts: step boundaries
        #: (``boundaries``) hold the run while its step listeners look at it.
        self.hold = 0
        #: The StopEvent a step returned, held while step listeners look at the run.
        self.held_stop: StopEvent | None = None
        #: Stepwise runs: the outputs of the current wave (see run_wave).
        self.step_outputs: list[Event] = []
        self.wave: asyncio.Future[None] | None = None
        self._want_emitted = instruments.wants("event_emitted")
        #: (target lanes, kind) per event class, filled by graph.kind_of.
        self._kinds = graph.kinds

        # The collaborators (see the module docstring), each made with what it reads of the
        # others: the runner reads the waiters, the executions the runner's bookkeeping.
        self.waits = Waits()
        self.runner = StepRunner(self, instruments)
        self.executions = Executions(self, calls, instruments.wants("step_scope"))
        self.boundaries = Boundaries()
        self.branches = Branches(self)
        self.collecting = Collecting(run_id, workflow.workflow_name, instruments)
        # What route() and the Context read at every event, from the collaborators that own
        # them (the same objects, never replaced): one attribute lookup, not two.
        self.lanes: list[Lane | None] = self.executions.lanes
        self.running: dict[int, Execution] = self.executions.running
        self.waiters = self.waits.waiters
        self.streams = self.branches.streams
        self._handed = self.branches.handed
        #: (step name, input event class, output event classes) per completed execution.
        self.trace = self.runner.trace

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
                    self.workflow,
                    self.ctx,
                ),
            )
        if snapshot is not None:
            self.restore(snapshot)
        elif start_event is not None:
            self.route(start_event, None, None, external=True)

    def _on_timeout(self, timeout: float) -> None:
        self._timeout_handle = None
        if self.status is not RUNNING:
            return
        active = self.executions.running_steps()
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
            self.executions.snapshot_parts(),
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
                    elapsed_seconds=self.clock() - ex.first_started if ex is not None else None,
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
        self.executions.ready.clear()
        # Steps waiting for an event when the run ends: cancelled then, the run is paused.
        self.paused_steps = tuple(dict.fromkeys(w.step for w in self.waiters.values()))
        for waiter in self.waiters.values():
            if waiter.future is not None and not waiter.future.done():
                waiter.future.cancel()
        if self.wave is not None and not self.wave.done():
            self.wave.set_result(None)
        if not self.running:
            self.resolve()

    def resolve(self) -> None:
        """The run is over and nothing of it runs: tell the instruments, the workflow and the
        handler, and drop the references that make cycles."""
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
        # Nor do the collaborators that keep one (what they hold stays readable: snapshots).
        del self.executions.run, self.branches.run
        if handler is None or handler.done():
            return
        if self.status is RunStatus.COMPLETED:
            stop = self.stop_event
            assert stop is not None
            handler.set_result(stop.result if type(stop) is StopEvent else stop)
        else:
            handler.set_exception(self.error or WorkflowRuntimeError("The run ended."))

    def restore(self, snap: RunSnapshot) -> None:
        """Put the run back as ``snap`` saw it: each collaborator restores its part, then the
        queued executions start (in-progress ones first, with their ids)."""
        self.executions.next_id = snap.next_execution_id
        self.waits.restore(snap)
        self.collecting.restore(snap)
        for ev in snap.stream_pending:
            self.stream.put(ev)
        self.stream.position = snap.stream_position
        if isinstance(snap.stop_event, StopEvent):
            self.complete(snap.stop_event)
            return
        self.branches.restore(snap)
        self.hold += 1
        self.executions.restore(snap)
        self.hold -= 1
        for sid in list(self.streams):
            self.branches.check(sid)
        self.executions.kick_all()

    def cancelled_outside(self, ex: Execution, cancelled: BaseException | None) -> None:
        """The task of ``ex`` was cancelled: by someone else than the run, fail the run."""
        if self.status is RUNNING:
            # Not cancelled by the run (it only cancels steps once it has ended): the loop is
            # shutting down or someone cancelled the task directly.
            error = WorkflowRuntimeError(
                f"Step {ex.lane.spec.name} was cancelled from outside the run; use "
                "handler.cancel_run() to stop a run."
            )
            if cancelled is not None:
                error = error.with_traceback(cancelled.__traceback__)
            self.fail(error, ex=ex)

    async def run_wave(self) -> list[Event] | None:
        """Stepwise runs: run every pending execution once (bounded per step); return what
        they produced."""
        while True:
            if self.status is not RunStatus.RUNNING:
                outputs, self.step_outputs = self.step_outputs, []
                return outputs or None
            started = False
            for lane in self.lanes:
                if lane is not None:
                    while lane.pending and lane.active < lane.limit:
                        self.executions.start(lane)
                        started = True
            if not started and not self.running:
                outputs, self.step_outputs = self.step_outputs, []
                return outputs
            if self.running:
                self.wave = self.loop.create_future()
                await self.wave
                self.wave = None
            if self.step_outputs:
                outputs, self.step_outputs = self.step_outputs, []
                return outputs

    # ------------------------------------------------------------------ routing

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
                self.branches.done(handed[1])
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
                    None if target is None else self.graph.order[target].name,
                ),
            )
        targets, kind = self._kinds.get(type(event)) or self.graph.kind_of(type(event))
        if kind is STOP:
            if self.hold:
                self.held_stop = cast(StopEvent, event)
            else:
                self.complete(cast(StopEvent, event))
            return
        if self.waiters and self.waits.offer(event):
            return
        if kind is INPUT_REQUIRED and not external:
            self.stream.put(event)
        if target is not None:
            targets = (target,)
        elif not targets and self.internal:
            self.unhandled(event)
        hold = self.hold or self.stepwise
        lanes = self.lanes
        for index in targets:
            lane = lanes[index] or self.executions.lane(index)
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
                    self.executions.start(lane)
                elif self.internal:
                    self.state_changed(lane.spec.name, StepState.PREPARING, None, event)
            else:  # nothing queued before it: it starts now
                self.executions.begin(lane, event, origin, None, tag)

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
                self.executions.start(lane)
            elif self.internal:
                self.state_changed(lane.spec.name, StepState.PREPARING, None, item)
        else:  # nothing queued before it: it starts now
            self.executions.begin(lane, item, origin, None, tag)

    def _deliver_gathered(
        self, lane: Lane, event: Event, origin: Origin, tag: Tag, hold: int | bool
    ) -> None:
        """Deliver ``event`` to a ``list[E]`` collector, or to a step with several event
        parameters (which starts once it holds one event of each)."""
        if lane.collects:
            if tag is not None:
                self.branches.collect_member(lane, event, tag)
            elif self.internal:
                self.unhandled(event)
            return
        assert lane.joins is not None
        joined = lane.join(event, origin)
        if joined is not None:
            self._deliver(lane, joined[0], joined[1], None, hold)

    # ------------------------------------------------------------------ internal events

    def state_changed(
        self,
        name: str,
        state: StepState,
        worker: int | None,
        event: Event,
        output: str | None = None,
    ) -> None:
        """Write a StepStateChanged for step ``name`` (internal events only)."""
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

    def unhandled(self, event: Event) -> None:
        """Write an UnhandledEvent: ``event`` went to no step (internal events only)."""
        self.stream.has_internal = True
        waiting = self.waits.waiting
        idle = bool(waiting) and len(self.running) == waiting
        self.stream.put(
            UnhandledEvent(
                event_type=type(event).__name__,
                qualified_name=type_name(type(event)),
                idle=idle and not any(lane is not None and lane.pending for lane in self.lanes),
            )
        )

    def maybe_idle(self) -> None:
        """Write a WorkflowIdleEvent when every execution left is parked in wait_for_event
        and nothing is queued (internal events only)."""
        waiting = self.waits.waiting
        if not waiting or len(self.running) != waiting:
            return
        if any(lane is not None and lane.pending for lane in self.lanes):
            return
        self.stream.has_internal = True
        self.stream.put(WorkflowIdleEvent())
