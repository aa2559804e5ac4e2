"""Drawing workflows: every possible flow, or what the most recent run did.

Two formats. The HTML functions write one self-contained page with an inline SVG drawing,
laid out in Python (no script, stylesheet or font is fetched: it opens offline and in
sandboxed viewers), to any file name, and print the name as LlamaIndex's drawing does; given a
``.mmd``, ``.mermaid`` or ``.md`` name they write Mermaid text instead. The ``_mermaid``
functions write Mermaid text to any name (``.md`` inside a ```` ```mermaid ```` fence, which
GitHub and most Markdown viewers render) and print nothing.

``draw_all_possible_flows(JokeFlow, filename="joke_flow_all.html")`` draws the graph read from
the step annotations. ``draw_most_recent_execution(w or handler, ...)`` draws the same graph with
the steps of the most recent run highlighted: how many times each ran, and in which order.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .._public import publish
from ..engine.handler import WorkflowHandler
from ..engine.workflow import Workflow
from ._agent_graph import agent_graph, agent_workflow_graph
from ._html import StepRun, kind_of, render_page, truncate
from ._inline import Drawing, MermaidText, iframe
from .representation import (
    EXTERNAL_ID,
    WorkflowGraph,
    WorkflowGraphNode,
    get_workflow_representation,
    without_child_workflows,
)

#: A page's usual file name endings (any name but a Mermaid one gets a page).
HTML_SUFFIXES = (".html", ".htm")
#: File name endings that make the HTML drawing functions write Mermaid text instead.
MERMAID_SUFFIXES = (".mmd", ".mermaid", ".md")


def draw_all_possible_flows(
    workflow: Any,
    filename: str | Path | None = "workflow_all_flows.html",
    notebook: bool = False,
    max_label_length: int | None = None,
    include_child_workflows: bool = True,
) -> str:
    """Draw every flow a workflow allows, as an HTML page or Mermaid text.

    Args:
        workflow: A ``Workflow`` subclass or instance, or a :class:`WorkflowGraph`.
        filename: Where to write (its name is printed); an HTML page, or Mermaid text for a
            ``.mmd``/``.mermaid`` name (``.md``: in a fence). ``None`` writes nothing.
        notebook: Also display the page inline when running in a Jupyter notebook.
        max_label_length: Cut longer node labels (the full name stays in the tooltip).
        include_child_workflows: Draw the nested workflows steps take (parameters
            annotated with a ``Workflow`` class, see ``Workflow.add_workflows``) as nodes.

    Returns:
        The text written (the HTML page or the Mermaid text).

    Raises:
        TypeError: ``workflow`` is not a workflow.
    """
    graph = _graph_of(workflow)
    if not include_child_workflows:
        graph = without_child_workflows(graph)
    return _draw(graph, None, filename, notebook, max_label_length, "All possible flows")


def draw_most_recent_execution(
    handler: Any,
    filename: str | Path | None = "workflow_recent_execution.html",
    notebook: bool = False,
    max_label_length: int | None = None,
) -> str:
    """Draw the most recent run: which steps ran, how many times, and in which order.

    Args:
        handler: The ``WorkflowHandler`` of a run, or the ``Workflow`` instance
            whose most recent run to draw.
        filename: Where to write (its name is printed), as for
            :func:`draw_all_possible_flows`. ``None`` writes nothing.
        notebook: Also display the page inline when running in a Jupyter notebook.
        max_label_length: Cut longer node labels (the full name stays in the tooltip).

    Returns:
        The text written (the HTML page or the Mermaid text).

    Raises:
        ValueError: The workflow has not run yet.
        TypeError: ``handler`` is neither a workflow nor a handler.
    """
    _check_max_label_length(max_label_length)
    graph, runs = recent_execution(handler)
    return _draw(graph, runs, filename, notebook, max_label_length, "Most recent execution")


def draw_recorded_execution(
    workflow_or_class: Any,
    trace: Iterable[Any],
    filename: str | Path | None = None,
    max_label_length: int | None = None,
) -> str:
    """Draw a run recorded elsewhere, e.g. by a server that keeps its runs' step executions.

    Like :func:`draw_most_recent_execution`, for a run whose handler is not at hand: the steps
    in ``trace`` are highlighted, with how many times each ran and in which order.

    Args:
        workflow_or_class: The workflow (class or instance) the run belongs to.
        trace: The run's completed step executions, in any form :func:`as_step_runs` reads
            (``(step, input event name, [output event names])`` tuples, for one).
        filename: Where to write (its name is printed), as for
            :func:`draw_all_possible_flows`. ``None`` (the default) writes nothing.
        max_label_length: Cut longer node labels (the full name stays in the tooltip).

    Returns:
        The text written (the HTML page or the Mermaid text).

    Raises:
        TypeError: ``workflow_or_class`` is not a workflow.
    """
    graph = _graph_of(workflow_or_class)
    return _draw(graph, as_step_runs(trace), filename, False, max_label_length, "Recorded run")


def draw_all_possible_flows_mermaid(
    workflow: Any,
    filename: str | Path | None = "workflow_all_flows.mermaid",
    max_label_length: int | None = None,
    include_child_workflows: bool = True,
) -> str:
    """Every flow a workflow allows, as Mermaid flowchart text.

    Args:
        workflow: A ``Workflow`` subclass or instance, or a :class:`WorkflowGraph`.
        filename: Also write the text there, under any name (a ``.md`` one inside a mermaid
            fence); ``None`` writes nothing.
        max_label_length: Cut longer node labels.
        include_child_workflows: Draw the nested workflows steps take as nodes.

    Returns:
        The Mermaid text (without a fence).
    """
    _check_max_label_length(max_label_length)
    graph = _graph_of(workflow)
    if not include_child_workflows:
        graph = without_child_workflows(graph)
    text = MermaidText(to_mermaid(graph, max_label_length=max_label_length))
    _write(filename, text)
    return text


def draw_most_recent_execution_mermaid(
    handler: Any,
    filename: str | Path | None = "workflow_recent_execution.mermaid",
    max_label_length: int | None = None,
) -> str:
    """The most recent run as Mermaid text: the steps that ran, numbered in order.

    Args:
        handler: The ``WorkflowHandler`` of a run, or the ``Workflow`` instance.
        filename: Also write the text there, under any name (a ``.md`` one inside a mermaid
            fence); ``None`` writes nothing.
        max_label_length: Cut longer node labels.

    Returns:
        The Mermaid text (without a fence).

    Raises:
        ValueError: Nothing ran yet.
    """
    _check_max_label_length(max_label_length)
    graph, runs = recent_execution(handler)
    text = MermaidText(to_mermaid(graph, runs, max_label_length=max_label_length))
    _write(filename, text)
    return text


def draw_agent_with_tools(
    agent: Any, filename: str | Path = "agent_with_tools.html", notebook: bool = False
) -> str:
    """Draw an agent and its tools as an HTML page (the name is printed), as LlamaIndex does.

    Args:
        agent: A ``FunctionAgent``, ``ReActAgent`` or ``CodeActAgent``.
        filename: Where to write (a ``.mmd``/``.mermaid``/``.md`` name gets Mermaid text).
        notebook: Also display the page inline when running in a Jupyter notebook.

    Returns:
        ``filename`` (LlamaIndex's return value).

    Raises:
        TypeError: ``agent`` is not an agent.
    """
    _draw(agent_graph(agent), None, filename, notebook, None, "Agent with tools")
    return str(filename)


def draw_agent_workflow(
    agent_workflow: Any, filename: str | Path = "agent_workflow.html", notebook: bool = False
) -> str:
    """Draw an ``AgentWorkflow``'s agents, tools and handoffs as an HTML page (name printed).

    Args:
        agent_workflow: The ``AgentWorkflow``.
        filename: Where to write (a ``.mmd``/``.mermaid``/``.md`` name gets Mermaid text).
        notebook: Also display the page inline when running in a Jupyter notebook.

    Returns:
        ``filename`` (LlamaIndex's return value).

    Raises:
        TypeError: ``agent_workflow`` is not an ``AgentWorkflow``.
    """
    graph = agent_workflow_graph(agent_workflow)
    _draw(graph, None, filename, notebook, None, "Agent workflow")
    return str(filename)


def draw_agent_with_tools_mermaid(
    agent: Any, filename: str | Path | None = "agent_with_tools.mermaid"
) -> str:
    """An agent and its tools as Mermaid text, also written to ``filename`` (any name).

    Raises:
        TypeError: ``agent`` is not an agent.
    """
    text = MermaidText(to_mermaid(agent_graph(agent)))
    _write(filename, text)
    return text


def draw_agent_workflow_mermaid(
    agent_workflow: Any, filename: str | Path | None = "agent_workflow.mermaid"
) -> str:
    """An ``AgentWorkflow``'s agents, tools and handoffs as Mermaid text, also written to
    ``filename`` (any name).

    Raises:
        TypeError: ``agent_workflow`` is not an ``AgentWorkflow``.
    """
    text = MermaidText(to_mermaid(agent_workflow_graph(agent_workflow)))
    _write(filename, text)
    return text


# -- Mermaid --------------------------------------------------------------------------------

_MERMAID_CLASSES = {
    "step": "fill:#eef2ff,stroke:#4f46e5,stroke-width:1.5px,color:#1e1b4b",
    "event": "fill:#f0f9ff,stroke:#0284c7,color:#0c4a6e",
    "start": "fill:#dcfce7,stroke:#16a34a,color:#14532d",
    "stop": "fill:#fee2e2,stroke:#dc2626,color:#7f1d1d",
    "hitl": "fill:#faf5ff,stroke:#9333ea,color:#581c87",
    "external": "fill:#f3e8ff,stroke:#7e22ce,color:#3b0764",
    "resource": "fill:#fffbeb,stroke:#d97706,stroke-dasharray:5 3,color:#78350f",
    "resource_config": "fill:#f0fdfa,stroke:#0d9488,stroke-dasharray:5 3,color:#134e4a",
    "generic": "fill:#f8fafc,stroke:#64748b",
    "ran": "stroke:#ea580c,stroke-width:3px",
}


def to_mermaid(
    graph: WorkflowGraph,
    runs: Sequence[StepRun] | None = None,
    *,
    max_label_length: int | None = None,
) -> str:
    """Mermaid ``flowchart TD`` text for ``graph``.

    With ``runs``, only what the run touched is drawn: each step that ran is labelled with how
    many times (``generate ×2``), and each event-to-step edge with the numbers of the
    executions it triggered, in order (``#1, #3``).

    Args:
        graph: The workflow graph.
        runs: The step executions of a recorded run, in order.
        max_label_length: Cut longer node labels.

    Returns:
        The flowchart text, one statement per line.
    """
    ids = _mermaid_ids(graph.nodes)
    nodes = list(graph.nodes)
    edges = [(e.source, e.target, e.label) for e in graph.edges]
    counts: dict[str, int] = {}
    if runs is not None:
        nodes, edges, counts = _executed_part(graph, runs)
    lines = ["flowchart TD"]

    def define(node: WorkflowGraphNode, indent: str) -> None:
        label = truncate(node.label, max_label_length)
        if node.id in counts:
            label = f"{label} ×{counts[node.id]}"
        lines.append(f"{indent}{ids[node.id]}{_mermaid_shape(kind_of(node), _mermaid_text(label))}")
        # A child run (@step(children=...)): its own nodes in a subgraph after its node.
        inside = [n for n in nodes if _container(n.id) == node.id]
        if inside:
            title = _mermaid_text(f"{node.label} (child run)")
            lines.append(f'{indent}subgraph {ids[node.id]}_run ["{title}"]')
            for member in inside:
                define(member, indent + "    ")
            lines.append(f"{indent}end")

    for node in nodes:
        if _container(node.id) is None:
            define(node, "    ")
    for source, target, edge_label in edges:
        arrow = "-.->" if source.startswith(("resource:", "config:")) else "-->"
        text = f'|"{_mermaid_text(edge_label)}"|' if edge_label else ""
        lines.append(f"    {ids[source]} {arrow}{text} {ids[target]}")
    used = dict.fromkeys(kind_of(n) for n in nodes)
    for kind in used:
        lines.append(f"    classDef {kind} {_MERMAID_CLASSES[kind]}")
        members = ",".join(ids[n.id] for n in nodes if kind_of(n) == kind)
        lines.append(f"    class {members} {kind}")
    if counts:
        lines.append(f"    classDef ran {_MERMAID_CLASSES['ran']}")
        lines.append(f"    class {','.join(ids[n] for n in counts)} ran")
    return "\n".join(lines) + "\n"


def _container(node_id: str) -> str | None:
    """The id of the child-run node whose subgraph holds ``node_id`` (``child:X/...``)."""
    return node_id.rsplit("/", 1)[0] if node_id.startswith("child:") and "/" in node_id else None


def _executed_part(
    graph: WorkflowGraph, runs: Sequence[StepRun]
) -> tuple[list[WorkflowGraphNode], list[tuple[str, str, str | None]], dict[str, int]]:
    """The nodes and edges a run touched, with order numbers on the triggering edges."""
    counts: dict[str, int] = {}
    numbers: dict[tuple[str, str], list[int]] = {}
    keep: dict[str, None] = {}
    for number, run in enumerate(runs, start=1):
        step_id = f"step:{run.step_name}"
        counts[step_id] = counts.get(step_id, 0) + 1
        source = graph.event_node(run.input_event)
        if source is not None:
            keep[source.id] = None
            numbers.setdefault((source.id, step_id), []).append(number)
        keep[step_id] = None
        for name in run.output_events:
            target = graph.event_node(name)
            if target is not None:
                keep[target.id] = None
                numbers.setdefault((step_id, target.id), [])
                if target.role == "input_required":
                    keep[EXTERNAL_ID] = None
                    numbers.setdefault((target.id, EXTERNAL_ID), [])
        if source is not None and source.role == "human_response":
            keep[EXTERNAL_ID] = None
            numbers.setdefault((EXTERNAL_ID, source.id), [])
    by_id = {n.id: n for n in graph.nodes}
    nodes = [by_id[n] for n in keep if n in by_id]
    edges = [
        (s, t, ", ".join(f"#{n}" for n in found) or None)
        for (s, t), found in numbers.items()
        if s in by_id and t in by_id
    ]
    return nodes, edges, {k: v for k, v in counts.items() if k in by_id}


def _mermaid_ids(nodes: Iterable[WorkflowGraphNode]) -> dict[str, str]:
    """Mermaid-safe, readable, unique ids (``step_generate``, ``event_JokeEvent``)."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for node in nodes:
        base = re.sub(r"\W", "_", node.id.replace(":", "_", 1)).strip("_") or "node"
        if base in {"end", "graph", "subgraph", "style", "class", "click"}:
            base += "_"
        candidate, k = base, 2
        while candidate in taken:
            candidate, k = f"{base}_{k}", k + 1
        taken.add(candidate)
        out[node.id] = candidate
    return out


def _mermaid_shape(kind: str, text: str) -> str:
    if kind == "step":
        return f'["{text}"]'
    if kind == "external":
        return f'{{{{"{text}"}}}}'
    if kind in ("resource", "resource_config"):
        return f'[("{text}")]'
    if kind == "generic":
        return f'["{text}"]'
    return f'(["{text}"])'


def _mermaid_text(label: str) -> str:
    # Inside a quoted Mermaid label only the quote and the entity start need escaping.
    return label.replace("&", "#amp;").replace('"', "#quot;")


# -- shared plumbing ------------------------------------------------------------------------


def _graph_of(obj: Any) -> WorkflowGraph:
    return obj if isinstance(obj, WorkflowGraph) else get_workflow_representation(obj)


def recent_execution(workflow_or_handler: Any) -> tuple[WorkflowGraph, list[StepRun]]:
    """The graph and the step executions of the most recent run of a workflow or handler.

    The engine records every completed step execution of a run (``execution_trace()`` on the
    handler, and on the workflow for its latest run).

    Raises:
        TypeError: Neither a workflow instance nor a handler.
        ValueError: The workflow has not run yet.
    """
    if isinstance(workflow_or_handler, Workflow):
        workflow: Workflow = workflow_or_handler
        trace = workflow.execution_trace()
    elif isinstance(workflow_or_handler, WorkflowHandler):
        workflow = workflow_or_handler.workflow
        trace = workflow_or_handler.execution_trace()
    else:
        raise TypeError(
            f"Cannot find a run in {workflow_or_handler!r}; pass the WorkflowHandler returned "
            "by w.run(...) or the Workflow instance that ran (not the class)."
        )
    if trace is None:
        raise ValueError(
            f"{type(workflow).__name__} has not run yet, so there is no execution to draw; "
            "await w.run(...) first, or use draw_all_possible_flows to draw the graph."
        )
    return get_workflow_representation(workflow), as_step_runs(trace)


def as_step_runs(trace: Iterable[Any]) -> list[StepRun]:
    """Read a recorded run into :class:`StepRun` records.

    Accepts :class:`StepRun` records, records with ``step_name``, ``input_event`` and
    ``output_events`` attributes (event classes, instances or class names), or plain
    ``(step_name, input_event_type_name, [output_event_type_names])`` tuples.
    """
    runs: list[StepRun] = []
    for item in trace:
        if isinstance(item, StepRun):
            runs.append(item)
            continue
        if isinstance(item, tuple | list):
            step_name, input_event, outputs = item
        else:
            step_name = item.step_name
            input_event, outputs = item.input_event, item.output_events
        runs.append(
            StepRun(str(step_name), _event_name(input_event), tuple(map(_event_name, outputs)))
        )
    return runs


def _event_name(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, type):
        return value.__name__
    return type(value).__name__


def _check_max_label_length(max_label_length: int | None) -> None:
    if max_label_length is not None and (
        isinstance(max_label_length, bool)
        or not isinstance(max_label_length, int)
        or max_label_length < 1
    ):
        raise ValueError(
            f"max_label_length must be a positive number of characters, got {max_label_length!r}; "
            "pass None to keep labels whole."
        )


def _write(filename: str | Path | None, text: str) -> None:
    if filename is None:
        return
    path = Path(filename)
    if path.suffix.lower() == ".md":
        text = f"```mermaid\n{text}```\n"
    path.write_text(text, encoding="utf-8")


def _draw(
    graph: WorkflowGraph,
    runs: list[StepRun] | None,
    filename: str | Path | None,
    notebook: bool,
    max_label_length: int | None,
    title: str,
) -> str:
    _check_max_label_length(max_label_length)
    text: str
    if filename is not None and Path(filename).suffix.lower() in MERMAID_SUFFIXES:
        text = MermaidText(to_mermaid(graph, runs, max_label_length=max_label_length))
    else:
        page = render_page(graph, title=title, max_label_length=max_label_length, runs=runs)
        text = Drawing(page, shown=notebook and _show_in_notebook(page))
    _write(filename, text)
    if filename is not None:
        # As llama-index-utils-workflow (pyvis) does: the name of the file written.
        print(filename)
    return text


def _show_in_notebook(page: str) -> bool:
    """Display the page inline in Jupyter (whether it was); outside IPython, nothing to do."""
    try:
        display = importlib.import_module("IPython.display")
    except ImportError:
        return False
    display.display(display.HTML(iframe(page)))
    return True


__all__ = [
    "StepRun",
    "as_step_runs",
    "draw_agent_with_tools",
    "draw_agent_with_tools_mermaid",
    "draw_agent_workflow",
    "draw_agent_workflow_mermaid",
    "draw_all_possible_flows",
    "draw_all_possible_flows_mermaid",
    "draw_most_recent_execution",
    "draw_most_recent_execution_mermaid",
    "draw_recorded_execution",
    "recent_execution",
    "to_mermaid",
]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
