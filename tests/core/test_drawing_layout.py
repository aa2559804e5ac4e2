"""The layered layout behind the HTML drawing (batonflow.core.diagram._layout)."""

from __future__ import annotations

import itertools

import pytest
from batonflow.core.diagram._layout import LayoutNode, layered_layout


def nodes(*ids: str, width: float = 60.0) -> list[LayoutNode]:
    return [LayoutNode(i, width, 30.0) for i in ids]


def crossings(layout, edges) -> int:
    """Count crossing pairs among single-layer forward edges."""
    segs = []
    for s, t in edges:
        a, b = layout.nodes[s], layout.nodes[t]
        if b.layer == a.layer + 1:
            segs.append((a.layer, a.x, b.x))
    total = 0
    for (l1, a1, b1), (l2, a2, b2) in itertools.combinations(segs, 2):
        if l1 == l2 and (a1 - a2) * (b1 - b2) < 0:
            total += 1
    return total


def test_chain_is_layered_top_to_bottom():
    """A chain gets one layer per node, in order, each below the previous."""
    edges = [("a", "b"), ("b", "c"), ("c", "d")]
    layout = layered_layout(nodes("a", "b", "c", "d"), edges, roots=["a"])
    assert [layout.nodes[n].layer for n in "abcd"] == [0, 1, 2, 3]
    ys = [layout.nodes[n].y for n in "abcd"]
    assert ys == sorted(ys) and len(set(ys)) == 4
    assert not any(e.back for e in layout.edges)


def test_longest_path_layering_puts_join_below_longest_branch():
    """A node reached by a short and a long path sits below the long one."""
    edges = [("s", "a"), ("a", "b"), ("b", "j"), ("s", "j")]
    layout = layered_layout(nodes("s", "a", "b", "j"), edges, roots=["s"])
    assert layout.nodes["j"].layer == 3
    long_edge = next(e for e in layout.edges if (e.source, e.target) == ("s", "j"))
    # The long edge is routed through one bend point per crossed layer.
    assert len(long_edge.points) == 4


def test_loop_is_drawn_as_back_edge():
    """An edge that returns to an earlier node is marked back; the others point down."""
    edges = [("start", "step"), ("step", "loop"), ("loop", "step"), ("step", "stop")]
    layout = layered_layout(nodes("start", "step", "loop", "stop"), edges, roots=["start"])
    back = [(e.source, e.target) for e in layout.edges if e.back]
    assert back == [("loop", "step")]
    for e in layout.edges:
        if not e.back:
            assert layout.nodes[e.source].layer < layout.nodes[e.target].layer


def test_nodes_of_a_layer_do_not_overlap():
    """Nodes sharing a layer keep at least the node gap between them."""
    edges = [("r", x) for x in "abcdef"]
    layout = layered_layout(nodes("r", *"abcdef", width=80), edges, roots=["r"], node_gap=20)
    row = sorted((layout.nodes[x] for x in "abcdef"), key=lambda p: p.x)
    for left, right in itertools.pairwise(row):
        assert right.x - left.x >= 80 + 20 - 1e-6


def test_ordering_removes_avoidable_crossings():
    """Barycentre sweeps untangle a graph whose depth-first order has a crossing."""
    # Depth first, n3 comes before n4 in layer 2, which crosses n1->n4 with n2->n3.
    edges = [
        ("n0", "n1"), ("n0", "n2"), ("n0", "n5"), ("n1", "n3"),
        ("n1", "n4"), ("n2", "n3"), ("n4", "n6"),
    ]  # fmt: skip
    layout = layered_layout(nodes(*(f"n{i}" for i in range(7))), edges, roots=["n0"])
    assert crossings(layout, edges) == 0
    assert layout.nodes["n4"].x < layout.nodes["n3"].x


def test_free_source_sits_just_above_what_it_feeds():
    """A source that is not a root (a resource) is placed one layer above its target."""
    edges = [("start", "s1"), ("s1", "e"), ("e", "s2"), ("res", "s2")]
    layout = layered_layout(nodes("start", "s1", "e", "s2", "res"), edges, roots=["start"])
    assert layout.nodes["res"].layer == layout.nodes["s2"].layer - 1


def test_drawing_fits_inside_its_size_with_margin():
    """Every node lies inside the reported width and height."""
    edges = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]
    layout = layered_layout(nodes("a", "b", "c", "d"), edges, roots=["a"], margin=10)
    for p in layout.nodes.values():
        assert p.x - p.width / 2 >= 10 - 1e-6
        assert p.x + p.width / 2 <= layout.width - 10 + 1e-6
        assert p.y + p.height / 2 <= layout.height


@pytest.mark.parametrize(
    "edges",
    [
        pytest.param([], id="no-edges"),
        pytest.param([("a", "a")], id="self-loop"),
        pytest.param([("a", "zz")], id="unknown-node"),
        pytest.param([("a", "b"), ("b", "a")], id="two-cycle"),
    ],
)
def test_degenerate_graphs_still_lay_out(edges):
    """Empty, self-looping, dangling and two-node-cycle graphs place every node."""
    layout = layered_layout(nodes("a", "b"), edges)
    assert set(layout.nodes) == {"a", "b"}
    assert len(layout.edges) == len([e for e in edges if "zz" not in e])
