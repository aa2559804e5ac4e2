"""Render a :class:`WorkflowGraph` as one self-contained HTML page with an inline SVG drawing.

Nothing is fetched when the page opens: no script, no stylesheet, no font from the network.
Positions come from :mod:`._layout`; this module turns them into SVG shapes (rounded boxes for
steps, pills for events, a hexagon for the outside world, dashed boxes for resources), curves
with arrowheads, a legend, and, for a recorded run, the order in which the steps ran.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from html import escape

from ._layout import Layout, LayoutNode, PlacedNode, Point, RoutedEdge, layered_layout
from .representation import (
    WorkflowEventNode,
    WorkflowExternalNode,
    WorkflowGraph,
    WorkflowGraphNode,
    WorkflowResourceConfigNode,
    WorkflowResourceNode,
    WorkflowStepNode,
)


@dataclass(frozen=True, slots=True)
class StepRun:
    """One execution of a step in a recorded run.

    Attributes:
        step_name: The step that ran.
        input_event: Class name of the event it received.
        output_events: Class names of the events it returned or sent.
    """

    step_name: str
    input_event: str
    output_events: tuple[str, ...] = ()


# Fill, stroke and text colours per kind of node.
_COLOURS: dict[str, tuple[str, str, str]] = {
    "step": ("#eef2ff", "#4f46e5", "#1e1b4b"),
    "event": ("#f0f9ff", "#0284c7", "#0c4a6e"),
    "start": ("#dcfce7", "#16a34a", "#14532d"),
    "stop": ("#fee2e2", "#dc2626", "#7f1d1d"),
    "hitl": ("#faf5ff", "#9333ea", "#581c87"),
    "external": ("#f3e8ff", "#7e22ce", "#3b0764"),
    "resource": ("#fffbeb", "#d97706", "#78350f"),
    "resource_config": ("#f0fdfa", "#0d9488", "#134e4a"),
    "generic": ("#f8fafc", "#64748b", "#0f172a"),
}
_LEGEND_NAMES = {
    "step": "Step",
    "event": "Event",
    "start": "Start event",
    "stop": "Stop event",
    "hitl": "Human-in-the-loop event",
    "external": "Outside the run",
    "resource": "Resource",
    "resource_config": "Resource config",
    "generic": "Other",
}
_RAN = "#ea580c"  # edges and badges of the recorded run
_EDGE = "#64748b"
_FONT = "'DejaVu Sans', 'Segoe UI', Roboto, Helvetica, Arial, sans-serif"


def kind_of(node: WorkflowGraphNode) -> str:
    """The colour/shape family of a node (``start``, ``stop``, ``hitl``, ``step``, ...)."""
    if isinstance(node, WorkflowEventNode):
        if node.role in ("start", "stop"):
            return node.role
        return "hitl" if node.role in ("input_required", "human_response") else "event"
    return node.node_type if node.node_type in _COLOURS else "generic"


def truncate(label: str, max_length: int | None) -> str:
    """``label`` cut to ``max_length`` characters, the last one an ellipsis when cut."""
    if max_length is None or len(label) <= max_length:
        return label
    return label[: max(max_length - 1, 0)] + "…"


def text_width(text: str, size: float, bold: bool = False) -> float:
    """An estimate of the rendered width of ``text`` in a DejaVu/Helvetica-like font."""
    total = 0.0
    for ch in text:
        if ch in "ijlI.,:;'!|":
            total += 0.32
        elif ch in "ftr()[] -":
            total += 0.42
        elif ch in "mwMW":
            total += 0.92
        elif ch.isupper():
            total += 0.72
        else:
            total += 0.62
    return total * size * (1.08 if bold else 1.0)


def _size(node: WorkflowGraphNode, label: str) -> tuple[float, float]:
    kind = kind_of(node)
    if kind == "step":
        return max(text_width(label, 14, bold=True) + 32, 90.0), 42.0
    if kind == "external":
        return text_width(label, 13) + 56, 42.0
    if kind in ("resource", "resource_config", "generic"):
        return text_width(label, 12) + 28, 34.0
    return max(text_width(label, 13) + 36, 80.0), 32.0


def render_page(
    graph: WorkflowGraph,
    *,
    title: str,
    max_label_length: int | None = None,
    runs: Sequence[StepRun] | None = None,
) -> str:
    """The full HTML page for ``graph`` (and the recorded ``runs``, when given)."""
    labels = {n.id: truncate(n.label, max_label_length) for n in graph.nodes}
    sized = [LayoutNode(n.id, *_size(n, labels[n.id])) for n in graph.nodes]
    roots = [n.id for n in graph.events if n.role == "start"]
    known = {n.id for n in graph.nodes}
    graph = replace(
        graph, edges=tuple(e for e in graph.edges if e.source in known and e.target in known)
    )
    layout = layered_layout(sized, [(e.source, e.target) for e in graph.edges], roots)
    svg = _svg(graph, layout, labels, runs)
    present = {kind_of(n) for n in graph.nodes}
    kinds = [k for k in _LEGEND_NAMES if k in present]
    side = _legend(kinds, runs is not None) + (_run_list(runs) if runs is not None else "")
    heading = escape(graph.name)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{heading}: {escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f'<header><h1>{heading}</h1><p class="sub">{escape(title)}'
        + (f" · {escape(graph.description)}" if graph.description else "")
        + "</p></header>\n"
        f'<main>\n<figure class="graph">{svg}</figure>\n<aside>\n{side}</aside>\n</main>\n'
        "</body>\n</html>\n"
    )


_CSS = f"""
body {{ margin: 0; padding: 16px 24px; font-family: {_FONT}; color: #0f172a;
  background: #ffffff; }}
header h1 {{ font-size: 20px; margin: 0 0 2px 0; }}
header .sub {{ margin: 0 0 12px 0; color: #475569; font-size: 13px; }}
main {{ display: flex; gap: 24px; align-items: flex-start; flex-wrap: wrap; }}
figure.graph {{ margin: 0; flex: 0 1 auto; min-width: 0; }}
figure.graph svg {{ max-width: 100%; height: auto; display: block; }}
aside {{ flex: 0 0 300px; font-size: 13px; }}
aside ul {{ list-style: none; margin: 0 0 16px 0; padding: 0; }}
aside ul li {{ display: flex; align-items: center; gap: 8px; margin: 0 0 2px 0; }}
aside h2 {{ font-size: 14px; margin: 4px 0 8px 0; }}
aside ol {{ margin: 0 0 16px 0; padding-left: 28px; }}
aside li {{ margin: 0 0 6px 0; }}
aside .ev {{ color: #475569; font-size: 12px; display: block; }}
aside table {{ border-collapse: collapse; }}
aside td {{ padding: 2px 10px 2px 0; }}
"""


def _svg(
    graph: WorkflowGraph,
    layout: Layout,
    labels: dict[str, str],
    runs: Sequence[StepRun] | None,
) -> str:
    by_id = {n.id: n for n in graph.nodes}
    ran_steps: dict[str, int] = {}
    used_edges: dict[tuple[str, str], list[int]] = {}
    if runs is not None:
        for number, run in enumerate(runs, start=1):
            step_id = f"step:{run.step_name}"
            ran_steps[step_id] = ran_steps.get(step_id, 0) + 1
            source = graph.event_node(run.input_event)
            if source is not None:
                used_edges.setdefault((source.id, step_id), []).append(number)
            for name in run.output_events:
                target = graph.event_node(name)
                if target is not None:
                    used_edges.setdefault((step_id, target.id), [])
                    if target.role == "input_required":
                        used_edges.setdefault((target.id, "external"), [])
        for source_id, _ in list(used_edges):
            node = by_id.get(source_id)
            if isinstance(node, WorkflowEventNode) and node.role == "human_response":
                used_edges.setdefault(("external", source_id), [])

    # Curves may bulge out of the node area: measure everything before fixing the view box.
    paths: list[str] = []
    edge_labels: list[str] = []
    extent = [0.0, 0.0, layout.width, layout.height]
    ports = _ports(layout)
    for index, (edge, routed) in enumerate(zip(graph.edges, layout.edges, strict=True)):
        d, mid, hull = _path(routed, _endpoints(routed, layout, ports, index), layout)
        for x, y in hull:
            extent = [min(extent[0], x), min(extent[1], y), max(extent[2], x), max(extent[3], y)]
        is_resource = isinstance(
            by_id.get(edge.source), WorkflowResourceNode | WorkflowResourceConfigNode
        )
        numbers = used_edges.get((edge.source, edge.target))
        if runs is not None and numbers is not None:
            style = f'stroke="{_RAN}" stroke-width="2.6" marker-end="url(#arrow-ran)"'
        elif runs is not None and not (is_resource and edge.target in ran_steps):
            # Untouched by the run; a resource injected into a step that ran stays plain.
            style = f'stroke="{_EDGE}" stroke-width="1.4" opacity="0.35" marker-end="url(#arrow)"'
        else:
            style = f'stroke="{_EDGE}" stroke-width="1.5" marker-end="url(#arrow)"'
        if is_resource:
            style += ' stroke-dasharray="5 4"'
        title = f"{by_id[edge.source].label} → {by_id[edge.target].label}"
        paths.append(
            f'<path class="edge" d="{d}" fill="none" {style}><title>{escape(title)}</title></path>'
        )
        text = _edge_text(edge.label if is_resource else None, numbers)
        if text:
            edge_labels.append(_edge_label(mid, text, numbers is not None and runs is not None))

    body = [_node_svg(by_id[n], layout.nodes[n], labels[n], ran_steps, runs) for n in layout.nodes]
    pad = 8.0
    x0, y0 = extent[0] - pad, extent[1] - pad
    width, height = extent[2] - x0 + pad, extent[3] - y0 + pad
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width:.0f}" '
        f'height="{height:.0f}" viewBox="{x0:.1f} {y0:.1f} {width:.1f} {height:.1f}" '
        f'font-family="{_FONT}"><title>{escape(graph.name)}</title>{_DEFS}'
        f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{width:.1f}" height="{height:.1f}" '
        f'fill="#ffffff"/><g class="edges">{"".join(paths)}</g>'
        f'<g class="nodes">{"".join(body)}</g><g class="labels">{"".join(edge_labels)}</g></svg>'
    )


_DEFS = (
    "<defs>"
    '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
    f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{_EDGE}"/></marker>'
    '<marker id="arrow-ran" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="4.2" '
    f'markerHeight="4.2" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{_RAN}"/>'
    "</marker></defs>"
)


def _edge_text(param: str | None, numbers: list[int] | None) -> str:
    if numbers:
        shown = ", ".join(f"#{n}" for n in numbers[:4])
        return shown + (f" … ({len(numbers)})" if len(numbers) > 4 else "")
    return param or ""


def _edge_label(at: Point, text: str, ran: bool) -> str:
    x, y = at
    w = text_width(text, 11) + 10
    colour = _RAN if ran else "#92400e"
    fill = "#fff7ed" if ran else "#ffffff"
    return (
        f'<g class="edge-label"><rect x="{x - w / 2:.1f}" y="{y - 9:.1f}" width="{w:.1f}" '
        f'height="18" rx="9" fill="{fill}" stroke="{colour}" stroke-width="0.8"/>'
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="middle" dominant-baseline="central" '
        f'font-size="11" fill="{colour}">{escape(text)}</text></g>'
    )


def _ports(layout: Layout) -> dict[tuple[int, str], float]:
    """Horizontal offsets where each edge leaves or enters a node, spread to avoid overlap."""
    outgoing: dict[str, list[tuple[float, int]]] = {}
    incoming: dict[str, list[tuple[float, int]]] = {}
    offsets: dict[tuple[int, str], float] = {}
    loops: dict[tuple[str, str], list[tuple[float, int]]] = {}
    for i, e in enumerate(layout.edges):
        if e.back:
            # Loop edges meeting at one node get their own slots, the widest curve outermost.
            s, t = layout.nodes[e.source], layout.nodes[e.target]
            loops.setdefault(("back_out", e.source), []).append((-abs(e.points[1][0] - s.x), i))
            loops.setdefault(("back_in", e.target), []).append((-abs(e.points[-2][0] - t.x), i))
            continue
        outgoing.setdefault(e.source, []).append((e.points[1][0], i))
        incoming.setdefault(e.target, []).append((e.points[-2][0], i))
    for (key, _), items in loops.items():
        for k, (_, i) in enumerate(sorted(items)):
            offsets[(i, key)] = float(k)
    for side, table in (("out", outgoing), ("in", incoming)):
        for node_id, items in table.items():
            node = layout.nodes[node_id]
            items.sort()
            room = max(node.width / 2 - node.height / 2 - 4, 0.0)
            step = min(14.0, 2 * room / max(len(items) - 1, 1))
            for k, (_, i) in enumerate(items):
                offsets[(i, side)] = (k - (len(items) - 1) / 2) * step
    return offsets


def _endpoints(
    edge: RoutedEdge, layout: Layout, ports: dict[tuple[int, str], float], index: int
) -> tuple[list[Point], bool, bool]:
    """Where the curve starts and ends, and whether it leaves/enters a node's side."""
    s, t = layout.nodes[edge.source], layout.nodes[edge.target]
    inner = list(edge.points[1:-1])
    if edge.back and not inner:
        return [(s.x, s.y), (t.x, t.y)], True, True
    if not edge.back:
        sx = s.x + ports.get((index, "out"), 0.0)
        tx = t.x + ports.get((index, "in"), 0.0)
        return [(sx, s.y + s.height / 2), *inner, (tx, t.y - t.height / 2)], False, False
    # A loop edge climbing through bend points: leave and enter from the side it runs along,
    # so it does not pile onto the arrows between the node's top and bottom.
    first, last = inner[0][0], inner[-1][0]
    start_side = abs(first - s.x) > s.width / 2 + 6
    end_side = abs(last - t.x) > t.width / 2 + 6
    # Otherwise use the top (bottom) a little off-centre, clear of the forward arrows there.
    s_dir, t_dir = (1.0 if first >= s.x else -1.0), (1.0 if last >= t.x else -1.0)
    s_slot = max(0.7 - 0.25 * ports.get((index, "back_out"), 0.0), 0.1)
    t_slot = max(0.7 - 0.25 * ports.get((index, "back_in"), 0.0), 0.1)
    s_off = max(s.width / 2 - s.height / 2, 0.0) * s_slot * s_dir
    t_off = max(t.width / 2 - t.height / 2, 0.0) * t_slot * t_dir
    start = (s.x + s_dir * s.width / 2, s.y) if start_side else (s.x + s_off, s.y - s.height / 2)
    end = (t.x + t_dir * t.width / 2, t.y) if end_side else (t.x + t_off, t.y + t.height / 2)
    return [start, *inner, end], start_side, end_side


def _path(
    edge: RoutedEdge, ends: tuple[list[Point], bool, bool], layout: Layout
) -> tuple[str, Point, list[Point]]:
    """SVG path data, the label anchor and the points bounding the curve."""
    points, start_side, end_side = ends
    if edge.back and len(points) == 2:
        return _side_loop(layout.nodes[edge.source], layout.nodes[edge.target], layout)
    parts = [f"M{points[0][0]:.1f},{points[0][1]:.1f}"]
    hull: list[Point] = list(points)
    last = len(points) - 2
    for i, ((x0, y0), (x1, y1)) in enumerate(itertools.pairwise(points)):
        ym = (y0 + y1) / 2
        c1, c2 = (x0, ym), (x1, ym)
        if i == 0 and start_side:
            c1 = c2 = (x1, y0)  # leave the node sideways, turn to vertical
        if i == last and end_side:
            c1 = c2 = (x0, y1)  # arrive sideways
        parts.append(f"C{c1[0]:.1f},{c1[1]:.1f} {c2[0]:.1f},{c2[1]:.1f} {x1:.1f},{y1:.1f}")
    k = (len(points) - 1) // 2
    (ax, ay), (bx, by) = points[k], points[k + 1]
    return " ".join(parts), ((ax + bx) / 2, (ay + by) / 2), hull


def _side_loop(s: PlacedNode, t: PlacedNode, layout: Layout) -> tuple[str, Point, list[Point]]:
    """A curve around the side for an edge that goes back up one layer (a loop)."""
    right = (s.x + t.x) / 2 >= layout.width / 2
    sign = 1.0 if right else -1.0
    sx, tx = s.x + sign * s.width / 2, t.x + sign * t.width / 2
    if s.id == t.id:  # a self-loop: a small ear on the node's side
        ear, top, bottom = sx + sign * 40, s.y - s.height / 4, s.y + s.height / 4
        d = (
            f"M{sx:.1f},{top:.1f} C{ear:.1f},{s.y - s.height:.1f} {ear:.1f},{s.y + s.height:.1f} "
            f"{sx + sign * 2:.1f},{bottom:.1f}"
        )
        return d, (sx + sign * 30, s.y), [(ear, s.y - s.height), (ear, s.y + s.height)]
    edge_x = max(sx, tx) if right else min(sx, tx)
    bulge = edge_x + sign * (36 + 8 * abs(s.layer - t.layer))
    d = (
        f"M{sx:.1f},{s.y:.1f} C{bulge:.1f},{s.y:.1f} {bulge:.1f},{t.y:.1f} "
        f"{tx + sign * 2:.1f},{t.y:.1f}"
    )
    mid_x = (sx + tx) / 8 + 3 * bulge / 4
    return d, (mid_x, (s.y + t.y) / 2), [(bulge, s.y), (bulge, t.y)]


def _node_svg(
    node: WorkflowGraphNode,
    at: PlacedNode,
    label: str,
    ran_steps: dict[str, int],
    runs: Sequence[StepRun] | None,
) -> str:
    kind = kind_of(node)
    fill, stroke, ink = _COLOURS[kind]
    times = ran_steps.get(node.id, 0)
    faded = runs is not None and isinstance(node, WorkflowStepNode) and times == 0
    shape = _shape(kind, at, fill, stroke, 2.6 if times else 1.6)
    size = 14 if kind == "step" else 12 if kind in ("resource", "resource_config") else 13
    weight = ' font-weight="bold"' if kind == "step" else ""
    tooltip = _tooltip(node, times, runs is not None)
    badge = ""
    if times:
        bx, by = at.x + at.width / 2 - 4, at.y - at.height / 2 + 2
        badge = (
            f'<g class="badge"><circle cx="{bx:.1f}" cy="{by:.1f}" r="11" fill="{_RAN}"/>'
            f'<text x="{bx:.1f}" y="{by:.1f}" text-anchor="middle" dominant-baseline="central" '
            f'font-size="11" font-weight="bold" fill="#ffffff">×{times}</text></g>'
        )
    opacity = ' opacity="0.4"' if faded else ""
    return (
        f'<g class="node {kind}" data-id="{escape(node.id)}"{opacity}><title>{escape(tooltip)}'
        f'</title>{shape}<text x="{at.x:.1f}" y="{at.y:.1f}" text-anchor="middle" '
        f'dominant-baseline="central" font-size="{size}"{weight} fill="{ink}">{escape(label)}'
        f"</text>{badge}</g>"
    )


def _shape(kind: str, at: PlacedNode, fill: str, stroke: str, width: float) -> str:
    x, y, w, h = at.x - at.width / 2, at.y - at.height / 2, at.width, at.height
    paint = f'fill="{fill}" stroke="{stroke}" stroke-width="{width}"'
    if kind == "external":
        inset = h / 2
        pts = [
            (x, at.y), (x + inset, y), (x + w - inset, y),
            (x + w, at.y), (x + w - inset, y + h), (x + inset, y + h),
        ]  # fmt: skip
        return f'<polygon points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in pts)}" {paint}/>'
    if kind in ("resource", "resource_config", "generic"):
        dash = ' stroke-dasharray="5 3"' if kind != "generic" else ""
        return (
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="4" {paint}{dash}/>'
        )
    radius = 8.0 if kind == "step" else h / 2
    return f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{radius:.1f}" {paint}/>'


def _tooltip(node: WorkflowGraphNode, times: int, recorded: bool) -> str:
    lines = [node.label]
    if isinstance(node, WorkflowStepNode):
        lines[0] = f"step {node.label}"
        if node.description:
            lines.append(node.description)
        if recorded:
            lines.append(f"ran {times} time{'s' if times != 1 else ''}")
    elif isinstance(node, WorkflowEventNode):
        lines[0] = f"{node.role} event {node.qualified_name}"
    elif isinstance(node, WorkflowExternalNode):
        lines[0] = "outside the run: a human or a client sends and receives these events"
    elif isinstance(node, WorkflowResourceNode):
        lines[0] = f"resource {node.getter_name or node.label}"
        if node.description:
            lines.append(node.description)
    elif isinstance(node, WorkflowResourceConfigNode):
        lines[0] = f"config {node.config_file}" + (
            f" [{node.path_selector}]" if node.path_selector else ""
        )
        if node.description:
            lines.append(node.description)
    return "\n".join(lines)


def _legend(kinds: list[str], recorded: bool) -> str:
    """The legend: one small drawn sample per kind of node on the page."""
    items: list[str] = []
    for kind in kinds:
        fill, stroke, _ = _COLOURS[kind]
        sample = _shape(kind, PlacedNode(kind, 20, 11, 36, 18, 0), fill, stroke, 1.4)
        items.append(
            f'<li><svg width="40" height="22" viewBox="0 0 40 22" aria-hidden="true">{sample}'
            f"</svg>{escape(_LEGEND_NAMES[kind])}</li>"
        )
    if recorded:
        items.append(
            '<li><svg width="40" height="22" viewBox="0 0 40 22" aria-hidden="true">'
            f'<circle cx="20" cy="11" r="10" fill="{_RAN}"/><text x="20" y="11" '
            'text-anchor="middle" dominant-baseline="central" font-size="10" fill="#fff">×n'
            "</text></svg>ran n times; #k on an edge: the k-th step execution</li>"
        )
    return f'<section class="legend"><h2>Legend</h2><ul>{"".join(items)}</ul></section>\n'


def _run_list(runs: Sequence[StepRun]) -> str:
    if not runs:
        return '<section class="runs"><h2>Most recent execution</h2><p>No step ran.</p></section>\n'
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.step_name] = counts.get(run.step_name, 0) + 1
    items = "".join(
        f'<li><b>{escape(r.step_name)}</b><span class="ev">{escape(r.input_event)} → '
        f"{escape(', '.join(r.output_events) or 'nothing')}</span></li>"
        for r in runs
    )
    rows = "".join(f"<tr><td>{escape(name)}</td><td>×{n}</td></tr>" for name, n in counts.items())
    return (
        f'<section class="runs"><h2>Most recent execution: {len(runs)} step '
        f"execution{'s' if len(runs) != 1 else ''}</h2><ol>{items}</ol>"
        f"<h2>Times each step ran</h2><table>{rows}</table></section>\n"
    )
