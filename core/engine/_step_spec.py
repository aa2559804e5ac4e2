"""What a step's signature says, read into a :class:`StepSpec`.

The event parameter's annotation (a union is allowed) is what the step accepts; the return
annotation is what it may emit (``None`` means nothing); a parameter annotated ``Context`` (or
``Context[MyState]``) receives the run's context; a parameter annotated
``Annotated[T, Resource(factory)]`` receives a resource; a ``Collect`` parameter gathers events.

Annotations are read with ``typing.get_type_hints(include_extras=True)``, so
``from __future__ import annotations`` works. A name that is not defined yet when the decorator
runs (a forward reference) is resolved later, when the workflow class is first used.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin

from pydantic import BaseModel

from ..data.events import Event
from ..errors import WorkflowValidationError
from .collect import All, Collect, Take
from .resource import Resource, ResourceConfig

if TYPE_CHECKING:
    from ..retrying.retry import AnyRetryPolicy

#: The attribute ``@step`` sets on a function: its :class:`StepOptions`.
STEP_ATTR = "__batonflow_step__"


class ParamKind(Enum):
    """What the run loop passes to one parameter of a step.

    ``Context`` and ``Workflow`` name their kind in a class attribute, ``_step_parameter``
    (Context's own, not inherited; Workflow's inherited by every workflow class): both build on
    this module (a workflow reads its steps' specs, a Context runs them), so it cannot import
    them to compare.
    """

    CONTEXT = "context"  # the run's Context
    EVENT = "event"  # the triggering event
    COLLECTION = "collection"  # list[E]: the events of a collection stream
    RESOURCE = "resource"  # a resource resolved by the workflow's ResourceManager
    WORKFLOW = "workflow"  # a nested workflow added with Workflow.add_workflows (by name)


@dataclass(frozen=True, slots=True)
class StepOptions:
    """What was given to ``@step(...)``, kept on the function until the workflow reads it."""

    num_workers: int
    retry_policy: AnyRetryPolicy | None
    timeout: float | None
    localns: dict[str, Any] | None
    skip_graph_checks: frozenset[str] = frozenset()
    error_handler: bool = False
    for_steps: tuple[str, ...] | None = None
    max_recoveries: int = 1
    children: tuple[type, ...] = ()


@dataclass(frozen=True, slots=True)
class StepParam:
    """One parameter of a step (``self`` excluded), in call order."""

    name: str
    kind: ParamKind
    resource: Any = None  # RESOURCE: the Resource/ResourceConfig; WORKFLOW: the default
    positional: bool = True
    annotation: Any = None  # the T of Annotated[T, Resource(...)]
    event_types: tuple[type[Event], ...] = ()  # what an EVENT parameter accepts
    #: RESOURCE: names local to where the step was defined, for the factories' own postponed
    #: annotations (see ``resource_params``).
    localns: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class StepSpec:
    """Everything the engine knows about one step, computed once per workflow class.

    Attributes:
        name: The step's name (the method or function name).
        func: The undecorated function.
        accepted: The event classes the step accepts.
        emitted: The event classes its return annotation names (empty for ``-> None``).
        params: The parameters (``self`` excluded), in call order.
        state_type: The model of ``Context[Model]`` when the step declares typed state.
        has_self: Whether ``func`` is a method taking ``self``.
        is_async: Whether ``func`` is a coroutine function (sync steps run in a thread).
        num_workers: How many executions of this step may run at once within one run.
        retry_policy: The policy consulted when an attempt raises, if any.
        timeout: Seconds one attempt may take, or ``None``.
        has_resources: Whether any parameter is a resource (or a nested workflow).
        skip_graph_checks: Validation checks not applied to this step (``"reachability"``).
        error_handler: Whether this is a ``@catch_error`` step.
        for_steps: The steps it handles (``None``: every step without a scoped handler).
        max_recoveries: How many recoveries it may make along one lineage of events.
        join: The event parameters, when there are several: the step then runs once per full
            set (one event for each), receiving a :class:`JoinedEvents` as its input event.
        collects: Whether the step takes a ``list[E]`` collection parameter.
        collect_take: ``n`` of ``Collect(Take(n))``; ``None`` for ``All()``.
        children: The workflow classes it runs as child runs (``@step(children=...)``), drawn
            nested in the workflow's drawing.
    """

    name: str
    func: Callable[..., Any]
    accepted: tuple[type[Event], ...]
    emitted: tuple[type[Event], ...]
    params: tuple[StepParam, ...]
    state_type: type[BaseModel] | None
    has_self: bool
    is_async: bool
    num_workers: int = 4
    retry_policy: AnyRetryPolicy | None = None
    timeout: float | None = None
    has_resources: bool = False
    skip_graph_checks: frozenset[str] = frozenset()
    error_handler: bool = False
    for_steps: tuple[str, ...] | None = None
    max_recoveries: int = 1
    join: tuple[str, ...] = ()
    collect_take: int | None = None
    children: tuple[type, ...] = ()
    collects: bool = False

    @property
    def resources(self) -> tuple[tuple[str, Any], ...]:
        """``(parameter name, Resource descriptor)`` pairs of the step's resource parameters."""
        return tuple((p.name, p.resource) for p in self.params if p.kind is ParamKind.RESOURCE)

    @property
    def context_param(self) -> str | None:
        """The name of the parameter that receives the Context, if any."""
        for p in self.params:
            if p.kind is ParamKind.CONTEXT:
                return p.name
        return None


def _resolve_hints(fn: Callable[..., Any], localns: dict[str, Any] | None) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, localns=localns, include_extras=True)
    except NameError as exc:
        missing = getattr(exc, "name", None)
        name = getattr(fn, "__qualname__", repr(fn))
        raise WorkflowValidationError(
            f"Failed to resolve type annotations for {name}."
            + (f" Missing name: {missing}." if missing else f" ({exc}).")
            + " If you are using 'from __future__ import annotations' or string annotations, "
            "ensure referenced names are available in module scope or in the scope where the "
            "@step decorator is applied: define or import them before the workflow class."
        ) from exc


