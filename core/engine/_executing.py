"""Running one execution of a step: its attempts, retries, recovery, and what it returned.

These functions are methods of :class:`~batonflow.core.engine._runtime.Run` (bound in its class body).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..data.events import Event, StepFailedEvent, StepState
from ..errors import (
    LeaseLostError,
    StepTimeoutError,
    StoreUnreachableError,
    WorkflowRuntimeError,
)
from ..instruments.instrument import StepFinished, StepStarted
from ..retrying.retry import RetryInfo, ask_policy, retry_seed
from ._calls import call_in_scopes, run_sync
from ._lanes import CURRENT_EXECUTION, RUNNING, Execution, TraceEntry
from .graph import CALLER_EVENTS
from .hooks import StepBoundary
from .step import ParamKind, StepSpec

if TYPE_CHECKING:
    from ._runtime import Run


#: Executions a worker runs back to back before it yields to the loop anyway (so timers
#: and I/O are polled during a long run of steps that never suspend).
STREAK = 32


async def work(self: Run) -> None:
    """A worker task: run the run's ready executions, oldest first, while there are any.

    Every worker takes the first execution of ``self._ready``, so executions begin in the
    order they started, as with a task each, and a run resumed from a snapshot (which queues
    them in that order) begins them in the same order. A worker that takes one while more
    are ready makes sure another worker is on its way (it may suspend in its step); it runs
    the next one without a loop turn while nothing but the run's own idle workers is ready
    in the loop, and yields at least every ``STREAK`` executions.

    The common execution (a direct lane, see Lane.direct, with no step listener, instrument
    record or internal events wanted) runs its first attempt here rather than in
    :func:`execute`: one coroutine less per execution. Its failures go to :func:`failed`,
    as :func:`execute`'s do.
    """
    task = asyncio.current_task()
    assert task is not None
    ex: Execution | None = None
    try:
        idle = self._idle
        idle.discard(task)
        ready = self._ready
        loop_ready = self._loop_ready
        clock = self._clock
        workflow = self.workflow
        want_record = self._want_record  # fixed for the run, as its instruments
        streak = 0
        while ready:
            ex = ready.popleft()
            if ready and not idle:
                self._add_worker()
            ex.task = task
            lane = ex.lane
            try:
                if lane.direct and not (want_record or self.internal or workflow._listeners):
                    cell: list[Execution | None] = [ex]
                    CURRENT_EXECUTION.set(cell)
                    try:
                        ex.first_started = clock()
                        ex.attempt = 1
                        try:
                            result = await lane.call(self.ctx, ex.event, None)
                        except asyncio.CancelledError as cancelled:
                            self._cancelled_outside(ex, cancelled)
                            raise
                        except (KeyboardInterrupt, SystemExit) as error:
                            self.fail(error, ex=ex)
                            raise
                        except Exception as error:
                            if await self._failed(ex, error, 0.0):
                                await self._execute(ex, True)  # the attempts left
                        else:
                            if self.status is RUNNING:
                                self._deferring = True
                                self._succeeded(ex, result, 0.0)
                    finally:
                        cell[0] = None
                else:
                    await self._execute(ex)
            except BaseException:
                self._deferring = False
                self._release(ex)
                raise
            self._deferring = True  # what _release starts, this worker takes
            self._release(ex)
            self._deferring = False
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
            # Let the loop run what is ready (other runs, timers, stream readers) first. If the
            # run ends meanwhile, the queue is empty when this worker comes back.
            idle.add(task)
            try:
                await asyncio.sleep(0)
            except asyncio.CancelledError:
                if self.status is RUNNING and ready:  # cancelled from outside the run
                    self._cancelled_outside(ready[0], None)
                raise
            finally:
                idle.discard(task)
    except Exception as error:
        # Not a step's error (those are handled above) but the engine's own: end the run
        # with it, rather than leave the run waiting for a worker that is gone.
        engine_fault(self, ex, error)


def engine_fault(self: Run, culprit: Execution | None, error: Exception) -> None:
    """A worker died of an error in batonflow itself, ``culprit`` being the execution it took
    last: fail the run with the error, and resolve the run once nothing else runs."""
    where = f" while running step {culprit.lane.spec.name!r}" if culprit is not None else ""
    failure = WorkflowRuntimeError(
        f"batonflow failed inside its engine{where} ({type(error).__name__}: {error}), so the "
        "run was ended. This is a bug in batonflow, not in your workflow: please report it "
        "with this traceback."
    )
    failure.__cause__ = error
    self.fail(failure, ex=culprit)
    if culprit is not None and self.running.get(culprit.id) is culprit:
        # Not released (the fault was in releasing it): as far as the run's end needs.
        del self.running[culprit.id]
        culprit.task = None
    if self.status is not RUNNING and not self.running:
        self._resolve()


def cancelled_outside(self: Run, ex: Execution, cancelled: BaseException | None) -> None:
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


async def execute(self: Run, ex: Execution, retrying: bool = False) -> None:
    """Run one execution (all its attempts, or those after the first when ``retrying``);
    the caller releases it."""
    cell: list[Execution | None] = [ex]
    CURRENT_EXECUTION.set(cell)
    lane = ex.lane
    spec = lane.spec
    if self.internal and not retrying:
        self._state_changed(spec.name, StepState.RUNNING, ex.worker, ex.event)
    try:
        if not retrying:
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
                    ex.worker,
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
                if await self._failed(ex, error, began):
                    continue
                return
            if self.status is not RUNNING:
                return
            # Executions the outputs start are taken by this worker (see _start).
            self._deferring = True
            self._succeeded(ex, result, began)
            if self._parked and ex.id in self._parked:
                await self._wait_at_boundary(ex)
            return
    finally:
        cell[0] = None


async def failed(self: Run, ex: Execution, error: Exception, began: float) -> bool:
    """An attempt of ``ex`` raised ``error``: retry (after the policy's delay; returns
    ``True``), recover with ``@catch_error``, or fail the run (``False``)."""
    if self.status is not RUNNING:
        return False
    self._deferring = True  # a recovery's execution: this worker takes it
    if isinstance(error, LeaseLostError):
        # Another process runs the run now: no retry, no recovery, nothing more here.
        if self._want_finished:
            self._step_finished(ex, (), error, began)
        self.fail(error, ex=ex)
        return False
    try:
        delay = self._retry_delay(ex, error)
    except WorkflowRuntimeError as broken:
        if self._want_finished:
            self._step_finished(ex, (), error, began)
        self.fail(broken, ex=ex)
        return False
    if self._want_finished:
        self._step_finished(ex, (), error, began, delay is not None)
    if delay is None:
        if not self._recover(ex, error):
            self.fail(error, ex=ex)
        return False
    ex.retry_info = RetryInfo(
        ex.attempt,
        self._clock() - ex.first_started,
        error,
        datetime.now(UTC),
    )
    self._deferring = False
    await self._sleep(delay)
    return self.status is RUNNING


def recover(self: Run, ex: Execution, error: Exception) -> bool:
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


def inherit_recoveries(self: Run, ex: Execution) -> None:
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


def retry_delay(self: Run, ex: Execution, error: Exception) -> float | None:
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


async def attempt(self: Run, ex: Execution, record: StepStarted | None) -> Any:
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


async def attempt_with_timeout(
    self: Run, ex: Execution, record: StepStarted | None, seconds: float
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


async def resources(self: Run, spec: StepSpec) -> dict[str, Any]:
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


def step_finished(
    self: Run,
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
            ex.worker,
        ),
    )


def succeeded(self: Run, ex: Execution, result: Any, began: float) -> None:
    if self._plain_finish and not self.internal and not self.workflow._listeners:
        # The common cases (one event out or none, nobody told about it but the stream):
        # what the rest of this function does for them, in short. Only an event_emitted
        # instrument could look at the run's executions in progress meanwhile; without
        # one, ex leaves them in _release, right after.
        if self._want_emitted:
            del self.running[ex.id]
        lane = ex.lane
        kind = type(result)
        if kind is lane.trace_out and type(ex.event) is lane.trace_in:
            # The same classes in and out as the lane's last execution: its trace entry,
            # and an output class its annotation declares (or None), as checked then.
            self.trace.append(lane.trace_entry)
            if result is not None:
                self.route(result, ex.id, None, emitter=ex, tag=ex.tag)
            return
        declared = result is None or kind in lane.spec.emitted
        if declared or (
            isinstance(result, Event)
            and (not self._check_outputs or not self._undeliverable(result))
        ):
            entry: TraceEntry = (lane.spec.name, type(ex.event), () if result is None else (kind,))
            entry = self._trace_entries.setdefault(entry, entry)
            self.trace.append(entry)
            if declared or not self._check_outputs:
                lane.trace_in, lane.trace_out, lane.trace_entry = type(ex.event), kind, entry
            if result is not None:
                self.route(result, ex.id, None, emitter=ex, tag=ex.tag)
            return
    # The execution is over: it is no longer in progress for snapshots (a step listener
    # may take one). Already out when the common case above let it through.
    self.running.pop(ex.id, None)
    fan_out = False
    if isinstance(result, Event):
        outputs: tuple[Event, ...] = (result,)
        kinds: tuple[type[Event], ...] = (type(result),)
    elif result is None:
        outputs = ()
        kinds = ()
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
            ex.lane.spec.name, StepState.NOT_RUNNING, ex.worker, ex.event, ex.output_name or None
        )
    entry = (ex.lane.spec.name, type(ex.event), kinds)
    # Repeated entries share one tuple: a long run keeps 8 bytes per step, not ~130.
    self.trace.append(self._trace_entries.setdefault(entry, entry))
    if self.stepwise:
        self._hand_out(ex, outputs, fan_out)
        return
    listeners = self.workflow._listeners
    if not listeners:
        if fan_out:
            self._route_outputs(ex, outputs, fan_out)
        else:
            for ev in outputs:
                self.route(ev, ex.id, None, emitter=ex, tag=ex.tag)
        return
    # Queue the outputs without starting anything, let the listeners look at a quiet run,
    # then dispatch.
    self._hold += 1
    called = 0
    boundary: StepBoundary | None = None
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
            getattr(ex, "first_started_wall", 0.0),
            time.time(),
        )
        for listener in listeners:
            pending = listener(boundary)
            if pending is not None:
                # Its write is made off the loop: the run stays held while the worker waits
                # for it (execute awaits wait_at_boundary), the loop serves the other runs.
                self._parked[ex.id] = (boundary, listeners[called:], pending)
                return
            called += 1
    except StoreUnreachableError as error:
        if error.retry_after is None or boundary is None:
            self._hold -= 1
            self.fail(error, ex=ex)
            return
        # The store's server is away (a restart): the run stays held, its outputs queued,
        # and the worker waits (execute awaits wait_at_boundary) to call the listener again.
        self._parked[ex.id] = (boundary, listeners[called:], error.retry_after)
        return
    except Exception as error:
        self._hold -= 1
        self.fail(error, ex=ex)
        return
    self._release_hold()


def undeliverable(self: Run, event: Event) -> bool:
    if isinstance(event, CALLER_EVENTS) or self.graph.targets(type(event)):
        return False
    return not any(w.wants_type(event) for w in self.waiters.values())


def undelivered_error(self: Run, ex: Execution, event: Event) -> WorkflowRuntimeError:
    spec = ex.lane.spec
    kind = type(event).__name__
    declared = ", ".join(e.__name__ for e in spec.emitted) or "None"
    return WorkflowRuntimeError(
        f"Step {spec.name} returned {kind}, but no step accepts {kind} and no step is "
        f"waiting for it, so the run could never go on (its return annotation says: "
        f"{declared}). Return one of the annotated events, or add a step that takes "
        f"`ev: {kind}`."
    )


def _max_counts(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {name: max(a.get(name, 0), b.get(name, 0)) for name in a.keys() | b.keys()}
