"""A run's lanes and executions: the records (status, one lane per step, one execution per
step run) and :class:`Executions`, which starts them, hands them to worker tasks and frees them.

There is no central loop task: when the run routes an event to a lane below its bound,
:meth:`Executions.begin` starts an execution, which joins the queue of ready executions
(``ready``, in start order), and a worker task (:meth:`Executions.work`) takes it. The worker
runs it (the run's :class:`~._executing.StepRunner` runs its attempts and routes what it
returned), releases it (:meth:`Executions.release` frees its slot and starts what may start),
and rather than ending takes the first ready execution: a fan-out of 10,000 events costs a few
tasks, not 20,000. Every worker takes the oldest ready execution, so executions begin in the
order they started (as with a task each, and as a run resumed from a snapshot begins them). A
worker that takes one while more are ready makes sure another worker is on its way, in case its
step suspends; it yields to the event loop between executions whenever something else is ready
there (and at least every ``STREAK`` executions), so other runs, timers and stream readers keep
their turn. Workers never raise into the loop, so the user gets the step's original exception.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sized
from contextvars import ContextVar
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..data.events import Event, JoinedEvents, StepState
from ..errors import WorkflowRuntimeError
from ..retrying.retry import RetryInfo
from .step import StepSpec

if TYPE_CHECKING:
    from ._runtime import Run
    from ._snapshot import RunSnapshot


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

    Made by :meth:`Executions.begin` only, which sets its fields itself: a class call running an
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
    #: With internal events: the first output's class, "" for none (set by StepRunner.succeeded).
    output_name: str

    @property
    def worker(self) -> int:
        """The lane's worker slot this execution took, 0 to ``num_workers - 1``."""
        return self.slot.bit_length() - 1


_new_execution = object.__new__


#: Executions a worker runs back to back before it yields to the loop anyway (so timers
#: and I/O are polled during a long run of steps that never suspend).
STREAK = 32