def check_annotations_present(fn: Callable[..., Any]) -> None:
    sig = inspect.signature(fn)
    name = fn.__name__
    for index, param in enumerate(sig.parameters.values()):
        if index == 0 and param.name == "self":
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise WorkflowValidationError(
                f"Step {name} has a *{param.name} parameter; steps take an event parameter, "
                "optionally a Context and resources. Remove the variadic parameter."
            )
        if param.annotation is inspect.Parameter.empty:
            raise WorkflowValidationError(
                f"Step {name} parameter '{param.name}' has no type annotation. Annotate it with "
                f"the event type it accepts (e.g. `{param.name}: StartEvent`), `Context`, or "
                "`Annotated[T, Resource(factory)]`."
            )
    if sig.return_annotation is inspect.Signature.empty:
        raise WorkflowValidationError(
            "Return types of workflows step functions must be annotated with their type. "
            f"Step {name} has no return annotation. Annotate the events it returns, e.g. "
            "`-> StopEvent`, `-> MyEvent | None`, or `-> None` when it returns nothing."
        )


def _event_types(annotation: Any) -> tuple[list[type[Event]], list[Any], bool]:
    """Split an annotation into event classes, other members, and whether None is in it."""
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        members = list(get_args(annotation))
    else:
        members = [annotation]
    events: list[type[Event]] = []
    others: list[Any] = []
    has_none = False
    for member in members:
        if member is None or member is type(None):
            has_none = True
        elif isinstance(member, type) and issubclass(member, Event):
            events.append(member)
        else:
            others.append(member)
    return events, others, has_none


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__name__
    return repr(annotation).replace("typing.", "")


def _resource_marker(annotation: Any) -> Any:
    if get_origin(annotation) is not typing.Annotated:
        return None
    for meta in annotation.__metadata__:
        if isinstance(meta, Resource | ResourceConfig):
            return meta
    return None


