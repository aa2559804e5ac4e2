"""How a query is answered on an engine: searched, fused, and only the hits' fields read.

A hybrid query runs two id-only searches (BM25 and dense) and fuses them here, with
:func:`~batonflow.rag.fusion.rrf` and its stable tie-break, then reads the payloads of the fused
top ``k`` only; a single-vector query reads its hits' fields with the search. Equal scores come
back in point-id order, the same on every call and engine. Points in a flat payload layout
(neither ``_node_content`` nor ``metadata``) are read whole: every top-level field is metadata.
"""

from __future__ import annotations

from typing import Any

from .chunks import Hit
from .fusion import rrf
from .layout import READ_FIELDS, Layout, hit_of
from .sparse import SparseVector


def search(
    engine: Any,
    collection: str,
    layout: Layout,
    *,
    sparse: SparseVector | None,
    dense: list[float] | None,
    top_k: int,
    flt: Any,
    rrf_k: float,
) -> list[Hit]:
    """The ``top_k`` hits of a query by ``sparse`` and/or ``dense`` (both: hybrid, fused)."""
    results: list[tuple[str, float, dict[str, Any]]]
    if sparse is not None and dense is not None:
        wide = max(4 * top_k, 20)
        lists = [
            [
                pid
                for pid, _, _ in engine.search(
                    collection,
                    layout,
                    sparse=sq,
                    dense=dq,
                    limit=wide,
                    flt=flt,
                    fields=False,
                )
            ]
            for sq, dq in ((sparse, None), (None, dense))
        ]
        fused = rrf(lists[0], lists[1], k=rrf_k, limit=top_k)
        payloads = engine.retrieve(collection, [pid for pid, _ in fused], READ_FIELDS)
        results = [(str(pid), score, payloads.get(str(pid), {})) for pid, score in fused]
    elif sparse is None and dense is None:
        return []
    else:
        found = engine.search(
            collection,
            layout,
            sparse=sparse,
            dense=dense,
            limit=top_k,
            flt=flt,
            fields=READ_FIELDS,
        )
        # equal scores in id order, the same on every call and engine
        results = sorted(found, key=lambda r: (-r[1], r[0]))
    flat = [pid for pid, _, p in results if "_node_content" not in p and "metadata" not in p]
    if flat:  # a flat layout's metadata is every top-level field: read them whole
        whole = engine.retrieve(collection, flat, True)
        results = [(pid, sc, whole.get(str(pid), p)) for pid, sc, p in results]
    return [hit_of(pid, score, payload) for pid, score, payload in results]


__all__ = ["search"]
