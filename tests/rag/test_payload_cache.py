"""The embedded store's payload cache: the same hits as without it, never stale, bounded."""

from __future__ import annotations

import pytest
from batonflow.rag import Chunk, QdrantStore, StoreConfigError
from batonflow.rag._payload_cache import PayloadCache

TEXTS = [
    "Green tea is steeped at 80 degrees.",
    "Black tea wants boiling water and four minutes.",
    "Sourdough bread rises slowly with wild yeast.",
    "Oolong tea sits between green and black tea.",
]


def _fill(store: QdrantStore) -> None:
    store.upsert([Chunk(text=t, source=f"doc{n}", index=0) for n, t in enumerate(TEXTS)])


def _seen(store: QdrantStore, query: str) -> list[tuple[str, float, str, str]]:
    return [(h.id, h.score, h.source, h.text) for h in store.query(query, top_k=10)]


def test_hits_are_the_same_with_and_without_the_cache() -> None:
    with (
        QdrantStore(location=":memory:") as cached,
        QdrantStore(location=":memory:", payload_cache_mb=0) as plain,
    ):
        _fill(cached)
        _fill(plain)
        for query in ("tea", "green tea water", "bread yeast", "tea"):
            first = _seen(cached, query)
            assert first == _seen(plain, query) == _seen(cached, query)
            assert all(isinstance(hit_id, str) for hit_id, *_ in first)
        assert len(cached._engine._caches["docs"]) == 4  # type: ignore[union-attr]


def test_a_write_is_seen_by_the_next_query() -> None:
    with QdrantStore(location=":memory:") as store:
        _fill(store)
        assert store.query("oolong", top_k=1)[0].text == TEXTS[3]
        store.upsert([Chunk(text="Oolong tea is half oxidised.", source="doc3", index=0)])
        assert store.query("oolong", top_k=1)[0].text == "Oolong tea is half oxidised."
        store.delete_source("doc3")
        assert [h.source for h in store.query("oolong", top_k=10)] == []


def test_the_cache_stays_within_its_budget() -> None:
    cache = PayloadCache(budget=2_000)
    for n in range(100):
        cache.put(n, {"text": "x" * 300})
    assert cache.size <= 2_000 and 0 < len(cache) < 100
    found, missing = cache.get_many([0, 99])
    assert list(found) == [99] and missing == [0]  # the oldest went first


def test_a_negative_budget_says_what_to_give() -> None:
    with pytest.raises(StoreConfigError, match="payload_cache_mb must be 0 \\(no cache\\) or more"):
        QdrantStore(location=":memory:", payload_cache_mb=-1)
