"""Who accepts and emits what: a workflow's steps as a graph, its validation and dispatch table.

A :class:`Graph` is computed once per workflow class (and once per instance that has steps
attached with ``@step(workflow=instance)``) and cached. It answers, in one dict lookup on the
hot path, which steps receive an event of a given concrete class: subclass matching is resolved
the first time each concrete class is seen.

Validation checks, before the first run: a step accepts the start event; a step can emit a
StopEvent; every emitted event has a taker; every accepted event has a producer (events sent
from outside, like ``HumanResponseEvent``, are exempt); all steps agree on the typed state.
Drawing and docs use :func:`workflow_graph` to list steps with their accepted and emitted
events and their resource parameters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .._public import publish
from ..data._state_types import most_derived_state_type
from ..data.events import (
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StepFailedEvent,
    StopEvent,
)
from ..errors import StateTypeError, WorkflowConfigurationError, WorkflowValidationError
from .step import ParamKind, StepParam, StepSpec

if TYPE_CHECKING:
    from .workflow import Workflow

#: Events that come from outside the workflow (a human, an API) and need no producing step.
EXTERNAL_EVENTS: tuple[type[Event], ...] = (StartEvent, HumanResponseEvent, StepFailedEvent)
#: Events meant for the caller (the stream) that need no accepting step.
CALLER_EVENTS: tuple[type[Event], ...] = (StopEvent, InputRequiredEvent)

#: What routing does with an event class besides delivering it (Graph.kind_of): nothing
#: more, end the run (a StopEvent), or also put it on the stream (an InputRequiredEvent).
PLAIN, STOP, INPUT_REQUIRED = "plain", "stop", "input required"


@dataclass(slots=True)
class Graph:
    """The compiled shape of a workflow: its steps and the event routing between them.

    Attributes:
        name: The workflow's name, used in messages.
        steps: Step specs by name, in definition order.
        order: The same specs as a tuple; routing returns indexes into it.
        start_event_class: The StartEvent (sub)class the entry step accepts.
        stop_event_classes: The StopEvent classes steps may emit.
        state_type: The typed-state model declared with ``Context[Model]``, if any.
    """

    name: str
    steps: dict[str, StepSpec]
    order: tuple[StepSpec, ...]
    start_event_class: type[StartEvent]
    stop_event_classes: tuple[type[StopEvent], ...]
    state_type: type[BaseModel] | None
    #: ``(step name, StepParam)`` of the parameters that take a nested workflow.
    nested_workflows: tuple[tuple[str, StepParam], ...] = ()
    #: Whether the event and state types were registered for decoding by name (snapshots).
    registered: bool = False
    _routes: dict[type, tuple[int, ...]] = field(default_factory=dict)
    _collectors: dict[tuple[type, ...], tuple[int, ...]] = field(default_factory=dict)
    #: ``(targets, kind)`` per routed event class (see :meth:`kind_of`).
    kinds: dict[type, tuple[tuple[int, ...], str]] = field(default_factory=dict)
    _checked: dict[frozenset[str], WorkflowValidationError | None] = field(default_factory=dict)

    def error_handler_for(self, step_name: str) -> int | None:
        """Index of the ``@catch_error`` step handling failures of ``step_name``, if any."""
        wildcard: int | None = None
        for i, spec in enumerate(self.order):
            if not spec.error_handler:
                continue
            if spec.for_steps is None:
                wildcard = i
            elif step_name in spec.for_steps:
                return i
        return wildcard

    def collectors_from(self, event_types: tuple[type, ...]) -> tuple[int, ...]:
        """Indexes of the ``list[E]`` collector steps downstream of ``event_types``."""
        found = self._collectors.get(event_types)
        if found is None:
            seen: set[type] = set()
            frontier = list(event_types)
            hits: dict[int, None] = {}
            while frontier:
                current = frontier.pop()
                if current in seen:
                    continue
                seen.add(current)
                for i in self.targets(current):
                    spec = self.order[i]
                    if spec.collects:
                        hits[i] = None
                    else:
                        frontier.extend(e for e in spec.emitted if not issubclass(e, StopEvent))
            found = tuple(hits)
            self._collectors[event_types] = found
        return found

    def targets(self, event_type: type) -> tuple[int, ...]:
        """Indexes (into :attr:`order`) of the steps that accept events of ``event_type``."""
        found = self._routes.get(event_type)
        if found is None:
            found = tuple(
                i
                for i, spec in enumerate(self.order)
                if any(issubclass(event_type, acc) for acc in spec.accepted)
            )
            self._routes[event_type] = found
        return found

    def kind_of(self, event_type: type) -> tuple[tuple[int, ...], str]:
        """The steps that take ``event_type`` and what else routing does with it (one dict
        lookup per routed event: :attr:`kinds` caches it)."""
        if issubclass(event_type, StopEvent):
            kind = STOP
        elif issubclass(event_type, InputRequiredEvent):
            kind = INPUT_REQUIRED
        else:
            kind = PLAIN
        found = self.kinds[event_type] = (self.targets(event_type), kind)
        return found

    @property
    def events(self) -> list[type[Event]]:
        """Every event class a step accepts or emits, without duplicates."""
        seen: dict[type[Event], None] = {}
        for spec in self.order:
            for ev in (*spec.accepted, *spec.emitted):
                seen[ev] = None
        return list(seen)

    @property
    def uses_hitl(self) -> bool:
        """Whether a step accepts or emits human-in-the-loop events."""
        return any(issubclass(ev, InputRequiredEvent | HumanResponseEvent) for ev in self.events)

    def validate(self, skip: frozenset[str] = frozenset()) -> None:
        """Raise the first problem found (cached: the checks run once per graph).

        Args:
            skip: Checks to leave out: ``"terminal_event"`` (an emitted event no step
                accepts), ``"reachability"`` (an accepted event no step produces);
                ``"dead_end"`` is accepted for compatibility.

        Raises:
            WorkflowValidationError: The message names the step and event and says the fix.
        """
        if skip in self._checked:
            problem = self._checked[skip]
            if problem is not None:
                raise problem
            return
        try:
            _check(self, skip)
        except WorkflowValidationError as exc:
            self._checked[skip] = exc
            raise
        self._checked[skip] = None


def _names(types_: Iterable[type]) -> str:
    return ", ".join(t.__name__ for t in types_)


def check_entry_and_exit(graph: Graph) -> None:
    """Check the workflow has one StartEvent class it accepts and one StopEvent class it emits.

    LlamaIndex checks this when the workflow is created (``Workflow()``), before any run.

    Raises:
        WorkflowConfigurationError: No step accepts a StartEvent (or returns a StopEvent), or
            steps use several StartEvent (or StopEvent) classes.
    """
    name = graph.name
    starts = list(dict.fromkeys(a for s in graph.order for a in s.accepted if _is(a, StartEvent)))
    if not starts:
        raise WorkflowConfigurationError(
            "At least one Event of type StartEvent must be received by any step. "
            f"(Workflow '{name}' has no @step that accepts StartEvent.) Add a step whose event "
            "parameter is annotated StartEvent (or a subclass)."
        )
    if len(starts) > 1:
        raise WorkflowConfigurationError(
            f"Only one type of StartEvent is allowed per workflow, found {len(starts)}: "
            f"{_names(starts)} in workflow '{name}'. Use one StartEvent class for the "
            "workflow's entry steps."
        )
    stops = list(dict.fromkeys(e for s in graph.order for e in s.emitted if _is(e, StopEvent)))
    if not stops:
        raise WorkflowConfigurationError(
            "At least one Event of type StopEvent must be returned by any step. "
            f"(Workflow '{name}' has no @step that returns StopEvent.) Add StopEvent (or a "
            "subclass) to the return annotation of the step that finishes the run."
        )
    if len(stops) > 1:
        raise WorkflowConfigurationError(
            f"Only one type of StopEvent is allowed per workflow, found {len(stops)}: "
            f"{_names(stops)} in workflow '{name}'. Use one StopEvent class for the "
            "workflow's result."
        )


def _is(event_type: type, base: type | tuple[type, ...]) -> bool:
    return issubclass(event_type, base)


def _check(graph: Graph, skip: frozenset[str]) -> None:
    # The order is LlamaIndex's: no steps, entry and exit, event connectivity, error handlers,
    # then the graph checks, which are reported together in one error.
    name = graph.name
    specs = graph.order
    if not specs:
        raise WorkflowConfigurationError(
            f"Workflow '{name}' has no configured steps. Did you forget to annotate methods "
            "with @step or to register free-function steps via @step(workflow=...)?"
        )
    check_entry_and_exit(graph)
    _check_connectivity(graph, skip)
    _check_error_handlers(graph)
    problems = _graph_problems(graph, skip)
    if problems:
        raise WorkflowValidationError(
            "Graph validation failed:\n"
            + "\n".join(f"  - [{check}] {message}\n    {hint}" for check, message, hint in problems)
        )
    # Models of one inheritance chain are fine (the most derived one is the state).
    most_derived_state_type(((s.name, s.state_type) for s in specs if s.state_type), name)


def _skips_reachability(spec: StepSpec, skip: frozenset[str]) -> bool:
    return "reachability" in skip or "reachability" in spec.skip_graph_checks


def _check_connectivity(graph: Graph, skip: frozenset[str]) -> None:
    specs = graph.order
    stop_takers = [s.name for s in specs if any(_is(a, StopEvent) for a in s.accepted)]
    if stop_takers:
        plural = "" if len(stop_takers) == 1 else "s"
        quoted = "', '".join(stop_takers)
        raise WorkflowValidationError(
            f"Step{plural} '{quoted}' cannot accept StopEvent. StopEvent "
            "signals the end of the workflow. Use a different Event type instead: return a "
            "new event class from the step that finishes its part and accept that."
        )
    emitted = {e for s in specs for e in s.emitted}
    # An event is produced when a step may return (or send) it or one of its subclasses.
    unproduced: dict[type[Event], list[str]] = {}
    for spec in specs:
        if _skips_reachability(spec, skip):
            continue
        for acc in spec.accepted:
            if _is(acc, EXTERNAL_EVENTS) or any(_is(e, acc) for e in emitted):
                continue
            unproduced.setdefault(acc, []).append(spec.name)
    if unproduced:
        raise WorkflowValidationError(
            "The following events are consumed but never produced: "
            f"{_names(unproduced)}. Add "
            + "; ".join(
                f"{ev.__name__} (taken by {', '.join(takers)})" for ev, takers in unproduced.items()
            )
            + " to the return annotation of the step that returns or sends it (ctx.send_event "
            "events are declared there too), or pass skip_graph_checks=['reachability'] to the "
            "@step that takes it when it is sent from outside the workflow."
        )
    if "terminal_event" in skip:
        return
    accepted = {a for s in specs for a in s.accepted}
    unconsumed: dict[type[Event], list[str]] = {}
    for spec in specs:
        for ev in spec.emitted:
            if _is(ev, CALLER_EVENTS) or any(_is(ev, a) for a in accepted):
                continue
            unconsumed.setdefault(ev, []).append(spec.name)
    if unconsumed:
        raise WorkflowValidationError(
            f"The following events are produced but never consumed: {_names(unconsumed)}. "
            + " ".join(
                f"Add a step that takes `ev: {ev.__name__}`, or remove {ev.__name__} from the "
                f"return annotation of {', '.join(producers)}."
                for ev, producers in unconsumed.items()
            )
        )


def _graph_problems(graph: Graph, skip: frozenset[str]) -> list[tuple[str, str, str]]:
    """``(check, message, hint)`` of every failing graph check (LlamaIndex's wording first)."""
    specs = graph.order
    problems: list[tuple[str, str, str]] = []
    takers: dict[type, list[StepSpec]] = {}
    for ev in {e for s in specs for e in s.emitted}:
        takers[ev] = [s for s in specs if any(_is(ev, a) for a in s.accepted)]
    if "reachability" not in skip:
        # Forward from what enters from outside: the start event, human answers, failures.
        seen: set[str] = set()
        frontier = [s for s in specs if any(_is(a, EXTERNAL_EVENTS) for a in s.accepted)]
        while frontier:
            spec = frontier.pop()
            if spec.name in seen:
                continue
            seen.add(spec.name)
            for ev in spec.emitted:
                frontier.extend(takers[ev])
        unreachable = sorted(
            s.name for s in specs if s.name not in seen and not _skips_reachability(s, skip)
        )
        if unreachable:
            problems.append(
                (
                    "reachability",
                    f"Unreachable steps: {', '.join(unreachable)}",
                    "Steps must be reachable from StartEvent or HumanResponseEvent: return "
                    "the event they take from a reachable step, or give them "
                    "skip_graph_checks=['reachability'] when it is sent from outside.",
                )
            )
    if "dead_end" not in skip:
        # Backward from what leaves the workflow: the StopEvent and requests for input.
        ends: set[str] = set()
        changed = True
        while changed:
            changed = False
            for spec in specs:
                if spec.name in ends:
                    continue
                if any(
                    _is(ev, CALLER_EVENTS) or any(t.name in ends for t in takers[ev])
                    for ev in spec.emitted
                ):
                    ends.add(spec.name)
                    changed = True
        dead = sorted(
            s.name
            for s in specs
            if s.emitted and s.name not in ends and "dead_end" not in s.skip_graph_checks
        )
        if dead:
            problems.append(
                (
                    "dead_end",
                    f"Dead-end steps: {', '.join(dead)}",
                    "Steps must have a path to StopEvent or InputRequiredEvent: make one of "
                    "the steps they lead to return a StopEvent, or give them "
                    "skip_graph_checks=['dead_end'].",
                )
            )
    return problems


def _check_error_handlers(graph: Graph) -> None:
    problems = catch_error_problems(graph)
    if problems:
        raise WorkflowValidationError("\n".join(problems))


def catch_error_problems(graph: Graph) -> list[str]:
    """What is wrong with the workflow's ``@catch_error`` steps, one message per problem.

    The first sentence of each message is LlamaIndex's (people search for it), the rest says
    what to do.
    """
    problems: list[str] = []
    handlers = [s for s in graph.order if s.error_handler]
    handler_names = {s.name for s in handlers}
    wildcards = sorted(s.name for s in handlers if s.for_steps is None)
    if len(wildcards) > 1:
        problems.append(
            "Only one wildcard @catch_error handler is allowed per workflow, found "
            f"{len(wildcards)}: {', '.join(wildcards)}. Keep one handler without for_steps in "
            f"{graph.name} and give the others for_steps=[...]."
        )
    claimed: dict[str, str] = {}
    for handler in handlers:
        if handler.accepted != (StepFailedEvent,):
            problems.append(
                f"@catch_error handler '{handler.name}' must accept StepFailedEvent as its event "
                "parameter. Annotate it `ev: StepFailedEvent` (and only that type)."
            )
        if handler.max_recoveries < 1:
            problems.append(
                f"@catch_error handler '{handler.name}' has "
                f"max_recoveries={handler.max_recoveries!r}; must be an integer >= 1. Pass "
                "max_recoveries=1 or more."
            )
        for name in handler.for_steps or ():
            if name not in graph.steps:
                steps = ", ".join(n for n in graph.steps if n not in handler_names)
                problems.append(
                    f"@catch_error handler '{handler.name}' lists unknown step '{name}' in "
                    f"for_steps. Name steps of {graph.name}: {steps}."
                )
            elif name in handler_names:
                problems.append(
                    f"@catch_error handler '{handler.name}' cannot cover another handler step "
                    f"'{name}'. A failing handler fails the run; remove '{name}' from its "
                    "for_steps."
                )
            elif name in claimed:
                problems.append(
                    f"Step '{name}' is claimed by two @catch_error handlers: '{claimed[name]}' "
                    f"and '{handler.name}'. Name it in one handler's for_steps only."
                )
            else:
                claimed[name] = handler.name
    return problems


def compile_graph(name: str, specs: Iterable[StepSpec]) -> Graph:
    """Build the :class:`Graph` of the given step specs (no validation yet)."""
    order = tuple(specs)
    starts = [acc for s in order for acc in s.accepted if issubclass(acc, StartEvent)]
    stops = [e for s in order for e in s.emitted if issubclass(e, StopEvent)]
    try:
        state_type = most_derived_state_type(
            ((s.name, s.state_type) for s in order if s.state_type), name
        )
    except StateTypeError:
        state_type = None  # reported by validate_graph
    return Graph(
        name=name,
        steps={s.name: s for s in order},
        order=order,
        start_event_class=starts[0] if starts else StartEvent,
        stop_event_classes=tuple(dict.fromkeys(stops)) or (StopEvent,),
        state_type=state_type,
        nested_workflows=tuple(
            (s.name, p) for s in order for p in s.params if p.kind is ParamKind.WORKFLOW
        ),
    )


@dataclass(frozen=True, slots=True)
class StepShape:
    """One step as drawing tools see it.

    Attributes:
        name: Step name.
        accepts: Event classes the step accepts.
        emits: Event classes the step may return or send.
        resources: ``(parameter name, Resource descriptor)`` pairs.
        num_workers: Concurrency bound of the step.
        workflows: ``(parameter name, Workflow class)`` of the nested workflows it takes
            (``Workflow.add_workflows``).
        children: The workflow classes it runs as child runs (``@step(children=...)``).
    """

    name: str
    accepts: tuple[type[Event], ...]
    emits: tuple[type[Event], ...]
    resources: tuple[tuple[str, Any], ...]
    num_workers: int
    workflows: tuple[tuple[str, type], ...] = ()
    children: tuple[type, ...] = ()


def workflow_graph(workflow: Workflow | type[Workflow]) -> Mapping[str, StepShape]:
    """The steps of a workflow (class or instance) with what they accept, emit and inject.

    Args:
        workflow: A ``Workflow`` subclass or instance (instances include attached steps).

    Returns:
        Step shapes by step name, in definition order.
    """
    graph = workflow._class_graph() if isinstance(workflow, type) else workflow._graph()
    return {
        s.name: StepShape(
            s.name,
            s.accepted,
            s.emitted,
            s.resources,
            s.num_workers,
            tuple((p.name, p.annotation) for p in s.params if p.kind is ParamKind.WORKFLOW),
            s.children,
        )
        for s in graph.order
    }


__all__ = [
    "CALLER_EVENTS",
    "EXTERNAL_EVENTS",
    "Graph",
    "StepShape",
    "check_entry_and_exit",
    "compile_graph",
    "workflow_graph",
]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
