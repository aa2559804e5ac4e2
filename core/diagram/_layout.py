"""A layered (Sugiyama-style) layout for small directed graphs, in pure Python.

The HTML drawing must render with no network access, so no JavaScript layout engine can be
fetched: the positions are computed here and written into the page as plain SVG. The method is
the classic one, kept small because workflow graphs have tens of nodes, not thousands:

1. **Cycle removal**: a depth-first search from the roots (the start event) marks the edges that
   close a loop (*back edges*); they are reversed for layering and drawn as side curves.
2. **Layering**: longest path from the roots, so every edge points down; nodes with no incoming
   edge other than the roots (resources, the outside world) are pulled down next to the first
   node they feed.
3. **Dummy nodes**: an edge spanning several layers gets one invisible node per crossed layer,
   so it is routed around the nodes in between.
4. **Ordering**: alternating down/up sweeps that move each node to the barycentre of its
   neighbours in the adjacent layer; the order with the fewest edge crossings wins.
5. **Coordinates**: each node is pulled towards the mean x of its neighbours while keeping the
   order and a minimum gap, solved exactly per layer by isotonic regression (pool adjacent
   violators).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

Point = tuple[float, float]


@dataclass(frozen=True, slots=True)
class LayoutNode:
    """A node to place: its id and its drawn size in pixels."""

    id: str
    width: float
    height: float


@dataclass(frozen=True, slots=True)
class PlacedNode:
    """A placed node: centre ``(x, y)``, size, and the layer it sits in (0 at the top)."""

    id: str
    x: float
    y: float
    width: float
    height: float
    layer: int


@dataclass(frozen=True, slots=True)
class RoutedEdge:
    """An edge with the points its curve passes through (first at the source).

    ``back`` edges close a loop (they point up); their ``points`` are the source and target
    centres and the renderer draws them as a curve around the side.
    """

    source: str
    target: str
    points: tuple[Point, ...]
    back: bool


@dataclass(frozen=True, slots=True)
class Layout:
    """The placed nodes, routed edges and the size of the drawing."""

    nodes: dict[str, PlacedNode]
    edges: tuple[RoutedEdge, ...]
    width: float
    height: float


def layered_layout(
    nodes: Sequence[LayoutNode],
    edges: Sequence[tuple[str, str]],
    roots: Sequence[str] = (),
    *,
    layer_gap: float = 56.0,
    node_gap: float = 28.0,
    margin: float = 24.0,
) -> Layout:
    """Place ``nodes`` in layers so that ``edges`` point down, with few crossings.

    Args:
        nodes: The nodes, in a stable order (it breaks ties).
        edges: ``(source, target)`` pairs; edges naming unknown ids are left out. Self-loops
            are kept as back edges with both points at the node's centre.
        roots: Nodes to start the search from (they end up in the top layer).
        layer_gap: Vertical space between two layers.
        node_gap: Minimum horizontal space between two nodes of a layer.
        margin: Empty border around the drawing.

    Returns:
        The layout, with edges in the order given.
    """
    size = {n.id: n for n in nodes}
    order = [n.id for n in nodes]
    clean = [(s, t) for s, t in edges if s in size and t in size and s != t]
    back = _back_edges(order, clean, [r for r in roots if r in size])
    dag = sorted(
        {(t, s) if (s, t) in back else (s, t) for s, t in clean},
        key=lambda e: (order.index(e[0]), order.index(e[1])),
    )
    layer = _layers(order, dag, set(roots))

    # Dummy nodes: one per layer crossed by a long edge.
    chains: dict[tuple[str, str], list[str]] = {}
    width = {n: size[n].width for n in order}
    height = {n: size[n].height for n in order}
    links: list[tuple[str, str]] = []
    for s, t in dag:
        chain = [s]
        for k in range(layer[s] + 1, layer[t]):
            dummy = f"\0{s}\0{t}\0{k}"
            layer[dummy], width[dummy], height[dummy] = k, 6.0, 0.0
            chain.append(dummy)
        chain.append(t)
        chains[(s, t)] = chain
        links.extend(itertools.pairwise(chain))

    rows = _order_layers(order, layer, links)
    xs = _x_positions(rows, links, width, node_gap)

    # Vertical positions: each layer as tall as its tallest node.
    ys: dict[str, float] = {}
    top = margin
    for row in rows:
        row_height = max((height[n] for n in row), default=0.0)
        for n in row:
            ys[n] = top + row_height / 2
        top += row_height + layer_gap
    left = min((xs[n] - width[n] / 2 for n in xs), default=0.0)
    shift = margin - left
    placed = {
        n: PlacedNode(n, xs[n] + shift, ys[n], size[n].width, size[n].height, layer[n])
        for n in order
    }
    routed: list[RoutedEdge] = []
    for s, t in edges:
        if s not in size or t not in size:
            continue
        if s == t:  # a self-loop: the renderer draws it beside the node
            p = placed[s]
            routed.append(RoutedEdge(s, t, ((p.x, p.y), (p.x, p.y)), True))
            continue
        is_back = (s, t) in back
        chain = chains[(t, s)] if is_back else chains[(s, t)]
        middle = [(xs[d] + shift, ys[d]) for d in chain[1:-1]]
        if is_back:
            middle.reverse()
        first, last = placed[s], placed[t]
        routed.append(RoutedEdge(s, t, ((first.x, first.y), *middle, (last.x, last.y)), is_back))
    right = max((p.x + p.width / 2 for p in placed.values()), default=0.0)
    return Layout(placed, tuple(routed), right + margin, max(top - layer_gap + margin, 0.0))


def _back_edges(
    order: list[str], edges: list[tuple[str, str]], roots: list[str]
) -> set[tuple[str, str]]:
    """The edges that close a cycle in a depth-first search started at ``roots``."""
    succ: dict[str, list[str]] = {n: [] for n in order}
    has_pred: set[str] = set()
    for s, t in edges:
        succ[s].append(t)
        has_pred.add(t)
    state: dict[str, int] = {}  # 1: on the stack, 2: finished
    back: set[tuple[str, str]] = set()
    starts = roots + [n for n in order if n not in has_pred] + order
    for start in starts:
        if start in state:
            continue
        state[start] = 1
        stack = [(start, iter(succ[start]))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state.get(child) == 1:
                back.add((node, child))
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(succ[child])))
    return back


def _layers(order: list[str], dag: list[tuple[str, str]], roots: set[str]) -> dict[str, int]:
    """Longest-path layering of an acyclic graph; free sources sit just above their targets."""
    preds: dict[str, list[str]] = {n: [] for n in order}
    succs: dict[str, list[str]] = {n: [] for n in order}
    for s, t in dag:
        preds[t].append(s)
        succs[s].append(t)
    topo = _topological(order, preds, succs)
    layer: dict[str, int] = {}
    for n in topo:
        layer[n] = max((layer[p] + 1 for p in preds[n]), default=0)
    # A source that is not a root (a resource, an event sent from outside) would otherwise float
    # at the top; put it right above the first node it feeds.
    for n in reversed(topo):
        if not preds[n] and n not in roots and succs[n]:
            layer[n] = max(min(layer[t] for t in succs[n]) - 1, 0)
    return layer


def _topological(
    order: list[str], preds: dict[str, list[str]], succs: dict[str, list[str]]
) -> list[str]:
    """Kahn's algorithm, taking nodes in their given order when there is a choice."""
    missing = {n: len(preds[n]) for n in order}
    ready = [n for n in order if missing[n] == 0]
    out: list[str] = []
    while ready:
        n = ready.pop(0)
        out.append(n)
        for t in succs[n]:
            missing[t] -= 1
            if missing[t] == 0:
                ready.append(t)
    return out