class Executions:
    """The lanes of one run and their executions: started, queued for workers, released.

    Owns the lanes (made on first use), the executions in progress (``running``, by id), the
    queue of started executions no worker has taken yet (``ready``) and the workers that will
    come back to it without being woken (``idle``).
    """

    __slots__ = (
        "_calls",
        "_loop_ready",
        "_order",
        "_scoped",
        "deferring",
        "idle",
        "lanes",
        "next_id",
        "ready",
        "recoveries",
        "recovering",
        "run",
        "running",
    )

    def __init__(self, run: Run, calls: list[Callable[..., Any]], scoped: bool) -> None:
        #: The run (its lifecycle and routing); the reference is dropped when the run ends.
        self.run = run
        self._order = run.graph.order
        self._calls = calls
        self._scoped = scoped
        #: The loop's queue of ready callbacks (asyncio's own loop; ``None`` for others): a
        #: worker yields before its next execution while anything but the run's own idle
        #: workers is in it.
        self._loop_ready: Sized | None = getattr(run.loop, "_ready", None)
        self.lanes: list[Lane | None] = [None] * len(self._order)
        self.running: dict[int, Execution] = {}
        self.next_id = 1
        #: The executions started and not yet taken by a worker, in start order: workers
        #: always take the first, so executions begin in the order they started, however
        #: many workers there are (see :meth:`work`).
        self.ready: deque[Execution] = deque()
        #: The workers that will come back for ``ready`` without anyone waking them: new
        #: ones not yet begun and those yielding to the loop between two executions.
        self.idle: set[asyncio.Task[None]] = set()
        #: Set while a worker finishes an execution (routes its outputs, frees its slot): it
        #: takes the executions that start meanwhile itself, so they need no new worker.
        self.deferring = False
        # The step runner's @catch_error bookkeeping, read here at every start.
        self.recoveries = run.runner.recoveries
        self.recovering = run.runner.recovering

    def lane(self, index: int) -> Lane:
        """The lane of step ``index`` (made on first use)."""
        lane = self.lanes[index]
        if lane is None:
            lane = self.lanes[index] = Lane(
                index, self._order[index], self._calls[index], self._scoped
            )
        return lane

    def begin(self, lane: Lane, event: Event, origin: Origin, eid: int | None, tag: Tag) -> None:
        """Start an execution of ``lane`` on ``event``: queue it for the run's workers.

        A worker finishing an execution (``deferring``) takes it itself; otherwise, when no
        worker is on its way back to the queue, a new one is created for it.
        """
        if eid is None:
            eid = self.next_id
            self.next_id = eid + 1
        ex: Execution = _new_execution(Execution)
        ex.run = self.run
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
            self.run.runner.inherit_recoveries(ex)
        lane.active += 1
        self.running[eid] = ex
        self.ready.append(ex)
        if not self.deferring and not self.idle:
            self.add_worker()

    def start(self, lane: Lane) -> None:
        """Start an execution of ``lane``'s next queued event (see :meth:`begin`)."""
        origin, eid, tag = lane.meta.popleft()
        self.begin(lane, lane.pending.popleft(), origin, eid, tag)

    def kick_all(self) -> None:
        """Start what every lane's bound lets start (after the run was held)."""
        run = self.run
        if run.stepwise or run.status is not RUNNING:
            return
        for lane in self.lanes:
            if lane is not None:
                while lane.pending and lane.active < lane.limit:
                    self.start(lane)

    def add_worker(self) -> None:
        """Create one more worker task (the only tasks a run creates)."""
        task = self.run.loop.create_task(self.work())
        self.idle.add(task)

    def release(self, ex: Execution) -> None:
        """The execution ``ex`` is over: free its slot, start what may start."""
        self.running.pop(ex.id, None)
        # The task is done with ex: break Execution -> Task -> its contextvars -> Execution,
        # so finished executions are freed by refcount rather than by full GC passes.
        ex.task = None
        lane = ex.lane
        lane.active -= 1
        lane.busy &= ~ex.slot
        # Not self.run: the run may have ended (and dropped it) before its last release.
        run = ex.run
        if ex.tag is not None and run.status is RUNNING:
            run.branches.done(ex.tag)
        if run.status is RUNNING:
            if run.internal:
                if not hasattr(ex, "output_name"):  # not reported by succeeded (it failed)
                    run.state_changed(lane.spec.name, StepState.NOT_RUNNING, ex.worker, ex.event)
                run.maybe_idle()
            if run.stepwise:
                wave = run.wave
                if not self.running and wave is not None and not wave.done():
                    wave.set_result(None)
            elif not run.hold:
                pending = lane.pending
                while pending and lane.active < lane.limit:
                    origin, eid, tag = lane.meta.popleft()  # start, inline
                    self.begin(lane, pending.popleft(), origin, eid, tag)
        if run.status is not RUNNING and not self.running:
            run.resolve()

    async def work(self) -> None:
        """A worker task: run the ready executions, oldest first, while there are any.

        Every worker takes the first execution of ``ready``, so executions begin in the
        order they started, as with a task each, and a run resumed from a snapshot (which
        queues them in that order) begins them in the same order. A worker that takes one
        while more are ready makes sure another worker is on its way (it may suspend in its
        step); it runs the next one without a loop turn while nothing but the run's own idle
        workers is ready in the loop, and yields at least every ``STREAK`` executions.

        The common execution (a direct lane, see Lane.direct, with no step listener,
        instrument record or internal events wanted) runs its first attempt here rather than
        in :meth:`StepRunner.execute`: one coroutine less per execution. Its failures go to
        :meth:`StepRunner.failed`, as ``execute``'s do.
        """
        task = asyncio.current_task()
        assert task is not None
        idle = self.idle
        idle.discard(task)
        ready = self.ready
        if not ready:
            return  # the run ended before this worker began (it may be gone)
        ex: Execution | None = None
        run = self.run
        try:
            runner = run.runner
            loop_ready = self._loop_ready
            clock = run.clock
            workflow = run.workflow
            want_record = runner._want_record  # fixed for the run, as its instruments
            streak = 0
            while ready:
                ex = ready.popleft()
                if ready and not idle:
                    self.add_worker()
                ex.task = task
                lane = ex.lane
                try:
                    if lane.direct and not (want_record or run.internal or workflow._listeners):
                        cell: list[Execution | None] = [ex]
                        CURRENT_EXECUTION.set(cell)
                        try:
                            ex.first_started = clock()
                            ex.attempt = 1
                            try:
                                result = await lane.call(run.ctx, ex.event, None)
                            except asyncio.CancelledError as cancelled:
                                run.cancelled_outside(ex, cancelled)
                                raise
                            except (KeyboardInterrupt, SystemExit) as error:
                                run.fail(error, ex=ex)
                                raise
                            except Exception as error:
                                if await runner.failed(ex, error, 0.0):
                                    await runner.execute(ex, True)  # the attempts left
                            else:
                                if run.status is RUNNING:
                                    self.deferring = True
                                    runner.succeeded(ex, result, 0.0)
                        finally:
                            cell[0] = None
                    else:
                        await runner.execute(ex)
                except BaseException:
                    self.deferring = False
                    self.release(ex)
                    raise
                self.deferring = True  # what release starts, this worker takes
                self.release(ex)
                self.deferring = False
                if not ready:
                    return
                streak += 1
                if (
                    loop_ready is not None
                    and streak < STREAK
                    and (not loop_ready or len(loop_ready) <= len(idle))
                ):
                    # Nothing else is ready in the loop (the run's idle workers only take what
                    # this one would): a yield would come straight back here.
                    continue
                streak = 0
                # Let the loop run what is ready (other runs, timers, stream readers) first. If
                # the run ends meanwhile, the queue is empty when this worker comes back.
                idle.add(task)
                try:
                    await asyncio.sleep(0)
                except asyncio.CancelledError:
                    if run.status is RUNNING and ready:  # cancelled from outside the run
                        run.cancelled_outside(ready[0], None)
                    raise
                finally:
                    idle.discard(task)
        except Exception as error:
            # Not a step's error (those are handled above) but the engine's own: end the run
            # with it, rather than leave the run waiting for a worker that is gone.
            self.engine_fault(run, ex, error)

    def engine_fault(self, run: Run, culprit: Execution | None, error: Exception) -> None:
        """A worker died of an error in batonflow itself, ``culprit`` being the execution it
        took last: fail the run with the error, and resolve the run once nothing else runs."""
        where = f" while running step {culprit.lane.spec.name!r}" if culprit is not None else ""
        failure = WorkflowRuntimeError(
            f"batonflow failed inside its engine{where} ({type(error).__name__}: {error}), so "
            "the run was ended. This is a bug in batonflow, not in your workflow: please "
            "report it with this traceback."
        )
        failure.__cause__ = error
        run.fail(failure, ex=culprit)
        if culprit is not None and self.running.get(culprit.id) is culprit:
            # Not released (the fault was in releasing it): as far as the run's end needs.
            del self.running[culprit.id]
            culprit.task = None
        if run.status is not RUNNING and not self.running:
            run.resolve()

    # ------------------------------------------------------------------ snapshot parts
    # Read after the run ended too (ctx.to_dict() of a finished run): no use of self.run.

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

    def restore(self, snap: RunSnapshot) -> None:
        """Queue a snapshot's joins, in-progress executions (first, with their ids, so default
        waiter ids match) and queued events (in their original order); start none."""
        graph = self.run.graph
        for step_name, param, events in snap.joins:
            lane = self.lane(graph.order.index(graph.steps[step_name]))
            if lane.joins is not None and param in lane.joins:
                lane.joins[param].extend((e, None) for e in events)
        streams = self.run.branches.streams
        for item in (*snap.in_progress, *snap.queued):
            lane = self.lane(graph.order.index(graph.steps[item.step]))
            tag = item.tag
            lane.pending.append(item.event)
            lane.meta.append((item.origin, item.execution_id, tag))
            if tag is not None and tag[0] in streams:
                streams[tag[0]].live[tag[1]] += 1


def _origin_of(origins: tuple[int, ...]) -> Origin:
    if not origins:
        return None
    return origins[0] if len(origins) == 1 else origins
