"""Running one execution of a step: its attempts, retries, recovery, and what it returned.

One :class:`StepRunner` per run. A worker (:meth:`~._lanes.Executions.work`) hands it an
execution; it runs the step's attempts under its retry policy and step timeout, tells the
instruments, hands a failure to a ``@catch_error`` step or fails the run, checks what the step
returned, records the run's trace, and routes the outputs (through the run, or through the
collection streams for a list fan-out), calling the step listeners at the step's boundary.
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
from ..instruments.instrument import InstrumentSet, StepFinished, StepStarted
from ..retrying.retry import RetryInfo, ask_policy, retry_seed
from ._calls import call_in_scopes, run_sync
from ._lanes import CURRENT_EXECUTION, RUNNING, Execution, TraceEntry
from .graph import CALLER_EVENTS
from .hooks import StepBoundary
from .step import ParamKind, StepSpec

if TYPE_CHECKING:
    from ._runtime import Run


class StepRunner:
    """Runs the executions of one run's steps: attempts, retries, recovery, outputs."""

    __slots__ = (
        "_check_outputs",
        "_plain_finish",
        "_trace_entries",
        "_want_emitted",
        "_want_finished",
        "_want_record",
        "_want_scope",
        "_want_started",
        "graph",
        "instruments",
        "recoveries",
        "recovering",
        "trace",
        "waiters",
        "workflow",
    )

    def __init__(self, run: Run, instruments: InstrumentSet) -> None:
        # No reference to the run (it would make a cycle): an execution has one (``ex.run``).
        self.workflow = run.workflow
        self.graph = run.graph
        self.instruments = instruments
        #: @catch_error recoveries used on each execution's lineage (the events that led to
        #: it), by handler name; only executions downstream of a recovery have an entry. Kept
        #: for the run's life: executions started later look their emitters' entries up.
        self.recoveries: dict[int, dict[str, int]] = {}
        #: The counts a routed StepFailedEvent carries to its handler's execution, by id(event)
        #: (the event is kept too, so its id cannot be reused while the entry exists).
        self.recovering: dict[int, tuple[Event, dict[str, int]]] = {}
        #: (step name, input event class, output event classes) per completed execution.
        self.trace: list[TraceEntry] = []
        self._trace_entries: dict[TraceEntry, TraceEntry] = {}
        self._want_started = instruments.wants("step_started")
        self._want_finished = instruments.wants("step_finished")
        self._want_scope = instruments.wants("step_scope")
        self._want_record = self._want_started or self._want_finished or self._want_scope
        self._want_emitted = instruments.wants("event_emitted")
        #: Whether a step's outputs go straight to routing (no step_finished record, not
        #: stepwise): see succeeded.
        self._plain_finish = not (self._want_finished or run.stepwise)
        workflow = run.workflow
        #: The run's waiters (for the output check: an event a step waits for is delivered).
        self.waiters = run.waits.waiters
        #: Whether a step returning an event nobody takes fails the run (unless opted out).
        self._check_outputs = not (
            workflow._disable_validation or "terminal_event" in workflow._skip_graph_checks
        )

    async def execute(self, ex: Execution, retrying: bool = False) -> None:
        """Run one execution (all its attempts, or those after the first when ``retrying``);
        the caller releases it."""
        run = ex.run
        cell: list[Execution | None] = [ex]
        CURRENT_EXECUTION.set(cell)
        lane = ex.lane
        spec = lane.spec
        if run.internal and not retrying:
            run.state_changed(spec.name, StepState.RUNNING, ex.worker, ex.event)
        try:
            if not retrying:
                ex.first_started = run.clock()
                if run.workflow._listeners:
                    ex.first_started_wall = time.time()
            while True:
                ex.attempt += 1
                record: StepStarted | None = None
                if self._want_record:
                    record = StepStarted(
                        run.run_id,
                        run.workflow.workflow_name,
                        spec.name,
                        ex.id,
                        ex.attempt,
                        ex.event,
                        ex.origins,
                        run.meta,
                        ex.worker,
                    )
                    if self._want_started:
                        self.instruments.call("step_started", record)
                began = time.perf_counter() if self._want_finished else 0.0
                try:
                    if lane.direct:
                        result = await lane.call(run.ctx, ex.event, None)
                    elif spec.timeout is None:
                        result = await self.attempt(ex, record)
                    else:
                        result = await self.attempt_with_timeout(ex, record, spec.timeout)
                except asyncio.CancelledError as cancelled:
                    run.cancelled_outside(ex, cancelled)
                    raise
                except (KeyboardInterrupt, SystemExit) as error:
                    run.fail(error, ex=ex)
                    raise
                except Exception as error:
                    if await self.failed(ex, error, began):
                        continue
                    return
                if run.status is not RUNNING:
                    return
                # Executions the outputs start are taken by this worker (see Executions.begin).
                run.executions.deferring = True
                self.succeeded(ex, result, began)
                if run.boundaries.parked and ex.id in run.boundaries.parked:
                    await run.boundaries.wait_at(ex)
                return
        finally:
            cell[0] = None

    async def failed(self, ex: Execution, error: Exception, began: float) -> bool:
        """An attempt of ``ex`` raised ``error``: retry (after the policy's delay; returns
        ``True``), recover with ``@catch_error``, or fail the run (``False``)."""
        run = ex.run
        if run.status is not RUNNING:
            return False
        run.executions.deferring = True  # a recovery's execution: this worker takes it
        if isinstance(error, LeaseLostError):
            # Another process runs the run now: no retry, no recovery, nothing more here.
            if self._want_finished:
                self.step_finished(ex, (), error, began)
            run.fail(error, ex=ex)
            return False
        try:
            delay = self.retry_delay(ex, error)
        except WorkflowRuntimeError as broken:
            if self._want_finished:
                self.step_finished(ex, (), error, began)
            run.fail(broken, ex=ex)
            return False
        if self._want_finished:
            self.step_finished(ex, (), error, began, delay is not None)
        if delay is None:
            if not self.recover(ex, error):
                run.fail(error, ex=ex)
            return False
        ex.retry_info = RetryInfo(
            ex.attempt,
            run.clock() - ex.first_started,
            error,
            datetime.now(UTC),
        )
        run.executions.deferring = False
        await run.sleep(delay)
        return run.status is RUNNING

    def recover(self, ex: Execution, error: Exception) -> bool:
        """Hand a failed execution to its ``@catch_error`` step, if it has one left to give.

        ``max_recoveries`` is a budget per lineage, as in LlamaIndex: a failure downstream of
        what a recovery produced counts against the same handler's budget, while independent
        branches (fan-out items, say) each have their own.
        """
        run = ex.run
        spec = ex.lane.spec
        if spec.error_handler:
            return False  # a handler that raises fails the run
        index = run.graph.error_handler_for(spec.name)
        if index is None:
            return False
        handler = run.graph.order[index]
        counts = self.recoveries.get(ex.id, {})
        used = counts.get(handler.name, 0)
        if used >= handler.max_recoveries:
            return False
        failed = StepFailedEvent(
            step_name=spec.name,
            input_event=ex.event,
            exception=error,
            attempts=ex.attempt,
            elapsed_seconds=run.clock() - ex.first_started,
            failed_at=datetime.now(UTC),
        )
        self.recovering[id(failed)] = (failed, {**counts, handler.name: used + 1})
        run.route(failed, ex.id, index, emitter=ex)
        return True

    def inherit_recoveries(self, ex: Execution) -> None:
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

    def retry_delay(self, ex: Execution, error: Exception) -> float | None:
        """Seconds before the next attempt, or None to give up.

        Raises:
            WorkflowRuntimeError: The policy raised, or returned something that is not a
                number of seconds (``>= 0``) or ``None``.
        """
        run = ex.run
        policy = ex.lane.spec.retry_policy
        if policy is None:
            return None
        name = ex.lane.spec.name
        try:
            seed = retry_seed(run.run_id, name, ex.attempt)
            delay = ask_policy(policy, run.clock() - ex.first_started, ex.attempt, error, seed)
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

    async def attempt(self, ex: Execution, record: StepStarted | None) -> Any:
        run = ex.run
        lane = ex.lane
        spec = lane.spec
        resources = await self.resources(spec) if spec.has_resources else None
        scopes = self.instruments.scopes(record) if self._want_scope and record else None
        if spec.is_async:
            if scopes:
                with contextlib.ExitStack() as stack:
                    for scope in scopes:
                        stack.enter_context(scope)
                    return await lane.call(run.ctx, ex.event, resources)
            return await lane.call(run.ctx, ex.event, resources)
        return await run_sync(call_in_scopes, lane.call, run.ctx, ex.event, resources, scopes)

    async def attempt_with_timeout(
        self, ex: Execution, record: StepStarted | None, seconds: float
    ) -> Any:
        timer = asyncio.timeout(seconds)
        try:
            async with timer:
                ex.step_timeout = timer
                return await self.attempt(ex, record)
        except TimeoutError:
            if timer.expired():
                raise StepTimeoutError(
                    f"Step {ex.lane.spec.name} took longer than its timeout of {seconds} seconds "
                    "and was cancelled. Raise @step(timeout=...) or give it a retry_policy."
                ) from None
            raise
        finally:
            ex.step_timeout = None

    async def resources(self, spec: StepSpec) -> dict[str, Any]:
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
        self,
        ex: Execution,
        outputs: tuple[Event, ...],
        error: BaseException | None,
        began: float,
        will_retry: bool = False,
    ) -> None:
        run = ex.run
        self.instruments.call(
            "step_finished",
            StepFinished(
                run.run_id,
                run.workflow.workflow_name,
                ex.lane.spec.name,
                ex.id,
                ex.attempt,
                ex.event,
                outputs,
                error,
                time.perf_counter() - began,
                will_retry,
                run.meta,
                ex.worker,
            ),
        )

    def succeeded(self, ex: Execution, result: Any, began: float) -> None:
        run = ex.run
        if self._plain_finish and not run.internal and not run.workflow._listeners:
            # The common cases (one event out or none, nobody told about it but the stream):
            # what the rest of this function does for them, in short. Only an event_emitted
            # instrument could look at the run's executions in progress meanwhile; without
            # one, ex leaves them in Executions.release, right after.
            if self._want_emitted:
                del run.running[ex.id]
            lane = ex.lane
            kind = type(result)
            if kind is lane.trace_out and type(ex.event) is lane.trace_in:
                # The same classes in and out as the lane's last execution: its trace entry,
                # and an output class its annotation declares (or None), as checked then.
                self.trace.append(lane.trace_entry)
                if result is not None:
                    run.route(result, ex.id, None, emitter=ex, tag=ex.tag)
                return
            declared = result is None or kind in lane.spec.emitted
            if declared or (
                isinstance(result, Event)
                and (not self._check_outputs or not self.undeliverable(result))
            ):
                entry: TraceEntry = (
                    lane.spec.name,
                    type(ex.event),
                    () if result is None else (kind,),
                )
                entry = self._trace_entries.setdefault(entry, entry)
                self.trace.append(entry)
                if declared or not self._check_outputs:
                    lane.trace_in, lane.trace_out, lane.trace_entry = type(ex.event), kind, entry
                if result is not None:
                    run.route(result, ex.id, None, emitter=ex, tag=ex.tag)
                return
        # The execution is over: it is no longer in progress for snapshots (a step listener
        # may take one). Already out when the common case above let it through.
        run.running.pop(ex.id, None)
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
                self.step_finished(ex, (), error, began)
            run.fail(error, ex=ex)
            return
        if self._check_outputs and not run.stepwise:
            emitted = ex.lane.spec.emitted
            for ev in outputs:
                if type(ev) not in emitted and self.undeliverable(ev):
                    error = self.undelivered_error(ex, ev)
                    if self._want_finished:
                        self.step_finished(ex, (), error, began)
                    run.fail(error, ex=ex)
                    return
        if self._want_finished:
            self.step_finished(ex, outputs, None, began)
        if run.internal:
            # Reported here, before the outputs are routed (a StopEvent ends the stream).
            ex.output_name = str(type(outputs[0])) if outputs else ""
            run.state_changed(
                ex.lane.spec.name,
                StepState.NOT_RUNNING,
                ex.worker,
                ex.event,
                ex.output_name or None,
            )
        entry = (ex.lane.spec.name, type(ex.event), kinds)
        # Repeated entries share one tuple: a long run keeps 8 bytes per step, not ~130.
        self.trace.append(self._trace_entries.setdefault(entry, entry))
        if run.stepwise:
            run.branches.hand_out(ex, outputs, fan_out)
            return
        listeners = run.workflow._listeners
        if not listeners:
            if fan_out:
                run.branches.route_outputs(ex, outputs, fan_out)
            else:
                for ev in outputs:
                    run.route(ev, ex.id, None, emitter=ex, tag=ex.tag)
            return
        # Queue the outputs without starting anything, let the listeners look at a quiet run,
        # then dispatch.
        run.hold += 1
        called = 0
        boundary: StepBoundary | None = None
        try:
            run.branches.route_outputs(ex, outputs, fan_out)
            boundary = StepBoundary(
                run.run_id,
                ex.lane.spec.name,
                ex.id,
                ex.attempt,
                ex.event,
                outputs,
                run.ctx,
                getattr(ex, "first_started_wall", 0.0),
                time.time(),
            )
            for listener in listeners:
                pending = listener(boundary)
                if pending is not None:
                    # Its write is made off the loop: the run stays held while the worker waits
                    # for it (execute awaits Boundaries.wait_at), the loop serves the other runs.
                    run.boundaries.parked[ex.id] = (boundary, listeners[called:], pending)
                    return
                called += 1
        except StoreUnreachableError as error:
            if error.retry_after is None or boundary is None:
                run.hold -= 1
                run.fail(error, ex=ex)
                return
            # The store's server is away (a restart): the run stays held, its outputs queued,
            # and the worker waits (execute awaits Boundaries.wait_at) to call the listener again.
            run.boundaries.parked[ex.id] = (boundary, listeners[called:], error.retry_after)
            return
        except Exception as error:
            run.hold -= 1
            run.fail(error, ex=ex)
            return
        run.boundaries.release_hold(ex)

    def undeliverable(self, event: Event) -> bool:
        if isinstance(event, CALLER_EVENTS) or self.graph.targets(type(event)):
            return False
        return not any(w.wants_type(event) for w in self.waiters.values())

    def undelivered_error(self, ex: Execution, event: Event) -> WorkflowRuntimeError:
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
