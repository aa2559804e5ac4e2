"""Reciprocal-rank fusion of a sparse and a dense result list, with a stable order.

A hybrid query asks the engine for two ranked lists of point ids (BM25 and embedding) and
fuses them here rather than in Qdrant: Qdrant's fusion returns tied points in an order that
can change from one call to the next, and ties are common (with a small constant, the first
of one list and the first of the other score the same).

Each point scores ``1 / (k + rank)`` in each list it appears in (``rank`` from 0, as in
Qdrant's own fusion), summed: with ``k=2``, 1.0 for the first of both lists.
Points are ordered by:

1. the fused score, higher first;
2. then the better (smaller) of its two ranks;
3. then its rank in the sparse (BM25) list, a point missing from a list ranking after every
   point in it;
4. then its id, so that the order is total and the same on every call and every engine.

:data:`RRF_K` was chosen by measurement on BEIR SciFact's train queries (``bench/beir_bench.py
--split train --fusion-k ...``; the figures are in ``docs/rag.md``, Retrieval quality).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

#: A point id: a string, or an engine's own id object (ordered and hashable).
Id = TypeVar("Id", bound=Hashable)

#: The fusion constant ``k`` (see the module docs for how it was chosen).
RRF_K = 2


def rrf(
    sparse: Sequence[Id], dense: Sequence[Id], *, k: int = RRF_K, limit: int
) -> list[tuple[Id, float]]:
    """The best ``limit`` ids of two ranked lists, fused, as ``(id, score)`` in a stable order."""
    missing = len(sparse) + len(dense) + 1
    ranks: dict[Id, list[int]] = {}
    for rank, pid in enumerate(sparse):
        ranks.setdefault(pid, [rank, missing])
    for rank, pid in enumerate(dense):
        entry = ranks.setdefault(pid, [missing, missing])
        if entry[1] == missing:
            entry[1] = rank
    scored = []
    for pid, (s, d) in ranks.items():
        score = (1.0 / (k + s) if s < missing else 0.0) + (1.0 / (k + d) if d < missing else 0.0)
        scored.append((-score, min(s, d), s, pid))
    scored.sort()
    return [(pid, -neg) for neg, _, _, pid in scored[:limit]]


__all__ = ["RRF_K", "rrf"]
