"""The store's points as written: BM25 vectors normalised by the collection's mean length.

A write (:meth:`~batonflow.rag.QdrantStore.upsert`) counts each chunk's terms
(:meth:`~batonflow.rag.sparse.BM25SparseEncoder.count_terms`), adds the chunks' lengths to the
collection's (:class:`~batonflow.rag.lengths.MeanLength`), then weighs every vector with the
mean that includes the batch (:func:`encode_points`). The lengths are read from the
collection's payloads on a store's first write (:func:`load_lengths`); a point encoded with a
mean too far from the current one is encoded again (:func:`renormalise`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .chunks import Chunk
from .layout import READ_FIELDS, Layout, dense_floats, hit_of, payload_of
from .lengths import MeanLength
from .sparse import BM25SparseEncoder, SparseVector

if TYPE_CHECKING:
    from ._client import ClientEngine
    from ._edge import EdgeEngine

#: A point as the engines write it: (id, BM25 vector, dense vector, payload).
Point = tuple[str, SparseVector, "list[float] | None", dict[str, Any]]


def encode_points(
    encoder: BM25SparseEncoder,
    lengths: MeanLength,
    chunks: Sequence[Chunk],
    ids: Sequence[str],
    counted: Sequence[tuple[Mapping[int, int], int]],
) -> list[Point]:
    """The points of ``chunks`` (their ``ids``, their terms ``counted``), each BM25 vector
    weighed with the collection's mean length including these chunks (kept in ``lengths``)."""
    for pid, (_, length) in zip(ids, counted, strict=True):
        lengths.set(pid, length, 0.0)
    mean = lengths.mean()
    weigh = encoder.weigh
    points: list[Point] = []
    for pid, chunk, (counts, length) in zip(ids, chunks, counted, strict=True):
        payload = payload_of(chunk, chunk.content_hash, pid)
        payload["bm25_len"], payload["bm25_avg"] = length, mean
        lengths.set(pid, length, mean)
        points.append((pid, weigh(counts, length, mean), dense_floats(chunk.dense), payload))
    return points


def load_lengths(
    engine: EdgeEngine | ClientEngine, collection: str, encoder: BM25SparseEncoder
) -> MeanLength:
    """Every point's BM25 length and encoding mean, as the collection's payloads record them
    (points of earlier versions, which record none, measured from their text)."""
    lengths = MeanLength(encoder.avg_len)

    def measure(ids: list[str]) -> dict[str, int]:
        payloads = engine.retrieve(collection, ids, READ_FIELDS)
        return {
            pid: encoder.count_terms(hit_of(pid, 0.0, payloads.get(pid)).text)[1] for pid in ids
        }

    lengths.load(engine.scroll(collection, None, ["bm25_len", "bm25_avg"]), measure)
    return lengths


def renormalise(
    engine: EdgeEngine | ClientEngine,
    collection: str,
    layout: Layout,
    encoder: BM25SparseEncoder,
    lengths: MeanLength,
    batch_size: int,
) -> None:
    """Re-encode the points whose vectors used a mean too far from the current one."""
    if not len(lengths) or layout.sparse is None:
        return
    mean = lengths.mean()
    stale = lengths.stale()
    for start in range(0, len(stale), batch_size):
        ids = stale[start : start + batch_size]
        payloads = engine.retrieve(collection, ids, READ_FIELDS)
        by_length: dict[int, list[tuple[str, SparseVector]]] = {}
        for pid in ids:
            if pid not in payloads:
                continue
            counts, length = encoder.count_terms(hit_of(pid, 0.0, payloads[pid]).text)
            by_length.setdefault(length, []).append((pid, encoder.weigh(counts, length, mean)))
            lengths.set(pid, length, mean)
        for length, vectors in by_length.items():  # one payload per length
            engine.set_sparse(collection, layout, vectors, {"bm25_len": length, "bm25_avg": mean})


__all__ = ["Point", "encode_points", "load_lengths", "renormalise"]
