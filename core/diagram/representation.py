"""A workflow as data: the graph of its steps, events, resources and the outside world.

:func:`get_workflow_representation` turns a workflow (class or instance) into a
:class:`WorkflowGraph`: plain frozen records that the drawing functions render, that
``batonflow draw`` prints and that the HTTP server returns as JSON (:meth:`WorkflowGraph.to_dict`).

The graph alternates steps and events: an edge goes from an event to each step that accepts
it (or one of its base classes, as the engine routes it) and from each step to every event its
return annotation names. Around that core:

* the start and stop events are event nodes with ``role`` ``"start"`` / ``"stop"``;
* one :class:`WorkflowExternalNode` (id ``"external"``) stands for whatever is outside the run
  (a human, an HTTP client): ``InputRequiredEvent`` goes to it, ``HumanResponseEvent`` comes
  from it, and so does any accepted event no step produces (sent with ``ctx.send_event`` or
  ``handler.send_event``);
* each resource factory and resource config is a node with an edge to the steps it is injected
  into, labelled with the parameter name (and to the resources that depend on it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, TypeAlias

from .._public import publish
from ..data.events import Event, InputRequiredEvent, StartEvent, StopEvent
from ..engine.graph import workflow_graph
from ..engine.resource import Resource, ResourceConfig
from ..engine.workflow import Workflow
from ._naming import EventRole as EventRole
from ._naming import event_ids as _event_ids
from ._naming import event_lineage as _event_lineage
from ._naming import first_line as _first_line
from ._naming import return_type_name as _return_type_name
from ._naming import role as _role

EXTERNAL_ID = "external"


@dataclass(frozen=True, slots=True)
class WorkflowStepNode:
    """A step (a function decorated with ``@step``).

    Attributes:
        id: Unique node id (``"step:<name>"``).
        label: The step name.
        description: The first line of the step's docstring, if any.
        num_workers: How many executions of the step may run at once.
    """

    id: str
    label: str
    description: str | None = None
    num_workers: int | None = None
    node_type: Literal["step"] = field(default="step", init=False)


@dataclass(frozen=True, slots=True)
class WorkflowEventNode:
    """An event class that flows between steps.

    Attributes:
        id: Unique node id (``"event:<class name>"``).
        label: The class name.
        event_type: The class name.
        qualified_name: ``module.QualName`` of the class.
        event_types: The class and its Event base classes, most specific first.
        role: ``"start"``, ``"stop"``, ``"input_required"``, ``"human_response"`` or ``"event"``.
        produced_by: Names of the steps whose return annotation names it.
        consumed_by: Names of the steps that accept it.
    """

    id: str
    label: str
    event_type: str
    qualified_name: str
    event_types: tuple[str, ...] = ()
    role: EventRole = "event"
    produced_by: tuple[str, ...] = ()
    consumed_by: tuple[str, ...] = ()
    node_type: Literal["event"] = field(default="event", init=False)


@dataclass(frozen=True, slots=True)
class WorkflowExternalNode:
    """The world outside the run: a human or a client that receives and sends events."""

    id: str
    label: str
    node_type: Literal["external"] = field(default="external", init=False)


@dataclass(frozen=True, slots=True)
class WorkflowResourceNode:
    """A resource factory (``Annotated[T, Resource(factory)]``) injected into steps.

    Attributes:
        id: Unique node id (``"resource:<factory qualified name>"``).
        label: The factory's name.
        type_name: The annotated type of the parameter, when known.
        getter_name: The factory's qualified name.
        cache: Whether one object is shared (``True``) or a new one made per injection.
        description: The first line of the factory's docstring, if any.
    """

    id: str
    label: str
    type_name: str | None = None
    getter_name: str | None = None
    cache: bool = True
    description: str | None = None
    node_type: Literal["resource"] = field(default="resource", init=False)


@dataclass(frozen=True, slots=True)
class WorkflowResourceConfigNode:
    """A configuration model loaded from a JSON file (``ResourceConfig``).

    Attributes:
        id: Unique node id (``"config:<file>[:<path>]"``).
        label: The config's label, or its file and path.
        type_name: The pydantic model the file is validated into, when known.
        config_file: The JSON file.
        path_selector: The dotted path inside the file, if any.
        description: The config's description, if any.
    """

    id: str
    label: str
    type_name: str | None = None
    config_file: str | None = None
    path_selector: str | None = None
    description: str | None = None
    node_type: Literal["resource_config"] = field(default="resource_config", init=False)


@dataclass(frozen=True, slots=True)
class WorkflowGenericNode:
    """A node of any other kind (agents, tools, sub-workflows) for custom drawings."""

    id: str
    label: str
    node_type: str = "generic"
    description: str | None = None


WorkflowGraphNode: TypeAlias = (
    WorkflowStepNode
    | WorkflowEventNode
    | WorkflowExternalNode
    | WorkflowResourceNode
    | WorkflowResourceConfigNode
    | WorkflowGenericNode
)
_NODE_CLASSES: dict[str, type[Any]] = {
    "step": WorkflowStepNode,
    "event": WorkflowEventNode,
    "external": WorkflowExternalNode,
    "resource": WorkflowResourceNode,
    "resource_config": WorkflowResourceConfigNode,
}


@dataclass(frozen=True, slots=True)
class WorkflowGraphEdge:
    """A directed edge; resource edges carry the parameter name as ``label``."""

    source: str
    target: str
    label: str | None = None


@dataclass(frozen=True, slots=True)
class WorkflowGraph:
    """A workflow's nodes and edges, in a stable order (steps in definition order).

    Attributes:
        name: The workflow's name (its class name).
        nodes: Every node.
        edges: Every edge.
        description: The first line of the workflow's docstring, if any.
    """

    name: str
    nodes: tuple[WorkflowGraphNode, ...]
    edges: tuple[WorkflowGraphEdge, ...]
    description: str | None = None

    def node(self, node_id: str) -> WorkflowGraphNode:
        """The node with id ``node_id``.

        Raises:
            KeyError: No such node; the message lists the ids there are.
        """
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(
            f"{self.name} has no node {node_id!r}; its nodes are "
            f"{', '.join(n.id for n in self.nodes)}."
        )

    @property
    def steps(self) -> tuple[WorkflowStepNode, ...]:
        """The step nodes, in definition order."""
        return tuple(n for n in self.nodes if isinstance(n, WorkflowStepNode))

    @property
    def events(self) -> tuple[WorkflowEventNode, ...]:
        """The event nodes."""
        return tuple(n for n in self.nodes if isinstance(n, WorkflowEventNode))

    def event_node(self, event_type: str) -> WorkflowEventNode | None:
        """The event node for the class named ``event_type``, or ``None``."""
        for n in self.events:
            if event_type in (n.event_type, n.qualified_name):
                return n
        return None

    def filter_by_node_type(self, *node_types: str) -> WorkflowGraph:
        """A simpler graph without the nodes of the given types, keeping connections.

        An edge path through removed nodes becomes one edge: ``step -> JokeEvent -> step``
        turns into ``step -> step`` when ``"event"`` is filtered out.

        Args:
            *node_types: Node types to remove (``"event"``, ``"resource"``, ``"external"``...).

        Returns:
            The filtered graph (edges labelled by the first hop's label).
        """
        gone = {n.id for n in self.nodes if n.node_type in node_types}
        out: dict[str, list[WorkflowGraphEdge]] = {}
        for e in self.edges:
            out.setdefault(e.source, []).append(e)
        edges: dict[tuple[str, str], WorkflowGraphEdge] = {}
        for e in self.edges:
            if e.source in gone:
                continue
            # Follow the edge through removed nodes to every kept node it reaches.
            stack, seen = [e.target], {e.target}
            while stack:
                here = stack.pop()
                if here not in gone:
                    edges.setdefault((e.source, here), WorkflowGraphEdge(e.source, here, e.label))
                    continue
                for nxt in out.get(here, []):
                    if nxt.target not in seen:
                        seen.add(nxt.target)
                        stack.append(nxt.target)
        kept = tuple(n for n in self.nodes if n.id not in gone)
        return WorkflowGraph(self.name, kept, tuple(edges.values()), self.description)

    def to_dict(self) -> dict[str, Any]:
        """The graph as JSON-ready data (lists and dicts of str, int, bool and None)."""
        return {
            "name": self.name,
            "description": self.description,
            "nodes": [_record_dict(n) for n in self.nodes],
            "edges": [_record_dict(e) for e in self.edges],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkflowGraph:
        """Rebuild a graph from :meth:`to_dict` output.

        Raises:
            ValueError: The data is not a graph dict (the message says what is wrong).
        """
        try:
            nodes = tuple(_node_from_dict(n) for n in data["nodes"])
            edges = tuple(WorkflowGraphEdge(**e) for e in data["edges"])
            return cls(str(data["name"]), nodes, edges, data.get("description"))
        except (KeyError, TypeError) as exc:
            raise ValueError(
                f"Not a workflow graph dict ({type(exc).__name__}: {exc}); pass the output of "
                "WorkflowGraph.to_dict()."
            ) from exc


def _record_dict(record: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(record):
        value = getattr(record, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def _node_from_dict(data: Mapping[str, Any]) -> WorkflowGraphNode:
    kind = data.get("node_type", "generic")
    node_cls = _NODE_CLASSES.get(kind)
    args: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
    if node_cls is None:
        return WorkflowGenericNode(**args)
    args.pop("node_type", None)
    node: WorkflowGraphNode = node_cls(**args)
    return node


# -- reading the workflow (the one place that knows the engine's step records) -----------------


@dataclass(frozen=True, slots=True)
class StepView:
    """What drawing needs to know about one step.

    Attributes:
        name: The step name.
        accepts: Event classes the step accepts.
        emits: Event classes the step may return or send.
        resources: ``(parameter name, Resource or ResourceConfig)`` pairs.
        description: First docstring line, if any.
        num_workers: Concurrency bound, if known.
        workflows: ``(parameter name, Workflow class)`` of the nested workflows it takes.
        children: The workflow classes it runs as child runs (``@step(children=...)``).
    """

    name: str
    accepts: tuple[type[Event], ...]
    emits: tuple[type[Event], ...]
    resources: tuple[tuple[str, Any], ...] = ()
    description: str | None = None
    num_workers: int | None = None
    workflows: tuple[tuple[str, type], ...] = ()
    children: tuple[type, ...] = ()


def read_steps(workflow_or_class: Any) -> tuple[str, str | None, tuple[StepView, ...]]:
    """The workflow's name, description and steps, read from the engine.

    Args:
        workflow_or_class: A ``Workflow`` subclass or instance.

    Returns:
        ``(name, description, steps)``.

    Raises:
        TypeError: ``workflow_or_class`` is not a workflow.
    """
    is_class = isinstance(workflow_or_class, type) and issubclass(workflow_or_class, Workflow)
    if not (is_class or isinstance(workflow_or_class, Workflow)):
        raise TypeError(
            f"Expected a Workflow subclass or instance, got {workflow_or_class!r}; pass the "
            "workflow class (e.g. JokeFlow) or an instance (JokeFlow())."
        )
    cls = workflow_or_class if is_class else type(workflow_or_class)
    shapes = workflow_graph(workflow_or_class)
    views = []
    for shape in shapes.values():
        func = getattr(cls, shape.name, None)
        views.append(
            StepView(
                shape.name,
                tuple(shape.accepts),
                tuple(shape.emits),
                tuple(shape.resources),
                _first_line(getattr(func, "__doc__", None)),
                shape.num_workers,
                tuple(shape.workflows),
                tuple(shape.children),
            )
        )
    return cls.__name__, _first_line(cls.__doc__), tuple(views)


def get_workflow_representation(workflow_or_class: Any) -> WorkflowGraph:
    """The graph of a workflow as data.

    Args:
        workflow_or_class: A ``Workflow`` subclass, or an instance (which includes steps
            attached with ``@step(workflow=instance)``).

    Returns:
        The :class:`WorkflowGraph`: steps, events, the external node when events cross the
        run's boundary, and resources.

    Raises:
        TypeError: ``workflow_or_class`` is not a workflow.
    """
    name, description, steps = read_steps(workflow_or_class)
    return build_graph(name, steps, description)


def build_graph(
    name: str, steps: Sequence[StepView], description: str | None = None
) -> WorkflowGraph:
    """Build the :class:`WorkflowGraph` of the given steps (see the module docstring).

    Args:
        name: The workflow's name.
        steps: The steps, in definition order.
        description: A one-line description.

    Returns:
        The graph.
    """
    event_classes: dict[type[Event], None] = {}
    for s in steps:
        for ev in (*s.accepts, *s.emits):
            event_classes[ev] = None
    ids = _event_ids(event_classes)
    produced = [ev for ev in event_classes if any(ev in s.emits for s in steps)]

    # An event reaches every step that accepts it or one of its base classes, as in the engine.
    def takers(ev: type[Event]) -> tuple[str, ...]:
        return tuple(s.name for s in steps if any(issubclass(ev, a) for a in s.accepts))

    # (event in, step name or "external", event out): one of the two events is None.
    flow: list[tuple[type[Event] | None, str, type[Event] | None]] = []
    for s in steps:
        for a in s.accepts:
            subs = [e for e in produced if e is not a and issubclass(e, a) and e not in s.accepts]
            if a in produced or not subs:
                flow.append((a, s.name, None))
            flow.extend((e, s.name, None) for e in subs)
        flow.extend((None, s.name, e) for e in s.emits)
    for ev in event_classes:
        if issubclass(ev, InputRequiredEvent) or (
            ev in produced and not takers(ev) and not issubclass(ev, StopEvent)
        ):
            flow.append((ev, EXTERNAL_ID, None))
        drawn_as_input = any(src is ev and step != EXTERNAL_ID for src, step, _ in flow)
        makers = [e for e in produced if issubclass(e, ev)]
        if drawn_as_input and not makers and not issubclass(ev, StartEvent):
            flow.append((None, EXTERNAL_ID, ev))

    used = {e for src, _, dst in flow for e in (src, dst) if e is not None}
    nodes: dict[str, WorkflowGraphNode] = {}
    for s in steps:
        nodes[f"step:{s.name}"] = WorkflowStepNode(
            f"step:{s.name}", s.name, s.description, s.num_workers
        )
    for ev in event_classes:
        if ev in used:
            nodes[ids[ev]] = WorkflowEventNode(
                ids[ev],
                ev.__name__,
                ev.__name__,
                f"{ev.__module__}.{ev.__qualname__}",
                _event_lineage(ev),
                _role(ev),
                tuple(s.name for s in steps if ev in s.emits),
                takers(ev),
            )
    if any(step == EXTERNAL_ID for _, step, _ in flow):
        nodes[EXTERNAL_ID] = WorkflowExternalNode(EXTERNAL_ID, "external")

    def node_id(step: str) -> str:
        return step if step == EXTERNAL_ID else f"step:{step}"

    edges: list[WorkflowGraphEdge] = []
    for src, step, dst in flow:
        if src is not None:
            edges.append(WorkflowGraphEdge(ids[src], node_id(step)))
        elif dst is not None:
            edges.append(WorkflowGraphEdge(node_id(step), ids[dst]))
    _add_resources(steps, nodes, edges)
    for s in steps:
        for param, cls in s.workflows:
            child = f"workflow:{cls.__name__}"
            if child not in nodes:
                nodes[child] = WorkflowGenericNode(
                    child,
                    cls.__name__,
                    description=_first_line(cls.__doc__) or "nested workflow",
                )
            edges.append(WorkflowGraphEdge(child, f"step:{s.name}", param))
    for s in steps:
        for cls in s.children:
            _add_child_run(s.name, cls, nodes, edges)
    return WorkflowGraph(name, tuple(nodes.values()), tuple(edges), description)


#: The child workflows being drawn now (a workflow that is its own descendant is drawn once).
_DRAWING: set[type] = set()


def _add_child_run(
    step: str, cls: type, nodes: dict[str, WorkflowGraphNode], edges: list[WorkflowGraphEdge]
) -> None:
    """Nest the graph of ``cls``, which ``step`` runs with ``ctx.run_child``: a node for the
    child run (``child:<Class>``, an edge from the step labelled ``run_child``) and the
    child's own nodes and edges, their ids prefixed with ``child:<Class>/``."""
    box = f"child:{cls.__name__}"
    if box not in nodes:
        nodes[box] = WorkflowGenericNode(
            box, cls.__name__, "child_workflow", _first_line(cls.__doc__) or "child run"
        )
        if cls not in _DRAWING:
            _DRAWING.add(cls)
            try:
                inner = get_workflow_representation(cls)
            finally:
                _DRAWING.discard(cls)
            prefix = f"{box}/"
            for node in inner.nodes:
                nodes[prefix + node.id] = replace(node, id=prefix + node.id)
            for edge in inner.edges:
                edges.append(
                    WorkflowGraphEdge(prefix + edge.source, prefix + edge.target, edge.label)
                )
            start = next((n for n in inner.events if n.role == "start"), None)
            if start is not None:
                edges.append(WorkflowGraphEdge(box, prefix + start.id))
    edges.append(WorkflowGraphEdge(f"step:{step}", box, "run_child"))


def without_child_workflows(graph: WorkflowGraph) -> WorkflowGraph:
    """``graph`` without its nested-workflow nodes (``include_child_workflows=False``)."""
    dropped = {n.id for n in graph.nodes if n.id.startswith(("workflow:", "child:"))}
    if not dropped:
        return graph
    return WorkflowGraph(
        graph.name,
        tuple(n for n in graph.nodes if n.id not in dropped),
        tuple(e for e in graph.edges if e.source not in dropped and e.target not in dropped),
        graph.description,
    )


def _add_resources(
    steps: Sequence[StepView],
    nodes: dict[str, WorkflowGraphNode],
    edges: list[WorkflowGraphEdge],
) -> None:
    """Add a node per resource descriptor, with edges to the steps (and resources) using it."""
    pending: list[tuple[str, Any, str]] = [
        (param, descriptor, f"step:{s.name}") for s in steps for param, descriptor in s.resources
    ]
    seen_edges: set[tuple[str, str, str]] = set()
    while pending:
        param, descriptor, target = pending.pop(0)
        node = _resource_node(descriptor)
        if node is None:
            continue
        if node.id not in nodes:
            nodes[node.id] = node
            if isinstance(descriptor, Resource):
                for dep_param, dep in descriptor.dependencies().items():
                    pending.append((dep_param, dep.descriptor, node.id))
        key = (node.id, target, param)
        if key not in seen_edges:
            seen_edges.add(key)
            edges.append(WorkflowGraphEdge(node.id, target, param))


def _resource_node(descriptor: Any) -> WorkflowResourceNode | WorkflowResourceConfigNode | None:
    if isinstance(descriptor, Resource):
        getter = descriptor.name
        return WorkflowResourceNode(
            f"resource:{getter}",
            getter.rsplit(".", 1)[-1],
            _return_type_name(descriptor.factory),
            getter,
            descriptor.cache,
            _first_line(getattr(descriptor.factory, "__doc__", None)),
        )
    if isinstance(descriptor, ResourceConfig):
        where = os.fspath(descriptor.config_file)
        key = f"{where}:{descriptor.path_selector}" if descriptor.path_selector else where
        return WorkflowResourceConfigNode(
            f"config:{key}",
            descriptor.name,
            None,
            where,
            descriptor.path_selector,
            descriptor.description,
        )
    return None


__all__ = [
    "StepView",
    "WorkflowEventNode",
    "WorkflowExternalNode",
    "WorkflowGenericNode",
    "WorkflowGraph",
    "WorkflowGraphEdge",
    "WorkflowGraphNode",
    "WorkflowResourceConfigNode",
    "WorkflowResourceNode",
    "WorkflowStepNode",
    "build_graph",
    "get_workflow_representation",
    "read_steps",
    "without_child_workflows",
]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