def _order_layers(
    order: list[str], layer: dict[str, int], links: list[tuple[str, str]]
) -> list[list[str]]:
    """Order the nodes of each layer to reduce crossings (barycentre heuristic)."""
    depth = max(layer.values(), default=-1) + 1
    rows: list[list[str]] = [[] for _ in range(depth)]
    up: dict[str, list[str]] = {n: [] for n in layer}
    down: dict[str, list[str]] = {n: [] for n in layer}
    for s, t in links:
        down[s].append(t)
        up[t].append(s)
    # Initial order: breadth first from the top layer, so related nodes start close together.
    seen: set[str] = set()
    queue = [n for n in order if layer[n] == 0] + [n for n in layer if n not in order]
    queue += [n for n in order if layer[n] != 0]
    pending = list(queue)
    while pending:
        n = pending.pop(0)
        if n in seen:
            continue
        seen.add(n)
        rows[layer[n]].append(n)
        pending[0:0] = [t for t in down[n] if t not in seen]
    best = [list(r) for r in rows]
    best_crossings = _crossings(rows, down)
    for sweep in range(8):
        downward = sweep % 2 == 0
        indices = range(1, depth) if downward else range(depth - 2, -1, -1)
        for i in indices:
            ref = rows[i - 1] if downward else rows[i + 1]
            where = {n: k for k, n in enumerate(ref)}
            near = up if downward else down
            rows[i] = _sort_by_barycentre(rows[i], near, where)
        count = _crossings(rows, down)
        if count < best_crossings:
            best, best_crossings = [list(r) for r in rows], count
    return best


