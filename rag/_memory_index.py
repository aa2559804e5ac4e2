"""A copy of an embedded collection's vectors in memory, searched with numpy (opt-in).

Why: at top 100, a hybrid query on Qdrant Edge spends more on handing ids to Python than on
searching. Each point id comes back as a ``uuid.UUID`` built in Python (~2 µs), and a hybrid
query fuses two lists of 400 ids: ~1.6 ms on ids alone, where bm25s answers a whole query in
~0.3 ms (SciFact, ``docs/rag.md``). Here the points are rows of numpy arrays: the two searches
give row numbers, fusion works on them, and only the final hits' ids are looked up (as strings
kept since the index was built). Single-vector queries stay on Edge: from here they were no
faster (``docs/rag.md``, Queries from memory).

What it computes is what Qdrant Edge computes, in the same float32 arithmetic:

* sparse: BM25 with Qdrant's IDF modifier: a query term of document frequency ``df`` among
  ``n`` points weighs ``ln((n - df + 0.5) / (df + 0.5) + 1)`` (float32, the C library's
  ``logf``, as Edge's Rust does), times each document's stored weight, summed per document;
* dense: cosine, as the dot product of the stored vectors (Edge keeps them normalised) with
  the normalised query;
* hybrid: the same candidate lists and :func:`~batonflow.rag.fusion.rrf` order, on rows.

Equal scores are ordered by point id, as the engine path orders them. Two differences remain:
sums of several float32 terms may round differently in the last bit from Edge's (it adds in
another order), which can swap two documents whose scores agree to about 1e-6; and after a
delete, Edge's IDF still counts the deleted points until its segment is optimised, where the
index counts the points stored, so BM25 scores (and possibly rankings) differ until then (``bench/beir_bench.py --memory``
counts the SciFact queries whose top 100 differ; ``tests/rag/test_memory_index.py``).

The index is built from one scroll of the collection on the first query after opening or after
a write (every write through the engine drops it), so it suits a store that is queried many
times between writes. It is used only for hybrid queries without a filter.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .fusion import RRF_K

Rows = npt.NDArray[np.int64]
Scores = npt.NDArray[Any]


def _libm_logf() -> Any:
    """The C library's ``logf`` (the one Qdrant Edge's IDF uses), or ``None``."""
    name = ctypes.util.find_library("m")
    if name is None:
        return None
    try:
        logf = ctypes.CDLL(name).logf
    except (OSError, AttributeError):
        return None
    logf.restype, logf.argtypes = ctypes.c_float, [ctypes.c_float]
    return logf


_LOGF = _libm_logf()


def idf(n: int, df: int) -> np.float32:
    """Qdrant's IDF of a term in ``df`` of ``n`` points, in float32."""
    f32 = np.float32
    x = (f32(n) - f32(df) + f32(0.5)) / (f32(df) + f32(0.5)) + f32(1.0)
    return f32(_LOGF(float(x))) if _LOGF is not None else f32(math.log(float(x)))


def _order_key(pid: Any) -> tuple[int, int | str]:
    """How point ids compare (the engine's UUID objects by their integer)."""
    if isinstance(pid, uuid.UUID):
        return (1, pid.int)
    if isinstance(pid, int):
        return (0, pid)
    return (2, str(pid))