def build_spec(fn: Callable[..., Any], name: str) -> StepSpec:
    """Read a decorated function's signature into a :class:`StepSpec`.

    Raises:
        WorkflowValidationError: The signature does not describe a valid step, or an
            annotation names something that is not defined.
    """
    options: StepOptions = getattr(fn, STEP_ATTR)
    check_annotations_present(fn)
    hints = _resolve_hints(fn, options.localns)
    sig = inspect.signature(fn)
    params: list[StepParam] = []
    accepted: tuple[type[Event], ...] = ()
    event_params: list[str] = []
    collect_param: str | None = None
    collect_take: int | None = None
    state_type: type[BaseModel] | None = None
    has_self = False
    for index, param in enumerate(sig.parameters.values()):
        if index == 0 and param.name == "self":
            has_self = True
            continue
        positional = param.kind is not param.KEYWORD_ONLY
        ann = hints.get(param.name, param.annotation)
        marker = _resource_marker(ann)
        if marker is not None:
            params.append(
                StepParam(
                    param.name,
                    ParamKind.RESOURCE,
                    marker,
                    positional,
                    get_args(ann)[0],
                    localns=options.localns,
                )
            )
            continue
        collect_marker = None
        if get_origin(ann) is typing.Annotated:
            collect_marker = next((m for m in ann.__metadata__ if isinstance(m, Collect)), None)
            ann = get_args(ann)[0]
        if get_origin(ann) is list:
            inner, bad, _ = _event_types(get_args(ann)[0]) if get_args(ann) else ([], [1], False)
            if bad or not inner:
                raise WorkflowValidationError(
                    f"Step {name} parameter '{param.name}' is annotated {_type_name(ann)}; a "
                    "collection parameter is list[E] with E an Event subclass."
                )
            if collect_param is not None or event_params:
                raise WorkflowValidationError(
                    f"Step {name} mixes a list[...] collection parameter with other event "
                    "parameters. Give the collection join a step of its own."
                )
            collect_param = param.name
            card = collect_marker.cardinality if collect_marker is not None else All()
            collect_take = card.n if isinstance(card, Take) else None
            accepted = tuple(dict.fromkeys(inner))
            params.append(
                StepParam(
                    param.name, ParamKind.COLLECTION, None, positional, event_types=tuple(inner)
                )
            )
            continue
        owner = get_origin(ann) or ann
        if getattr(owner, "__dict__", {}).get("_step_parameter") is ParamKind.CONTEXT:
            # Context or Context[Model] (a subclass of Context says nothing of its own)
            args = get_args(ann)
            if args and isinstance(args[0], type) and issubclass(args[0], BaseModel):
                state_type = args[0]
            elif args:
                raise WorkflowValidationError(
                    f"Step {name} annotates '{param.name}' as Context[{_type_name(args[0])}]; "
                    "the state type must be a pydantic BaseModel whose fields all have defaults."
                )
            params.append(StepParam(param.name, ParamKind.CONTEXT, None, positional))
            continue
        if isinstance(ann, type) and getattr(ann, "_step_parameter", None) is ParamKind.WORKFLOW:
            # A nested workflow (LlamaIndex's removed service injection): the instance added
            # with add_workflows(<parameter name>=...), else the parameter's default.
            default = None if param.default is inspect.Parameter.empty else param.default
            params.append(StepParam(param.name, ParamKind.WORKFLOW, default, positional, ann))
            continue
        events, others, _ = _event_types(ann)
        if others or not events:
            raise WorkflowValidationError(
                f"Step {name} parameter '{param.name}' is annotated {_type_name(ann)}, which is "
                "not an Event. Annotate it with an Event subclass (or a union of them), "
                "`Context`, or `Annotated[T, Resource(factory)]`."
            )
        if collect_param is not None:
            raise WorkflowValidationError(
                f"Step {name} mixes a list[...] collection parameter with other event "
                "parameters. Give the collection join a step of its own."
            )
        event_params.append(param.name)
        accepted = tuple(dict.fromkeys((*accepted, *events)))
        params.append(
            StepParam(param.name, ParamKind.EVENT, None, positional, event_types=tuple(events))
        )
    if not event_params and collect_param is None:
        raise WorkflowValidationError(
            "Step signature must have at least one parameter annotated as type Event. "
            f"Step {name} has no event parameter. Add one annotated with the event it "
            "accepts, e.g. `ev: StartEvent`."
        )
    ret = hints.get("return", sig.return_annotation)
    emitted: tuple[type[Event], ...] = ()
    if ret is not None and ret is not type(None):
        events, others, _ = _event_types(ret)
        # `-> list[E]` (or a union containing it) fans out: each element is emitted.
        for other in list(others):
            if get_origin(other) is list and get_args(other):
                inner, bad, _ = _event_types(get_args(other)[0])
                if inner and not bad:
                    events.extend(inner)
                    others.remove(other)
        if others:
            raise WorkflowValidationError(
                f"Step {name} return annotation {_type_name(ret)} names "
                f"{', '.join(_type_name(o) for o in others)}, which is not an Event. A step "
                "returns an Event subclass, a union of them, or None."
            )
        emitted = tuple(dict.fromkeys(events))
    return StepSpec(
        name=name,
        func=fn,
        accepted=accepted,
        emitted=emitted,
        params=tuple(params),
        state_type=state_type,
        has_self=has_self,
        is_async=inspect.iscoroutinefunction(fn),
        num_workers=options.num_workers,
        retry_policy=options.retry_policy,
        timeout=options.timeout,
        has_resources=any(p.kind in (ParamKind.RESOURCE, ParamKind.WORKFLOW) for p in params),
        skip_graph_checks=options.skip_graph_checks,
        error_handler=options.error_handler,
        for_steps=options.for_steps,
        max_recoveries=options.max_recoveries,
        join=tuple(event_params) if len(event_params) > 1 else (),
        collects=collect_param is not None,
        collect_take=collect_take,
        children=options.children,
    )
