"""Hybrid rankings are deterministic; BM25 uses the collection's real mean length (issue #33).

Each test runs on both engines the rag package supports, Qdrant Edge (embedded) and
qdrant-client (its local mode, the code path of a Qdrant server), and on Qdrant Edge with
``memory_index=True``.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from batonflow.rag.fusion import rrf
from batonflow.rag.store import Chunk, QdrantStore
from qdrant_client import QdrantClient


def open_store(engine: str, where: Path | None = None) -> tuple[QdrantStore, QdrantClient | None]:
    """A store on ``engine`` ("edge", "memory" or "client"), in memory or in the folder ``where``.

    "memory": Qdrant Edge with ``memory_index=True`` (queries answered from numpy arrays).
    """
    if engine in ("edge", "memory"):
        on = engine == "memory"
        if where:
            return QdrantStore(path=where, memory_index=on), None
        return QdrantStore(location=":memory:", memory_index=on), None
    client = QdrantClient(path=str(where)) if where else QdrantClient(location=":memory:")
    return QdrantStore(client=client), client


def close(store: QdrantStore, client: QdrantClient | None) -> None:
    store.close()
    if client is not None:
        client.close()


ENGINES = pytest.mark.parametrize("engine", ["edge", "memory", "client"])


def tied_corpus() -> list[Chunk]:
    """Ten chunks ranked in opposite orders by BM25 and by embedding: they tie in pairs."""
    chunks = []
    for i in range(10):
        # BM25 rank i: more "alpha" in a chunk of equal length ranks it higher;
        # dense rank 9 - i: closer to the query vector [1, 0, 0] ranks higher.
        words = ["alpha"] * (10 - i) + ["filler"] * i
        chunks.append(Chunk(" ".join(words), f"x{i}", 0, dense=[1.0, 0.1 * (10 - i), 0.0]))
    return chunks


@ENGINES
def test_the_same_hybrid_query_ranks_the_same_20_times(engine: str) -> None:
    store, client = open_store(engine)
    try:
        store.upsert(tied_corpus())
        rankings = {
            tuple(h.id for h in store.query("alpha", dense=[1.0, 0.0, 0.0], top_k=10))
            for _ in range(20)
        }
        assert len(rankings) == 1
        (ranking,) = rankings
        hits = store.query("alpha", dense=[1.0, 0.0, 0.0], top_k=10)
        assert tuple(h.id for h in hits) == ranking
        scores = [h.score for h in hits]
        assert any(a == b for a, b in zip(scores, scores[1:]))  # the query has ties
        assert scores == sorted(scores, reverse=True)
        # ties broken as documented: the better rank, then the BM25 list's first
        assert [h.source for h in hits[:2]] == ["x0", "x9"]
    finally:
        close(store, client)


def test_fusion_orders_ties_by_rank_then_sparse_then_id() -> None:
    fused = rrf(["a", "b"], ["c", "a"], k=2, limit=10)
    assert [pid for pid, _ in fused] == ["a", "c", "b"]
    assert fused[0][1] == pytest.approx(1 / 2 + 1 / 3)
    # equal in everything but the id
    assert [pid for pid, _ in rrf(["y"], ["x"], k=2, limit=10)] == ["y", "x"]
    assert [pid for pid, _ in rrf([], ["y", "x"], k=2, limit=1)] == ["y"]


def test_fusion_constant_is_the_stores_setting() -> None:
    with QdrantStore(location=":memory:", rrf_k=60) as store:
        store.upsert(tied_corpus())
        hits = store.query("alpha", dense=[1.0, 0.0, 0.0], top_k=2)
        assert 1 / 60 < hits[0].score <= 2 / 60  # at most 1/60 from each list


def bm25_tf(tf: int, length: int, mean: float, k1: float = 1.2, b: float = 0.75) -> float:
    return tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / mean))


def doc(source: str, n: int) -> Chunk:
    """A chunk of ``n`` BM25 terms: one "zebra" and ``n - 1`` distinct other stems."""
    return Chunk(" ".join(["zebra"] + [f"w{source}x{i}" for i in range(n - 1)]), source, 0)


@ENGINES
def test_mean_length_follows_ingest_delete_reingest_and_reopen(engine: str, tmp_path: Path) -> None:
    store, client = open_store(engine, tmp_path / "q")
    try:
        assert store.mean_length() is None
        store.upsert([doc("a", 10), doc("b", 30)])
        assert store.mean_length() == pytest.approx(20)
        # a score ratio that depends on the mean: "zebra" once in each
        hits = {h.source: h.score for h in store.query("zebra", top_k=5)}
        want = bm25_tf(1, 10, 20) / bm25_tf(1, 30, 20)
        assert hits["a"] / hits["b"] == pytest.approx(want, rel=1e-4)
        store.upsert([doc("c", 200)])  # the mean moves to 80: older points re-encoded
        assert store.mean_length() == pytest.approx(80)
        hits = {h.source: h.score for h in store.query("zebra", top_k=5)}
        assert hits["a"] / hits["b"] == pytest.approx(
            bm25_tf(1, 10, 80) / bm25_tf(1, 30, 80), rel=1e-4
        )
        store.delete_source("c")
        assert store.mean_length() == pytest.approx(20)
        store.replace_source("b", [doc("b", 50)])  # re-ingested, longer
        assert store.mean_length() == pytest.approx(30)
        hits = {h.source: h.score for h in store.query("zebra", top_k=5)}
        assert hits["a"] / hits["b"] == pytest.approx(
            bm25_tf(1, 10, 30) / bm25_tf(1, 50, 30), rel=1e-4
        )
    finally:
        close(store, client)
    store, client = open_store(engine, tmp_path / "q")
    try:
        assert store.mean_length() == pytest.approx(30)
        store.upsert([doc("d", 30)])
        assert store.mean_length() == pytest.approx(30)
        assert store.count() == 3
    finally:
        close(store, client)


def test_mean_length_matches_an_exact_bm25() -> None:
    """Ingested whole, scores are BM25 with the real mean (IDF from Qdrant), as bm25s has it."""
    lengths = {"a": 5, "b": 12, "c": 40, "d": 7}
    with QdrantStore(location=":memory:") as store:
        store.upsert([doc(s, n) for s, n in lengths.items()])
        mean = sum(lengths.values()) / len(lengths)
        idf = math.log(1 + (4 - 4 + 0.5) / (4 + 0.5))
        for hit in store.query("zebra", top_k=4):
            assert hit.score == pytest.approx(idf * bm25_tf(1, lengths[hit.source], mean), 1e-4)