class MemoryIndex:
    """The vectors of one collection as numpy arrays (see the module docs).

    Each search returns rows, best first, with equal scores in point-id order (also at the
    cut), and their scores; :meth:`fuse` is :func:`~batonflow.rag.fusion.rrf` on two of them.

    Args:
        ids: each row's point id, as the engine returns it (``uuid.UUID`` or ``int``).
        sparse: each row's sparse vector as ``(indices, values)``, or ``None`` (no sparse).
        dense: each row's stored dense vector, or ``None`` (no dense vector in the collection).
    """

    def __init__(
        self,
        ids: Sequence[Any],
        sparse: Sequence[tuple[Sequence[int], Sequence[float]]] | None,
        dense: Sequence[Sequence[float]] | None,
    ) -> None:
        n = len(ids)
        #: the point id of each row, as a string (what a hit's ``id`` is)
        self.ids = [str(pid) for pid in ids]
        #: the payload cache's key of each row (a UUID's integer)
        self.keys = [pid.int if isinstance(pid, uuid.UUID) else pid for pid in ids]
        rank = np.empty(n, dtype=np.int64)
        rank[sorted(range(n), key=lambda r: _order_key(ids[r]))] = np.arange(n)
        self._id_rank = rank
        self._postings: dict[int, tuple[Rows, npt.NDArray[np.float32]]] = {}
        self._idf: dict[int, np.float32] = {}  # of the terms queried so far
        if sparse is not None:
            self._index_sparse(sparse)
        self._dense: npt.NDArray[np.float32] | None = None
        if dense is not None and n:
            self._dense = np.ascontiguousarray(np.asarray(dense, dtype=np.float32))

    def __len__(self) -> int:
        return len(self.ids)

    def _index_sparse(self, sparse: Sequence[tuple[Sequence[int], Sequence[float]]]) -> None:
        lengths = np.fromiter((len(i) for i, _ in sparse), dtype=np.int64, count=len(sparse))
        rows = np.repeat(np.arange(len(sparse), dtype=np.int64), lengths)
        terms = np.fromiter(
            (t for i, _ in sparse for t in i), dtype=np.int64, count=int(lengths.sum())
        )
        weights = np.fromiter(
            (w for _, v in sparse for w in v), dtype=np.float32, count=int(lengths.sum())
        )
        if not len(terms):
            return
        order = np.argsort(terms, kind="stable")  # each term's rows stay in row order
        terms, rows, weights = terms[order], rows[order], weights[order]
        found, starts = np.unique(terms, return_index=True)
        ends = np.append(starts[1:], len(terms))
        for term, start, end in zip(found.tolist(), starts.tolist(), ends.tolist(), strict=True):
            self._postings[term] = (rows[start:end], weights[start:end])

    # --- searches: rows, best first, and their scores ---------------------------------------

    def _top(self, candidates: Rows, scores: Scores, limit: int) -> tuple[Rows, Scores]:
        """The best ``limit`` of ``candidates`` by score, equal scores in point-id order."""
        values = scores[candidates]
        if len(candidates) > limit:
            # every candidate scoring as the limit-th best, so ties at the cut go by id
            kth = np.partition(values, len(values) - limit)[len(values) - limit]
            keep = values >= kth
            candidates, values = candidates[keep], values[keep]
        order = np.lexsort((self._id_rank[candidates], -values))[:limit]
        return candidates[order], values[order]

    def sparse_top(self, indices: Iterable[int], limit: int) -> tuple[Rows, Scores]:
        """The best ``limit`` rows for a BM25 query of term ids ``indices`` (weights 1.0)."""
        scores = np.zeros(len(self.ids), dtype=np.float32)
        postings, idfs = self._postings, self._idf
        for term in indices:
            entry = postings.get(term)
            if entry is not None:
                rows, weights = entry
                weight = idfs.get(term)
                if weight is None:
                    weight = idfs[term] = idf(len(self.ids), len(rows))
                scores[rows] += weights * weight
        return self._top(np.flatnonzero(scores), scores, limit)

    def dense_top(self, vector: Sequence[float], limit: int) -> tuple[Rows, Scores]:
        """The best ``limit`` rows by cosine similarity to ``vector``."""
        if self._dense is None:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        query = np.asarray(vector, dtype=np.float32)
        norm = np.float32(np.sqrt(np.dot(query, query)))
        if norm > 0:
            query = query / norm
        # numpy's own loop, not BLAS: OpenBLAS's threads, next to Edge's, made this 13 ms
        scores = np.einsum("ij,j->i", self._dense, query)
        return self._top(np.arange(len(scores)), scores, limit)

    def fuse(
        self, sparse: Rows, dense: Rows, *, k: float = RRF_K, limit: int
    ) -> tuple[Rows, Scores]:
        """:func:`~batonflow.rag.fusion.rrf` of two ranked row lists, on arrays."""
        missing = len(sparse) + len(dense) + 1
        s_rank = np.full(len(self.ids), missing, dtype=np.int64)
        d_rank = np.full(len(self.ids), missing, dtype=np.int64)
        s_rank[sparse] = np.arange(len(sparse))  # a list holds each row once
        d_rank[dense] = np.arange(len(dense))
        rows = np.flatnonzero((s_rank < missing) | (d_rank < missing))
        s, d = s_rank[rows], d_rank[rows]
        score = np.where(s < missing, 1.0 / (k + s), 0.0) + np.where(
            d < missing, 1.0 / (k + d), 0.0
        )
        order = np.lexsort((self._id_rank[rows], s, np.minimum(s, d), -score))[:limit]
        return rows[order], score[order]


__all__ = ["MemoryIndex", "idf"]
