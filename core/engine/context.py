"""The Context: what a step sees of its run, and what survives between runs.

Every run has a :class:`Context`. Steps receive it by annotating a parameter ``ctx: Context``
(or ``ctx: Context[MyState]`` for typed state) and use it to send events, join events with
``collect_events``, write to the caller's stream, wait for a human, and read and write the
state store ``ctx.store``. The same Context passed to ``workflow.run(ctx=ctx)`` continues its
run if that run is still in progress, or starts a new run with the same state.

``ctx.to_dict()`` snapshots everything needed to continue the run elsewhere, and
``Context.from_dict(workflow, data)`` restores it (see ``docs/hitl.md``).
"""

from __future__ import annotations

import concurrent.futures
import inspect
import threading
import warnings
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NamedTuple, TypeVar

from pydantic import BaseModel
from typing_extensions import TypeVar as DefaultedTypeVar  # Python 3.13's typing has default=

from .._public import publish
from ..data._state_types import DictState
from ..data.events import Event, StopEvent, loaded_class
from ..data.serialization import BaseSerializer as BaseSerializer
from ..data.serialization import JsonPickleSerializer as JsonPickleSerializer
from ..data.serialization import JsonSerializer as JsonSerializer
from ..data.serialization import PickleSerializer as PickleSerializer
from ..data.state import InMemoryStateStore
from ..errors import ContextStateError, WorkflowRuntimeError
from ..retrying.retry import RetryInfo
from ._children import check_child, run_in_process, to_child
from ._collect import repeat_type
from ._lanes import RUNNING
from ._runtime import CURRENT_EXECUTION, RunStatus, current_execution
from ._snapshot import FromDict, dump, restore_into
from ._snapshot import SnapshotDict as SnapshotDict
from ._stream import StreamQueue as StreamQueue
from ._targets import check_target
from .step import ParamKind

if TYPE_CHECKING:
    from ._runtime import Execution, Run
    from ._snapshot import RunSnapshot
    from .workflow import Workflow

EventT = TypeVar("EventT", bound=Event)
#: The run's state type (``Context[MyState]``); ``Context`` alone is ``Context[DictState]``.
StateT = DefaultedTypeVar("StateT", bound=BaseModel | DictState, default=DictState)

_MISSING: Any = object()


class Waiting(NamedTuple):
    """One step paused in ``ctx.wait_for_event`` (see :meth:`Context.waiting_for`).

    Attributes:
        step: The waiting step.
        type_name: ``module.QualName`` of the awaited event class.
        event_type: The awaited class (``None`` for a restored wait whose class this process
            does not know yet).
        waiter_id: The wait's id.
        requirements: Field values the answer must have.
    """

    step: str
    type_name: str
    event_type: type[Event] | None
    waiter_id: str
    requirements: dict[str, Any]


