"""A chunk's text is stored once; old collections (text stored twice) still read (issue #33).

Both engines: Qdrant Edge (embedded) and qdrant-client (the code path of a Qdrant server).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from batonflow.rag.layout import payload_of
from batonflow.rag.retriever import hit_to_node
from batonflow.rag.store import Chunk, QdrantStore
from qdrant_client import QdrantClient

TEXT = "Change the engine oil every 8000 kilometres and check the tyre pressure."
META = {"file_name": "cars.md", "lang": "en", "text": "a metadata key named text"}


@pytest.fixture(params=["edge", "client"])
def store(request: pytest.FixtureRequest):
    if request.param == "edge":
        s = QdrantStore(location=":memory:")
        yield s
        s.close()
    else:
        client = QdrantClient(location=":memory:")
        s = QdrantStore(client=client)
        yield s
        s.close()
        client.close()


def stored_payload(store: QdrantStore, pid: str) -> dict[str, Any]:
    return store._engine.retrieve(store.collection, [pid], True)[pid]


def old_payload(chunk: Chunk) -> dict[str, Any]:
    """The payload batonflow wrote before: the text at the top level and in _node_content."""
    payload = payload_of(chunk, "h")
    payload["text"] = chunk.text
    return payload


def test_the_text_is_stored_once(store: QdrantStore) -> None:
    chunk = Chunk(TEXT, "cars.md", 0, metadata=dict(META))
    store.upsert([chunk])
    payload = stored_payload(store, chunk.id)
    assert json.dumps(payload, ensure_ascii=False).count("engine oil") == 1
    assert "text" not in payload
    assert json.loads(payload["_node_content"])["text"] == TEXT  # where llama-index reads it
    (hit,) = store.query("engine oil")
    assert (hit.text, hit.metadata, hit.source) == (TEXT, META, "cars.md")


def test_hits_decode_their_node_only_when_read(store: QdrantStore) -> None:
    store.upsert([Chunk(TEXT, "cars.md", 0, metadata=dict(META))])
    (hit,) = store.query("engine oil")
    assert hit._node_json is not None and hit._text is None  # nothing decoded yet
    assert hit.source == "cars.md"
    assert hit.text == TEXT and hit._node_json is None


def test_an_old_collection_with_the_text_twice_still_reads(store: QdrantStore) -> None:
    """Points as earlier versions wrote them give the same hits and nodes as new ones."""
    old = Chunk(TEXT, "old.md", 0, metadata=dict(META))
    new = Chunk(TEXT, "new.md", 0, metadata=dict(META))
    store.upsert([new])
    layout = store._read_layout()
    vector = store.encoder.encode_document(TEXT)
    store._engine.upsert(store.collection, layout, [(old.id, vector, None, old_payload(old))])
    hits = {h.source: h for h in store.query("engine oil", top_k=5)}
    assert set(hits) == {"old.md", "new.md"}
    assert hits["old.md"].text == hits["new.md"].text == TEXT
    assert hits["old.md"].metadata == hits["new.md"].metadata == META
    old_node, new_node = hit_to_node(hits["old.md"]), hit_to_node(hits["new.md"])
    assert old_node.node.get_content() == new_node.node.get_content() == TEXT
    assert old_node.node.metadata == {**META, "source": "old.md"}
    assert new_node.node.metadata == {**META, "source": "new.md"}


def test_an_old_collection_gets_its_mean_length_from_its_text(store: QdrantStore) -> None:
    """Points without bm25_len (earlier versions) are measured once and re-encoded on write."""
    store.upsert([Chunk("zebra one two three", "new.md", 0)])
    layout = store._read_layout()
    old = Chunk("zebra " + " ".join(f"w{i}" for i in range(11)), "old.md", 0)
    payload = old_payload(old)
    store._engine.upsert(
        store.collection, layout, [(old.id, store.encoder.encode_document(old.text), None, payload)]
    )
    reopened = QdrantStore(client=store.client) if store.engine == "client" else None
    target = reopened or store
    target._lengths = None  # as a store opened on it now
    assert target.mean_length() == pytest.approx((4 + 12) / 2)
    target.upsert([Chunk("zebra q1 q2 q3", "third.md", 0)])
    assert stored_payload(target, old.id)["bm25_len"] == 12
    assert stored_payload(target, old.id)["bm25_avg"] == pytest.approx(20 / 3)
    if reopened is not None:
        reopened.close()


def test_a_flat_payload_without_a_node_reads_its_metadata(store: QdrantStore) -> None:
    """A point with only top-level fields (no _node_content) is read whole."""
    store.upsert([Chunk("seed", "seed.md", 0)])
    layout = store._read_layout()
    chunk = Chunk(TEXT, "flat.md", 0)
    payload = {"text": TEXT, "source": "flat.md", "topic": "cars"}
    store._engine.upsert(
        store.collection, layout, [(chunk.id, store.encoder.encode_document(TEXT), None, payload)]
    )
    (hit,) = store.query("engine oil")
    assert (hit.text, hit.metadata) == (TEXT, {"topic": "cars"})