def _sort_by_barycentre(
    row: list[str], near: dict[str, list[str]], where: dict[str, int]
) -> list[str]:
    """Stable sort of ``row`` by the mean position of each node's neighbours in ``where``."""
    keys: dict[str, float] = {}
    for k, n in enumerate(row):
        spots = [where[m] for m in near[n] if m in where]
        keys[n] = sum(spots) / len(spots) if spots else float(k)
    return sorted(row, key=lambda n: keys[n])


def _crossings(rows: list[list[str]], down: dict[str, list[str]]) -> int:
    """The number of edge crossings between adjacent layers."""
    total = 0
    for i in range(len(rows) - 1):
        here = {n: k for k, n in enumerate(rows[i])}
        below = {n: k for k, n in enumerate(rows[i + 1])}
        pairs = sorted((here[s], below[t]) for s in rows[i] for t in down[s] if t in below)
        for a in range(len(pairs)):
            for b in range(a + 1, len(pairs)):
                if pairs[a][0] < pairs[b][0] and pairs[a][1] > pairs[b][1]:
                    total += 1
    return total


def _x_positions(
    rows: list[list[str]], links: list[tuple[str, str]], width: dict[str, float], gap: float
) -> dict[str, float]:
    """Horizontal centres: near the neighbours' mean, keeping order and minimum gaps."""
    up: dict[str, list[str]] = {n: [] for n in width}
    down: dict[str, list[str]] = {n: [] for n in width}
    for s, t in links:
        down[s].append(t)
        up[t].append(s)
    x: dict[str, float] = {}
    widest = max((sum(width[n] + gap for n in row) for row in rows), default=0.0)
    for row in rows:
        total = sum(width[n] + gap for n in row) - gap
        cursor = (widest - total) / 2
        for n in row:
            x[n] = cursor + width[n] / 2
            cursor += width[n] + gap
    passes = [("down", range(1, len(rows))), ("up", range(len(rows) - 2, -1, -1))] * 4
    passes.append(("both", range(len(rows))))
    for kind, indices in passes:
        for i in indices:
            row = rows[i]
            wanted = []
            for n in row:
                near = up[n] if kind == "down" else down[n] if kind == "up" else up[n] + down[n]
                wanted.append(sum(x[m] for m in near) / len(near) if near else x[n])
            for n, value in zip(row, _pack(row, wanted, width, gap), strict=True):
                x[n] = value
    return x


def _pack(row: list[str], wanted: list[float], width: dict[str, float], gap: float) -> list[float]:
    """Positions closest (least squares) to ``wanted`` that keep order and minimum gaps.

    With ``offset[i]`` the least distance from the first node to node ``i``, the shifted values
    ``x[i] - offset[i]`` must not decrease: an isotonic regression, solved by merging adjacent
    blocks that violate the order (pool adjacent violators).
    """
    offsets = [0.0]
    for a, b in itertools.pairwise(row):
        offsets.append(offsets[-1] + (width[a] + width[b]) / 2 + gap)
    blocks: list[list[float]] = []  # [mean, count]
    for value, offset in zip(wanted, offsets, strict=True):
        blocks.append([value - offset, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, count = blocks.pop()
            prev = blocks[-1]
            prev[0] = (prev[0] * prev[1] + mean * count) / (prev[1] + count)
            prev[1] += count
    out: list[float] = []
    for mean, count in blocks:
        out.extend([mean] * int(count))
    return [y + offset for y, offset in zip(out, offsets, strict=True)]
