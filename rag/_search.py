"""How a query is answered on an engine: searched, fused, and only the hits' fields read.

A hybrid query runs two id-only searches (BM25 and dense) and fuses them here, with
:func:`~batonflow.rag.fusion.rrf` and its stable tie-break, then reads the payloads of the fused
top ``k`` only; a single-vector query reads its hits' fields with the search. Equal scores come
back in point-id order, the same on every call and engine. Points in a flat payload layout
(neither ``_node_content`` nor ``metadata``) are read whole: every top-level field is metadata.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .chunks import Hit
from .fusion import rrf
from .layout import READ_FIELDS, Layout, hit_of
from .sparse import SparseVector

if TYPE_CHECKING:
    from ._memory_index import MemoryIndex


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
    hybrid = sparse is not None and dense is not None
    # a single-vector query is no faster from memory (measured): only a hybrid one, whose
    # 800 candidate ids cost more than both searches, is answered there
    index = engine.memory_index(collection, layout) if hybrid and flt is None else None
    if index is not None and sparse is not None and dense is not None:
        results = _search_memory(
            engine, collection, index, sparse=sparse, dense=dense, top_k=top_k, rrf_k=rrf_k
        )
    elif sparse is not None and dense is not None:
        wide = _wide(top_k)
        # each list with equal scores in point-id order, as every other result (and the
        # memory index) has them
        lists = [
            [
                pid
                for pid, _, _ in sorted(
                    engine.search(
                        collection,
                        layout,
                        sparse=sq,
                        dense=dq,
                        limit=wide,
                        flt=flt,
                        fields=False,
                    ),
                    key=_best_first,
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
        results = sorted(found, key=_best_first)
    flat = [pid for pid, _, p in results if "_node_content" not in p and "metadata" not in p]
    if flat:  # a flat layout's metadata is every top-level field: read them whole
        whole = engine.retrieve(collection, flat, True)
        results = [(pid, sc, whole.get(str(pid), p)) for pid, sc, p in results]
    return [hit_of(pid, score, payload) for pid, score, payload in results]


def _search_memory(
    engine: Any,
    collection: str,
    index: MemoryIndex,
    *,
    sparse: SparseVector,
    dense: list[float],
    top_k: int,
    rrf_k: float,
) -> list[tuple[str, float, dict[str, Any]]]:
    """A hybrid :func:`search` on the collection's vectors in memory (the same lists, order)."""
    wide = _wide(top_k)
    rows, scores = index.fuse(
        index.sparse_top(sparse.indices, wide)[0],
        index.dense_top(dense, wide)[0],
        k=rrf_k,
        limit=top_k,
    )
    picked = rows.tolist()
    payloads = engine.payloads_of(collection, index, picked)
    ids = index.ids
    return [
        (ids[row], score, payload if payload is not None else {})
        for row, score, payload in zip(picked, scores.tolist(), payloads, strict=True)
    ]


def _best_first(result: tuple[Any, float, Any]) -> tuple[float, Any]:
    """The sort key of a search result: higher score first, then lower point id."""
    return (-result[1], result[0])


def _wide(top_k: int) -> int:
    """How many candidates each list of a hybrid query brings to the fusion."""
    return max(4 * top_k, 20)


__all__ = ["search"]