class Context(Generic[StateT]):
    """The run's context: events, streams, waiting for humans, and the state store.

    Args:
        workflow: The workflow this context belongs to.
        previous_context: A dict from :meth:`to_dict` to restore (same as :meth:`from_dict`).
        serializer: The serializer used by :meth:`to_dict` and :meth:`from_dict` by default
            (falls back to the workflow's serializer, then ``JsonSerializer``).
    """

    #: A parameter annotated ``Context`` (or ``Context[Model]``) receives the run's context.
    _step_parameter: ClassVar[ParamKind] = ParamKind.CONTEXT

    def __init__(
        self,
        workflow: Workflow,
        previous_context: dict[str, Any] | None = None,
        serializer: BaseSerializer | None = None,
    ) -> None:
        if isinstance(workflow, type):
            # Older examples pass the workflow class: Context(MyWorkflow).
            workflow = workflow()
        self._workflow = workflow
        self._serializer = serializer
        self._store: InMemoryStateStore[Any] | None = None
        self._run: Run | None = None
        self._snapshot: RunSnapshot | None = None
        self._run_id: str | None = None
        #: A durable run's journal of calls (durable/_journal.py: RunJournal), set by the
        #: WorkflowCheckpointer that records the run; ``None`` for other runs.
        self._journal: Any = None
        #: A durable run's budget guard (durable/_budget.py: RunBudget) when it has a budget.
        self._budget: Any = None
        #: Per-run string metadata saved with the context (e.g. a trace's ``traceparent``).
        self.meta: dict[str, str] = {}
        if previous_context is not None:
            restore_into(self, previous_context, serializer)

    # ------------------------------------------------------------------ state

    @property
    def store(self) -> InMemoryStateStore[StateT]:
        """The run's state store (``await ctx.store.get("key", default=0)``, ``set``, ...)."""
        store = self._store
        if store is None:
            workflow = self._workflow
            if workflow._strict_state:
                store = InMemoryStateStore(
                    workflow._graph().state_type,
                    strict=True,
                    serializer=self._serializer or workflow.serializer,
                )
            else:
                store = InMemoryStateStore(workflow._graph().state_type)
            self._store = store
        return store

    async def get(self, key: str, default: Any = _MISSING) -> Any:
        """Deprecated: use ``await ctx.store.get(key, default=...)``."""
        warnings.warn(
            "ctx.get() is deprecated; use `await ctx.store.get(key, default=...)`.",
            DeprecationWarning,
            stacklevel=2,
        )
        if default is _MISSING:
            return await self.store.get(key)
        return await self.store.get(key, default=default)

    async def set(self, key: str, value: Any) -> None:
        """Deprecated: use ``await ctx.store.set(key, value)``."""
        warnings.warn(
            "ctx.set() is deprecated; use `await ctx.store.set(key, value)`.",
            DeprecationWarning,
            stacklevel=2,
        )
        await self.store.set(key, value)

    @property
    def data(self) -> Any:
        """Deprecated (removed from LlamaIndex): the live state; use ``ctx.store`` instead.

        The store's state object itself (a ``DictState`` dict, or the typed model), so
        ``ctx.data["k"] = v`` is seen by ``await ctx.store.get("k")``. It is not locked: use
        ``async with ctx.store.edit_state()`` for read-modify-write from concurrent steps.
        """
        warnings.warn(
            "ctx.data is deprecated; use `await ctx.store.get(key)` / `await ctx.store.set(key, "
            "value)` or `async with ctx.store.edit_state() as state:`.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.store._state

    # ------------------------------------------------------------------ run state

    @property
    def is_running(self) -> bool:
        """Whether this context's run is in progress."""
        run = self._run
        return run is not None and run.status is RUNNING

    @property
    def workflow(self) -> Workflow:
        """The workflow this context belongs to."""
        return self._workflow

    @property
    def run_id(self) -> str | None:
        """The id of the context's current (or last, or restored) run."""
        return self._run_id

    def _live_run(self, method: str) -> Run:
        run = self._run
        if run is None:
            raise ContextStateError(
                f"ctx.{method}() requires a running workflow, but it was called before workflow "
                "started. Call it from a step, or after handler = workflow.run(ctx=ctx)."
            )
        return run

    def _execution(self, method: str) -> Execution:
        ex = current_execution()
        if ex is None or ex.run.ctx is not self:
            raise ContextStateError(
                f"ctx.{method}() can only be called inside a step of this context's run."
            )
        return ex

    @property
    def journaled(self) -> bool:
        """Whether :meth:`journal` records calls here (a durable run) or simply makes them."""
        return self._journal is not None

    async def journal(self, name: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Call ``fn(*args, **kwargs)`` (sync or async) once per run, its outcome journaled.

        In a durable run the result is committed to the run store when ``fn`` returns (an
        exception it raises too), and a re-run of the step after a crash gets the recorded
        result (or exception) back without calling ``fn``: an LLM or a payment is not paid
        twice. Calls are matched by step, execution and the order the step makes them.
        Outside a durable run ``fn`` is simply called.

        Args:
            name: What the call is (``"draft"``, ``"charge-card"``); a re-run making another
                call at this position raises :class:`JournalMismatchError`.
            fn: The function; its result must be one the run's serializer encodes.

        Raises:
            JournalMismatchError: The run recorded another call at this position.
            SerializationError: The result cannot be encoded (nothing was recorded).
            ContextStateError: (A durable run) called outside a step of this context's run.
        """
        if self._journal is None:
            result = fn(*args, **kwargs)
            return await result if inspect.isawaitable(result) else result
        ex = self._execution("journal")
        return await self._journal.call(
            ex.lane.spec.name, ex.id, ex.attempt, name, fn, args, kwargs
        )

    async def run_child(self, workflow: Workflow, /, **start_fields: Any) -> Any:
        """Run ``workflow`` as a child run of this one and return its result.

        The child is a run of its own. Its stream events are written to this run's stream,
        each wrapped in a :class:`~batonflow.core.events.ChildRunEvent` naming the child's
        run id; cancelling this run (or its failing) cancels the child. In a durable run the
        child is recorded in the run store with its parent (its run id and this step) before
        it starts, recorded as it goes, and its result is journaled here as
        :meth:`journal` does: a re-run of this step after a crash gets a finished child's
        result without running it again, and resumes an unfinished child from its last
        checkpoint (its finished steps do not run again).

        Args:
            workflow: The child's workflow instance.
            **start_fields: The child's start event fields (as ``workflow.run(**fields)``).

        Returns:
            The child's result.

        Raises:
            TypeError: ``workflow`` is not a workflow instance.
            ContextStateError: (A durable run) called outside a step of this context's run.
            Exception: What the child raised (replayed from the journal after a crash).
        """
        child = check_child(workflow)
        if self._journal is None:
            return await run_in_process(self, child, start_fields)
        ex = self._execution("run_child")
        return await self._journal.run_child(self, ex, child, start_fields)

    def _run_ended(self, run: Run) -> None:
        # Called by the run when it resolves; keeps the run for to_dict and stream inspection.
        pass

    @staticmethod
    def get_step_context() -> Context[Any]:
        """The Context of the step executing now (for decorators wrapping step functions).

        Raises:
            ContextStateError: Called outside a step (also a ``WorkflowRuntimeError``).
        """
        ex = current_execution()
        if ex is None:
            raise ContextStateError(
                "Context.get_step_context() may only be called from within a step (or code a "
                "step calls); take `ctx: Context` as a step parameter instead."
            )
        return ex.run.ctx

    def waiting_for(self) -> list[Waiting]:
        """The steps paused in ``wait_for_event`` right now, and what each waits for.

        Lets a caller (a server, a UI) check an answer before sending it: which event types the
        run waits for, with which ``requirements``. Works on a restored context too.
        """
        run = self._run
        if run is not None:
            if run.status is not RUNNING:
                return []
            return [
                Waiting(w.step, w.type_name, w.event_type, w.waiter_id, dict(w.requirements))
                for w in run.waiters.values()
            ]
        snap = self._snapshot
        if snap is None or not snap.is_running:
            return []
        return [
            Waiting(
                w.step, w.type_name, _event_class(w.type_name), w.waiter_id, dict(w.requirements)
            )
            for w in snap.waiters
        ]

    async def running_steps(self) -> list[str]:
        """Names of the steps executing right now (none once the run has ended).

        Raises:
            ContextStateError: No run was started with this context.
        """
        return self._live_run("running_steps").executions.running_steps()

    # ------------------------------------------------------------------ events

    def send_event(self, message: Event, step: str | None = None) -> None:
        """Send ``message`` into the run, to every step that accepts it or to ``step`` only.

        Inside a step, declare the sent event type in the step's return annotation so the
        workflow validates. From outside (e.g. ``handler.ctx.send_event(HumanResponseEvent(...))``)
        it answers a waiting step or triggers the steps accepting it.

        Raises:
            WorkflowStepDoesNotExistError: ``step`` names no step of the workflow.
            ContextStateError: The run has ended (or none was started).
        """
        if not isinstance(message, Event):
            raise TypeError(
                f"send_event() takes an Event, got {type(message).__name__}; wrap the value "
                "in an Event subclass."
            )
        run = self._run
        if run is None:
            snap = self._snapshot
            if snap is not None and snap.is_running:
                waiting: list[tuple[str, Any]] = [(w.step, w.type_name) for w in snap.waiters]
                check_target(self._workflow, message, step, waiting, external=True)
                snap.external.append((message, step))
                return
            self._live_run("send_event")
            return
        cell = CURRENT_EXECUTION.get()  # current_execution(), inline: once per sent event
        ex = None if cell is None else cell[0]
        if run.status is not RUNNING:
            self._send(run, message, None, ex)  # raises unless there is nothing to do
            return
        if step is None and (run._kinds.get(type(message)) or run.graph.kind_of(type(message)))[0]:
            target = None  # the common case: some step takes it (routing's own lookup)
        else:
            internal = ex is not None and ex.run is run
            waiting = [(w.step, w) for w in run.waiters.values()] if run.waiters else []
            try:
                target = check_target(self._workflow, message, step, waiting, external=not internal)
            except WorkflowRuntimeError:
                if internal or step is not None or not to_child(run, message):
                    raise
                return  # a child run that waits for it took it (engine/_children.py)
        if threading.get_ident() != run.thread_id:
            run.loop.call_soon_threadsafe(self._send, run, message, target, ex)
        elif ex is not None and ex.run is run:  # _send's common case, the run checked above
            run.route(message, ex.id, target, emitter=ex)
        else:
            run.route(message, None, target, external=True)

    def _send(
        self, run: Run, message: Event, target: int | None, ex: Execution | None = None
    ) -> None:
        if run.status is not RUNNING:
            if isinstance(message, StopEvent) or run is not self._run:
                return  # stepwise callers hand the final StopEvent back; nothing to do
            raise ContextStateError(
                f"The run {run.run_id} has ended ({run.status.value}); send_event() needs a "
                "running workflow. Start a new run with workflow.run(ctx=ctx)."
            )
        if ex is None:
            ex = current_execution()
        if ex is not None and ex.run is run:
            run.route(message, ex.id, target, emitter=ex)
        else:
            run.route(message, None, target, external=True)

    def write_event_to_stream(self, ev: Event | None) -> None:
        """Write ``ev`` to the stream read by ``handler.stream_events()``."""
        run = self._live_run("write_event_to_stream")
        if ev is None:
            return
        if threading.get_ident() != run.thread_id:
            run.loop.call_soon_threadsafe(run.stream.put, ev)
        else:
            run.stream.put(ev)

    def collect_events(
        self,
        ev: Event,
        expected: list[type[Event]] | type[Event],
        buffer_id: str | None = None,
        *,
        count: int | None = None,
    ) -> list[Event] | None:
        """Buffer ``ev``; once one event of each ``expected`` type arrived, return them all.

        Call it in a step that accepts every expected type. It returns ``None`` until the set
        is complete, then the events in the order of ``expected`` (a type listed twice needs
        two events). For a fan-in of many events of one type, pass the type and a count:
        ``ctx.collect_events(ev, Done, count=n)`` waits for ``n`` ``Done`` events without a
        list of ``n`` types (``[Done] * n``) built on every call. Buffers are per step (and
        ``buffer_id``); each event costs O(1) either way.

        Args:
            ev: The event the step received.
            expected: The event types to wait for, or one type (with ``count``).
            buffer_id: Keeps separate joins of one step apart.
            count: How many events of the one ``expected`` type (default 1).

        Raises:
            ContextStateError: Called outside a step of this context's run.
            TypeError: ``count`` with a list, or a ``count`` that is not an int >= 0.
        """
        cell = CURRENT_EXECUTION.get()  # self._execution(), inline: once per arriving event
        ex = None if cell is None else cell[0]
        if ex is None or ex.run.ctx is not self:
            ex = self._execution("collect_events")  # raises
        wanted: Sequence[type[Event]]
        if isinstance(expected, type):
            repeated = repeat_type(expected, 1 if count is None else count)
            if not repeated.n:  # (its len(), without a call)
                return []  # nothing to wait for (LlamaIndex returns [] too)
            wanted = repeated
        elif count is not None:
            raise TypeError(
                "collect_events(count=...) counts events of one type; pass the type itself, "
                f"e.g. collect_events(ev, Done, count={count!r}), or a list without count."
            )
        elif not expected:
            return []
        else:
            wanted = expected
        run = ex.run
        if threading.get_ident() != run.thread_id:
            collect = run.collecting.collect
            return _in_loop(run, collect, ex, ev, wanted, buffer_id)  # type: ignore[no-any-return]
        return run.collecting.collect(ex, ev, wanted, buffer_id)

    async def wait_for_event(
        self,
        event_type: type[EventT],
        waiter_event: Event | None = None,
        waiter_id: str | None = None,
        requirements: dict[str, Any] | None = None,
        timeout: float | None = 2000,
    ) -> EventT:
        """Wait inside a step for an event of ``event_type`` sent into the run.

        Args:
            event_type: The event class to wait for.
            waiter_event: Written to the stream once per ``waiter_id`` (e.g. an
                ``InputRequiredEvent`` asking a human).
            waiter_id: Identifies this wait across a snapshot/restore (default: derived from
                the step execution, stable across a resume).
            requirements: Field values the awaited event must have.
            timeout: Seconds to wait (``None``: forever); raises ``TimeoutError`` after.

        Returns:
            The first matching event sent after the wait began.
        """
        ex = self._execution("wait_for_event")
        answer = await ex.run.waits.wait_for(
            ex, event_type, waiter_event, waiter_id, requirements, timeout
        )
        return answer  # type: ignore[return-value]  # the waiter matches only event_type

    def retry_info(self) -> RetryInfo:
        """Where the current step stands in its retries (attempt 0 on the first run)."""
        ex = self._execution("retry_info")
        return getattr(ex, "retry_info", None) or RetryInfo()

    # ------------------------------------------------------------------ deprecated stream access

    def get_result(self) -> Any:
        """Deprecated: ``await handler`` instead. The finished run's result.

        Raises:
            ContextStateError: No run, or the run has not completed (it is still running,
                failed, timed out or was cancelled).
        """
        warnings.warn(
            "ctx.get_result() is deprecated; use `result = await handler`.",
            DeprecationWarning,
            stacklevel=2,
        )
        run = self._live_run("get_result")
        stop = run.stop_event
        if run.status is not RunStatus.COMPLETED or stop is None:
            raise ContextStateError(
                f"The run {run.run_id} has no result ({run.status.value}); await the handler: "
                "it returns the result or raises the run's error."
            )
        return stop.result if type(stop) is StopEvent else stop

    def stream_events(self) -> AsyncIterator[Event]:
        """Deprecated: ``handler.stream_events()`` instead (same events, same cursor)."""
        warnings.warn(
            "ctx.stream_events() is deprecated; use `handler.stream_events()`.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self._live_run("stream_events").stream.consume()

    @property
    def streaming_queue(self) -> StreamQueue:
        """Deprecated: ``handler.stream_events()`` instead; a queue view of the event stream."""
        warnings.warn(
            "ctx.streaming_queue is deprecated; use `async for ev in handler.stream_events()`.",
            DeprecationWarning,
            stacklevel=2,
        )
        return StreamQueue(self._live_run("streaming_queue").stream)

    # ------------------------------------------------------------------ serialization

    def to_dict(
        self, serializer: BaseSerializer | None = None, *, include_state: bool = True
    ) -> SnapshotDict:
        """Snapshot the run as a JSON-compatible dict (see ``Context.from_dict``).

        It holds the state store, queued and in-progress events, ``collect_events`` buffers,
        waiting steps, unread stream events, the run id and meta. Synchronous; ``await`` on the
        result also works.

        Raises:
            SerializationError: A value cannot be encoded (the message names its key).
        """
        return SnapshotDict(dump(self, serializer, include_state=include_state))

    if TYPE_CHECKING:

        @classmethod
        def from_dict(
            cls,
            workflow: Workflow,
            data: dict[str, Any],
            serializer: BaseSerializer | None = None,
        ) -> Context[Any]:
            """Restore a context saved with :meth:`to_dict` for ``workflow``."""
            ...

    else:
        from_dict = FromDict()


def _event_class(name: str) -> type[Event] | None:
    """The loaded event class named ``module.QualName`` (no module is imported)."""
    found = loaded_class(name)
    return found if isinstance(found, type) and issubclass(found, Event) else None


def _in_loop(run: Run, fn: Any, *args: Any) -> Any:
    # A sync step (in a worker thread) calling a context method that must run in the loop.
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def call() -> None:
        try:
            done.set_result(fn(*args))
        except BaseException as exc:  # handed back to the calling thread
            done.set_exception(exc)

    run.loop.call_soon_threadsafe(call)
    return done.result()


__all__ = [
    "BaseSerializer",
    "Context",
    "JsonPickleSerializer",
    "JsonSerializer",
    "PickleSerializer",
    "SnapshotDict",
    "StreamQueue",
    "Waiting",
]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
