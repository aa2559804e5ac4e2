"""The Workflow class: steps wired by the events they accept and emit.

Subclass :class:`Workflow` and decorate async (or plain sync) methods with ``@step``; or create
a ``Workflow(...)`` instance and attach plain functions with ``@step(workflow=instance)``.
Everything about a workflow class (its steps, their signatures, the dispatch table, the
validation) is computed once and cached; a run only does dict lookups.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
import warnings
from collections import deque
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from .._public import publish
from ..data.events import Event, StartEvent, StopEvent
from ..errors import (
    ContextStateError,
    StartEventError,
    WorkflowConfigurationError,
    WorkflowRuntimeError,
    WorkflowValidationError,
    llama_named,
)
from ..instruments.instrument import (
    Instrument,
    InstrumentSet,
    PrintingInstrument,
    global_instruments,
)
from . import _display
from ._durability import Durable, make_durable
from ._runtime import Run, RunStatus, current_execution
from ._start_event import build_start_event
from ._validate_resources import resource_problems
from ._version import check_declared, version_of
from ._workflow_steps import (
    add_class_step,
    add_instance_step,
    bound_calls,
    class_graph,
    class_steps,
    graph_of,
)
from .context import Context
from .graph import Graph, check_entry_and_exit
from .handler import WorkflowHandler
from .hooks import StepBoundary, StepListener
from .resource import ResourceManager
from .step import ParamKind, StepParam, check_graph_check_names

if TYPE_CHECKING:
    from ..data.serialization import BaseSerializer
    from ..durable.checkpoints import CheckpointStore  # checkpoint_store's annotations only
    from ._snapshot import RunSnapshot


class Workflow:
    """A set of steps that pass events to each other; ``run()`` starts a run.

    Args:
        timeout: Seconds a run may take before it fails with ``WorkflowTimeoutError``;
            ``None`` for no limit.
        disable_validation: Skip the graph checks made before the first run.
        verbose: Print what the run does: ``True`` (or ``"llama"``) as LlamaIndex 2.26 does
            ("[tick] add: ...", "[NAME:0] started from StartEvent"), ``"seed"`` in the seed
            examples' older lines ("Running step NAME"); see :class:`PrintingInstrument`.
        resource_manager: Where ``Resource`` factories' results are cached (one per workflow
            instance by default).
        num_concurrent_runs: Most runs of this instance executing at once; more wait their turn.
        runtime: LlamaIndex's pluggable runtime; batonflow has its own run loop, so only
            ``None`` is accepted.
        workflow_name: Name used in messages and traces (default: the class name).
        skip_graph_checks: Validation checks to skip (``"reachability"``,
            ``"terminal_event"``, ``"dead_end"``).
        serializer: Default serializer for ``ctx.to_dict()`` / ``Context.from_dict()``.
        instruments: Instruments watching this workflow's runs.
        strict_state: Encode every value on ``ctx.store.set`` (with the workflow's serializer)
            so a value that could not be snapshotted fails at once, naming its key.
        clock: Monotonic clock used for retry timing (tests inject a fake one).
        sleep: Coroutine function used to wait between retries (tests inject a fake one).
        checkpoint_store: Make every run durable: a checkpoint goes into this store at every
            step boundary (before the next step starts), and :meth:`resume` continues a run
            from its latest checkpoint, also in a new process when the store is durable.
            A path or URL opens one with :func:`~batonflow.core.stores.open_store`: a SQLite
            file (``"runs.db"``) or a PostgreSQL database (``"postgresql://..."``).
        version: The version its durable runs record (or ``version = "2"`` in the class).

    Raises:
        WorkflowConfigurationError: ``timeout`` or ``num_concurrent_runs`` is not positive,
            ``skip_graph_checks`` names an unknown check, or the class's steps accept no
            StartEvent / return no StopEvent, or several classes of either (unless
            ``disable_validation``).
    """

    _added_steps: ClassVar[dict[str, Callable[..., Any]]] = {}
    #: A step parameter annotated with a workflow class receives a nested workflow.
    _step_parameter: ClassVar[ParamKind] = ParamKind.WORKFLOW

    def __init__(
        self,
        timeout: float | None = 45.0,
        disable_validation: bool = False,
        verbose: bool | str = False,
        resource_manager: ResourceManager | None = None,
        num_concurrent_runs: int | None = None,
        runtime: Any = None,
        workflow_name: str | None = None,
        skip_graph_checks: Iterable[str] | None = None,
        serializer: BaseSerializer | None = None,
        *,
        instruments: Sequence[Instrument] = (),
        strict_state: bool = False,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Coroutine[Any, Any, None]] | None = None,
        checkpoint_store: CheckpointStore | str | os.PathLike[str] | None = None,
        version: str | None = None,
    ) -> None:
        if timeout is not None and (isinstance(timeout, bool) or not timeout > 0):
            raise WorkflowConfigurationError(
                f"timeout must be a positive number of seconds or None, got {timeout!r}."
            )
        if num_concurrent_runs is not None and num_concurrent_runs < 1:
            raise llama_named(WorkflowConfigurationError, "WorkflowValidationError")(
                f"num_concurrent_runs must be at least 1 or None, got {num_concurrent_runs!r}."
            )
        if runtime is not None:
            raise WorkflowConfigurationError(
                f"runtime={runtime!r} is not supported: batonflow runs workflows on its own run "
                "loop. Remove the runtime= argument (durable runs use WorkflowCheckpointer)."
            )
        skips = frozenset(skip_graph_checks or ())
        check_graph_check_names(skips)
        self._skip_graph_checks = skips
        self._timeout = timeout
        self._disable_validation = disable_validation
        self._verbose = verbose
        self._resource_manager = resource_manager
        self._num_concurrent_runs = num_concurrent_runs
        self._workflow_name = workflow_name
        self._serializer = serializer
        self._strict_state = strict_state
        self._declared_version = check_declared(version, type(self).__name__)
        own = list(instruments)
        if verbose:
            style = verbose if isinstance(verbose, str) else "llama"  # True: LlamaIndex 2.26's
            own.append(PrintingInstrument(style=style, timeout=timeout))
        self._own_instruments = tuple(own)
        self._instrument_cache: tuple[int, InstrumentSet] | None = None
        self._clock: Callable[[], float] = clock or time.monotonic
        self._sleep: Callable[[float], Coroutine[Any, Any, None]] = sleep or asyncio.sleep
        self._instance_steps: dict[str, Callable[..., Any]] = {}
        self._own_graph: Graph | None = None
        self._calls: tuple[Graph, list[Callable[..., Any]]] | None = None
        self._listeners: tuple[StepListener, ...] = ()
        self._active_runs = 0
        self._queued_runs: deque[Callable[[], None]] = deque()
        self._last_run: Run | None = None
        self._last_trace: list[tuple[str, type[Event], tuple[type[Event], ...]]] | None = None
        self._nested: dict[str, Workflow] = {}
        #: Set while a WorkflowCheckpointer starts a run (so it is not recorded twice).
        self._checkpointing = False
        self._checkpointer: Durable | None = None
        if checkpoint_store is not None:
            # The durable room plugs this in (the engine does not import it): _durability.py.
            self._checkpointer = make_durable(self, checkpoint_store)
        graph = type(self)._class_graph()
        if graph.order and not disable_validation:
            # As LlamaIndex: a workflow without its entry or exit fails when it is created.
            # A bare Workflow() gets its steps afterwards, from @step(workflow=instance); a
            # class completed that way is created with disable_validation=True.
            check_entry_and_exit(graph)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        """In a notebook: the drawing of every flow the workflow allows."""
        return _display.bundle("workflow", self)

    # ------------------------------------------------------------------ properties

    @property
    def workflow_name(self) -> str:
        """The workflow's name (``workflow_name=`` or the class name)."""
        return self._workflow_name or type(self).__name__

    @property
    def version(self) -> str:
        """The version its durable runs record: the declared one, else a hash of its steps'
        names, their events' fields and the state's (``core/engine/_version.py``)."""
        return version_of(self)

    @property
    def timeout(self) -> float | None:
        """Seconds a run may take, or ``None``."""
        return self._timeout

    @property
    def resource_manager(self) -> ResourceManager:
        """The manager that creates and caches this instance's resources."""
        if self._resource_manager is None:
            self._resource_manager = ResourceManager()
        return self._resource_manager

    @property
    def serializer(self) -> BaseSerializer | None:
        """The default serializer for this workflow's contexts, if set."""
        return self._serializer

    @property
    def runtime(self) -> None:
        """LlamaIndex's pluggable runtime: always ``None``, batonflow runs on its own loop."""
        return None

    @property
    def checkpoint_store(self) -> CheckpointStore | None:
        """The store every run is checkpointed into (``checkpoint_store=``), or ``None``."""
        return self._checkpointer.store if self._checkpointer is not None else None

    @property
    def start_event_class(self) -> type[StartEvent]:
        """The StartEvent class the entry step accepts."""
        return self._graph().start_event_class

    @property
    def stop_event_class(self) -> type[StopEvent]:
        """The StopEvent class the workflow ends with."""
        return self._graph().stop_event_classes[0]

    @property
    def events(self) -> list[type[Event]]:
        """Every event class the steps accept or emit."""
        return self._graph().events

    # ------------------------------------------------------------------ steps and graph

    @classmethod
    def add_step(cls, func: Callable[..., Any]) -> None:
        """Add a ``@step``-decorated function to this workflow class (and its subclasses).

        ``@step(workflow=MyWorkflow)`` calls this for you.

        Raises:
            WorkflowValidationError: ``func`` is not decorated with ``@step``, or the workflow
                already has a step of that name.
        """
        add_class_step(cls, func)

    def add_workflows(self, **workflows: Workflow) -> None:
        """Deprecated (removed from LlamaIndex): give steps nested workflows by parameter name.

        A step parameter annotated with a ``Workflow`` (sub)class, e.g. ``sub: ReviewFlow``,
        receives the workflow added under its name (``w.add_workflows(sub=ReviewFlow())``), or
        the parameter's default. New code can keep the nested workflow as an attribute, or
        inject it with ``Annotated[ReviewFlow, Resource(factory)]``.

        Raises:
            WorkflowConfigurationError: A value is not a workflow instance.
        """
        warnings.warn(
            "Workflow.add_workflows() is deprecated; keep nested workflows as attributes or "
            "inject them with Annotated[MyFlow, Resource(factory)].",
            DeprecationWarning,
            stacklevel=2,
        )
        for name, workflow in workflows.items():
            if not isinstance(workflow, Workflow):
                raise WorkflowConfigurationError(
                    f"add_workflows({name}=...) got {workflow!r}, which is not a workflow "
                    f"instance; pass one, e.g. add_workflows({name}=MyFlow())."
                )
        self._nested.update(workflows)

    def send_event(self, message: Event, step: str | None = None) -> None:
        """Deprecated (older LlamaIndex): ``self.send_event(ev)`` inside a step.

        Sends ``message`` into the run of the step executing now, as ``ctx.send_event`` does;
        declare its type in the step's return annotation. New code takes ``ctx: Context``.

        Raises:
            WorkflowRuntimeError: Called outside a step of one of this workflow's runs.
        """
        warnings.warn(
            "Workflow.send_event() is deprecated; take `ctx: Context` in the step and call "
            "ctx.send_event(...).",
            DeprecationWarning,
            stacklevel=2,
        )
        ex = current_execution()
        if ex is None or ex.run.workflow is not self:
            raise WorkflowRuntimeError(
                f"{self.workflow_name}.send_event() works only inside a step of one of its "
                "runs; outside, send with handler.ctx.send_event(...)."
            )
        ex.run.ctx.send_event(message, step=step)

    def _nested_workflow(self, step_name: str, param: StepParam) -> Workflow:
        """The workflow a step parameter annotated with a Workflow class receives."""
        found = self._nested.get(param.name, param.resource)
        wanted: type[Workflow] = param.annotation
        if found is None:
            raise WorkflowConfigurationError(
                f"Step {step_name} of {self.workflow_name} takes a nested workflow "
                f"'{param.name}: {wanted.__name__}', but none was added. Call "
                f"add_workflows({param.name}={wanted.__name__}(...)) before running, or give "
                "the parameter a default."
            )
        if not isinstance(found, wanted):
            raise WorkflowConfigurationError(
                f"Step {step_name} of {self.workflow_name} takes '{param.name}: "
                f"{wanted.__name__}', but add_workflows({param.name}=...) gave a "
                f"{type(found).__name__}. Add a {wanted.__name__} under that name."
            )
        return found

    # Its steps, found and compiled into its graph once per class: _workflow_steps.py.
    _add_instance_step = add_instance_step
    _class_steps = classmethod(class_steps)
    _class_graph = classmethod(class_graph)
    _graph = graph_of
    _bound_calls = bound_calls

    def validate(
        self, *, validate_resource_configs: bool = True, validate_resources: bool = False
    ) -> bool:
        """Check the workflow's steps and events fit together (and its resources).

        Args:
            validate_resource_configs: Also load every ``ResourceConfig`` (the file exists,
                is JSON, has the path, and validates into the annotated model).
            validate_resources: Also call every resource factory once, with a throwaway
                manager (nothing is cached for the runs): factories that need settings,
                credentials or a service are checked up front.

        Returns:
            Whether the workflow uses human-in-the-loop events.

        Raises:
            WorkflowValidationError: The message names the step and event, and the fix; for
                resources, it lists every failing parameter with the reason.
        """
        graph = self._graph()
        graph.validate(self._skip_graph_checks)
        wanted = [
            (spec.name, p)
            for spec in graph.order
            for p in spec.params
            if p.kind is ParamKind.RESOURCE
        ]
        if not (validate_resource_configs or validate_resources) or not wanted:
            return graph.uses_hitl
        problems = resource_problems(wanted, call_factories=validate_resources)
        if problems:
            raise WorkflowValidationError(
                f"Resource validation of {self.workflow_name} failed:\n"
                + "\n".join(f"  - {problem}" for problem in problems)
            )
        return graph.uses_hitl

    # ------------------------------------------------------------------ listeners, instruments

    def add_step_listener(self, listener: StepListener) -> None:
        """Call ``listener(StepBoundary)`` after every successful step of this instance's runs.

        See :mod:`batonflow.core.hooks`; checkpointing is built on this.
        """
        if listener not in self._listeners:
            self._listeners = (*self._listeners, listener)

    def remove_step_listener(self, listener: StepListener) -> None:
        """Stop calling a listener added with :meth:`add_step_listener`."""
        self._listeners = tuple(x for x in self._listeners if x != listener)

    def _instrument_set(self) -> InstrumentSet:
        extra, version = global_instruments()
        cached = self._instrument_cache
        if cached is not None and cached[0] == version:
            return cached[1]
        instruments = InstrumentSet((*self._own_instruments, *extra))
        self._instrument_cache = (version, instruments)
        return instruments

    def execution_trace(self) -> list[tuple[str, type[Event], tuple[type[Event], ...]]] | None:
        """The most recent run's completed step executions, in completion order.

        Each item is ``(step name, input event class, output event classes)``; ``None`` before
        the first run. Used by ``draw_most_recent_execution``.
        """
        run = self._last_run
        if run is not None:
            return list(run.trace)
        return None if self._last_trace is None else list(self._last_trace)

    # ------------------------------------------------------------------ running

    def run(
        self,
        ctx: Context[Any] | None = None,
        start_event: StartEvent | None = None,
        stepwise: bool = False,
        **kwargs: Any,
    ) -> WorkflowHandler:
        """Start a run (or resume one) and return its handler immediately.

        Args:
            ctx: A Context to continue: if its run is in progress (or was restored in progress)
                the run resumes without a new StartEvent; otherwise a new run starts with the
                context's state.
            start_event: The start event to use instead of building one from ``kwargs``.
            stepwise: Run one wave of steps per ``await handler.run_step()``.
            **kwargs: Fields of the start event; ``run_id=`` sets the run's id.

        Returns:
            The run's :class:`WorkflowHandler`; ``await`` it for the result.

        Raises:
            WorkflowValidationError: The workflow's steps do not fit together.
            StartEventError: ``kwargs`` (or ``start_event``) do not fit the workflow's
                StartEvent; the message names the class and its fields. Also a
                ``ValueError``, as LlamaIndex raises for a ``start_event`` of the wrong type.
            ContextStateError: ``ctx`` is running another run right now.
        """
        if start_event is not None and not isinstance(start_event, StartEvent):
            raise llama_named(StartEventError, "ValueError")(  # LlamaIndex's class name
                "The 'start_event' argument must be an instance of 'StartEvent'; got "
                f"{type(start_event).__name__}. Pass an instance of "
                f"{self.start_event_class.__name__}, or its fields as keyword arguments."
            )
        durable = self._checkpointer
        if durable is not None and not self._checkpointing:
            return durable._run_durable(ctx, start_event=start_event, stepwise=stepwise, **kwargs)
        graph = self._graph()
        if not self._disable_validation:
            graph.validate(self._skip_graph_checks)
        for step_name, param in graph.nested_workflows:
            self._nested_workflow(step_name, param)  # a missing one fails here, not mid-run
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise WorkflowRuntimeError(
                "workflow.run() needs a running event loop; call it in async code, e.g. "
                "`async def main(): return await w.run(...)` then `asyncio.run(main())`."
            ) from None
        run_id = kwargs.pop("run_id", None)
        snapshot: RunSnapshot | None = None
        if ctx is None:
            ctx = Context(self)
        else:
            if ctx._workflow is not self:
                ctx._workflow = self
            live = ctx._run
            if live is not None and ctx.is_running:
                raise ContextStateError(
                    f"The context is already running a workflow (run {live.run_id}); a Context "
                    "holds one run at a time. Await that run's handler first, or pass a new "
                    f"Context({self.workflow_name}) (or none) for a concurrent run."
                )
            if ctx._snapshot is not None and ctx._snapshot.is_running:
                snapshot = ctx._snapshot
        start: StartEvent | None = None
        if snapshot is not None:
            run_id = snapshot.run_id
        else:
            start = self._start_event(graph, start_event, kwargs)
        ctx._snapshot = None
        run_id = str(run_id) if run_id is not None else uuid.uuid4().hex
        ctx._run_id = run_id
        run = Run(
            self,
            graph,
            ctx,
            run_id,
            stepwise=stepwise,
            instruments=self._instrument_set(),
            calls=self._bound_calls(graph),
        )
        handler = WorkflowHandler(run, ctx)
        run.handler = handler
        ctx._run = run
        self._last_run = run

        def begin() -> None:
            if run.status is not RunStatus.RUNNING:
                return  # cancelled while queued
            run.counted = True
            self._active_runs += 1
            run.start(start, self._timeout, snapshot)
            if snapshot is not None:
                for event, step in snapshot.external:
                    ctx.send_event(event, step=step)

        limit = self._num_concurrent_runs
        if limit is not None and self._active_runs >= limit:
            self._queued_runs.append(begin)
        else:
            begin()
        return handler

    def resume(self, run_id: str) -> WorkflowHandler:
        """Continue run ``run_id`` from its latest checkpoint in :attr:`checkpoint_store`.

        Use it after the process running it died (with a durable store such as
        ``SqliteCheckpointStore``): completed steps are not run again, steps that were running
        re-run from their start. A run that had already ended returns its result again.

        Raises:
            WorkflowConfigurationError: The workflow was created without ``checkpoint_store=``.
            CheckpointError: The store has no checkpoint for that run, or it cannot be restored.
        """
        if self._checkpointer is None:
            raise WorkflowConfigurationError(
                f"{self.workflow_name}.resume() needs a checkpoint store; create the workflow "
                "with checkpoint_store=SqliteCheckpointStore(path) (or use a "
                "WorkflowCheckpointer)."
            )
        return self._checkpointer.resume(run_id)

    # Building the StartEvent from run()'s arguments: _start_event.py.
    _start_event = staticmethod(build_start_event)

    def _run_finished(self, run: Run) -> None:
        if self._last_run is run:
            # Keep the trace for draw_most_recent_execution, not the whole finished run (its
            # buffers, stream and state).
            self._last_trace = run.trace
            self._last_run = None
        if not run.counted:
            return
        self._active_runs -= 1
        while self._queued_runs and (
            self._num_concurrent_runs is None or self._active_runs < self._num_concurrent_runs
        ):
            self._queued_runs.popleft()()


__all__ = ["StepBoundary", "Workflow"]

publish(__name__, globals())  # their public path, as stored data names them (core/_public.py)
