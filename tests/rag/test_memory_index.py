"""QdrantStore(memory_index=True): the same hits as Qdrant Edge's search, kept current on writes."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import pytest
from batonflow.rag import Chunk, QdrantStore, StoreConfigError
from corpora import EN_DOCS, EN_QUERIES, ZH_DOCS, ZH_QUERIES
from qdrant_client import QdrantClient

DIM = 24


def hashed(text: str) -> list[float]:
    """A deterministic dense vector: each word (CJK: character) adds to dimensions its CRC picks."""
    vec = [0.0] * DIM
    for word in re.findall(r"[a-z0-9_]+|[^\sa-z0-9_.,，。：；、]", text.lower()):
        h = zlib.crc32(word.encode("utf-8"))
        vec[h % DIM] += 1.0 + (h >> 8) % 7 / 10
        vec[(h >> 16) % DIM] -= 0.5
    return vec if any(vec) else [1.0] + [0.0] * (DIM - 1)


def corpus() -> list[Chunk]:
    docs = {f"en/{k}": v for k, v in EN_DOCS.items()} | {f"zh/{k}": v for k, v in ZH_DOCS.items()}
    return [
        Chunk(text, source, i, metadata={"lang": source[:2]}, dense=hashed(text))
        for source, doc in docs.items()
        for i, text in enumerate(doc.split("."))
        if text.strip()
    ]


def seen(store: QdrantStore, text: str, *, mode: str, top_k: int, **kw: object) -> list[tuple]:
    dense = hashed(text) if mode != "sparse" else None
    hits = store.query(text if mode != "dense" else "", dense=dense, top_k=top_k, **kw)  # type: ignore[arg-type]
    return [(h.id, h.source, h.text, h.metadata, h.score) for h in hits]


def same(a: list[tuple], b: list[tuple]) -> None:
    """The same hits in the same order; scores equal to float32 rounding."""
    assert [h[:4] for h in a] == [h[:4] for h in b]
    assert [h[4] for h in a] == pytest.approx([h[4] for h in b], rel=1e-6, abs=1e-6)


def index_hits(store: QdrantStore, text: str, *, mode: str, top_k: int) -> list[tuple]:
    """The memory index's own single-vector search (a hybrid query's candidate list)."""
    index = store._engine.memory_index(store.collection, store._layout)  # type: ignore[union-attr,arg-type]
    assert index is not None
    if mode == "sparse":
        rows, scores = index.sparse_top(store.encoder.encode_query(text).indices, top_k)
    else:
        rows, scores = index.dense_top(hashed(text), top_k)
    return [(index.ids[r], float(sc)) for r, sc in zip(rows.tolist(), scores.tolist(), strict=True)]


QUESTIONS = [q for q, _ in EN_QUERIES + ZH_QUERIES] + ["workflow", "the of"]


@pytest.mark.parametrize("mode", ["sparse", "dense", "hybrid"])
def test_rankings_are_the_engines(mode: str) -> None:
    """Every corpus query ranks the same with the memory index as on Qdrant Edge's search.

    Hybrid queries through the store; the sparse and dense lists they fuse, from the index.
    """
    chunks = corpus()
    with (
        QdrantStore(location=":memory:") as engine,
        QdrantStore(location=":memory:", memory_index=True) as memory,
    ):
        engine.upsert(chunks)
        memory.upsert(chunks)
        for text in QUESTIONS:
            for top_k in (1, 5, 40):
                want = seen(engine, text, mode=mode, top_k=top_k)
                if mode == "hybrid":
                    same(seen(memory, text, mode=mode, top_k=top_k), want)
                else:
                    got = index_hits(memory, text, mode=mode, top_k=top_k)
                    assert [h[0] for h in got] == [h[0] for h in want]
                    assert [h[1] for h in got] == pytest.approx(
                        [h[4] for h in want], rel=1e-6, abs=1e-6
                    )
        assert len(memory._engine._indexes["docs"]) == len(chunks)  # type: ignore[union-attr]


def test_a_write_is_seen_by_the_next_query(tmp_path: Path) -> None:
    """Upserts, deletes and re-encodings (the mean length moves) drop the index; reopening too."""
    first = [
        Chunk("zebra zebra crossing", "a", 0, dense=[1.0, 0.2]),
        Chunk("zebra stripes", "b", 0, dense=[0.3, 1.0]),
    ]
    long = Chunk(" ".join(["zebra"] * 3 + ["herd"] * 40), "c", 0, dense=[1.0, 1.0])
    with (
        QdrantStore(path=tmp_path / "q", memory_index=True) as memory,
        QdrantStore(location=":memory:") as engine,
    ):
        for batch in (first, [long]):  # the second moves the mean: a and b are re-encoded
            memory.upsert(batch)
            engine.upsert(batch)
            for query in ("zebra", "crossing zebra", "herd"):
                same(
                    seen_dense(memory, query, [1.0, 0.5]),
                    seen_dense(engine, query, [1.0, 0.5]),
                )
        memory.delete_source("a")
        engine.delete_source("a")
        # Edge's IDF still counts a deleted point until its segment is optimised; the index
        # counts the stored ones: the same ranking here, not the same BM25 scores
        ranked = [h.source for h in memory.query("zebra", dense=[1.0, 0.5], top_k=5)]
        assert ranked == [h.source for h in engine.query("zebra", dense=[1.0, 0.5], top_k=5)]
        assert sorted(ranked) == ["b", "c"]
    with QdrantStore(path=tmp_path / "q", memory_index=True) as memory:
        assert [h.source for h in memory.query("zebra", dense=[1.0, 0.5], top_k=5)] == ranked


def seen_dense(store: QdrantStore, text: str, dense: list[float]) -> list[tuple]:
    hits = store.query(text, dense=dense, top_k=5)
    return [(h.id, h.source, h.text, h.metadata, h.score) for h in hits]


def test_an_emptied_collection_and_an_empty_chunk() -> None:
    """A collection whose chunks were all deleted finds nothing; a chunk without words is kept."""
    with QdrantStore(location=":memory:", memory_index=True) as store:
        store.upsert([Chunk("zebra", "a", 0, dense=[1.0, 0.0])])
        store.delete_source("a")
        assert store.query("zebra", top_k=3) == []
        assert store.query("zebra", dense=[1.0, 0.0], top_k=3) == []
        store.upsert(
            [Chunk("", "e", 0, dense=[0.0, 1.0]), Chunk("zebra x", "z", 0, dense=[1.0, 1.0])]
        )
        assert [h.source for h in store.query("zebra", dense=[1.0, 0.0], top_k=3)] == ["z", "e"]
        assert [h.source for h in store.query("", dense=[0.0, 1.0], top_k=1)] == ["e"]


def test_equal_scores_come_in_point_id_order() -> None:
    """Tied hits, also at the top-k cut, are the ones with the lowest point ids, in id order."""
    chunks = [Chunk("same words here", f"s{i}", 0, dense=[1.0, 0.0]) for i in range(6)]
    ids = sorted(c.id for c in chunks)
    with QdrantStore(location=":memory:", memory_index=True) as store:
        store.upsert(chunks)
        index = store._engine.memory_index(store.collection, store._layout)  # type: ignore[union-attr,arg-type]
        assert index is not None
        query = store.encoder.encode_query("same words").indices
        for top_k in (1, 3, 6):
            assert [index.ids[r] for r in index.sparse_top(query, top_k)[0]] == ids[:top_k]
            assert [index.ids[r] for r in index.dense_top([1.0, 0.0], top_k)[0]] == ids[:top_k]
        hybrid = store.query("same words", dense=[1.0, 0.0], top_k=6)
        assert [h.id for h in hybrid] == ids  # equal ranks in both lists: the id decides


def test_a_filtered_query_is_answered_by_the_engine() -> None:
    """A query with a filter goes to Qdrant Edge (the index holds no payloads) and filters."""
    chunks = corpus()
    with (
        QdrantStore(location=":memory:") as engine,
        QdrantStore(location=":memory:", memory_index=True) as memory,
    ):
        engine.upsert(chunks)
        memory.upsert(chunks)
        flt = {"lang": "zh"}
        got = seen(memory, "Qdrant 检索", mode="hybrid", top_k=5, query_filter=flt)
        assert got and all(h[1].startswith("zh/") for h in got)
        same(got, seen(engine, "Qdrant 检索", mode="hybrid", top_k=5, query_filter=flt))
        assert "docs" not in memory._engine._indexes  # type: ignore[union-attr]


def test_memory_index_needs_the_embedded_engine() -> None:
    """A store on qdrant-client says memory_index is for the embedded engine only."""
    client = QdrantClient(location=":memory:")
    try:
        with pytest.raises(StoreConfigError, match="memory_index=True needs the embedded engine"):
            QdrantStore(client=client, memory_index=True)
    finally:
        client.close()
