"""QdrantRetriever: a llama-index retriever over the store (sparse, hybrid, filtered)."""

from __future__ import annotations

import pytest
from batonflow.rag import QdrantRetriever, QdrantStore, StoreConfigError
from batonflow.rag.store import Chunk
from llama_index.core.schema import NodeWithScore
from qdrant_client import QdrantClient, models
from rag_helpers import CORPUS, ConceptEmbedding


def _fill(store: QdrantStore, embed: ConceptEmbedding | None = None) -> None:
    for name, text in CORPUS.items():
        dense = embed.get_text_embedding(text) if embed else None
        store.upsert([Chunk(text=text, source=name, index=0, metadata={"lang": "en"}, dense=dense)])


def test_sync_retrieve_returns_scored_nodes_with_metadata(memory_store: QdrantStore) -> None:
    """retrieve() gives NodeWithScore, best first, with the chunk's metadata and its source."""
    _fill(memory_store)
    nodes = QdrantRetriever(memory_store, top_k=2).retrieve("engine oil")
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    assert nodes[0].node.metadata == {"lang": "en", "source": "cars.md"}
    assert nodes[0].node.get_content() == CORPUS["cars.md"]
    assert len(nodes) <= 2


async def test_query_filter_restricts_the_sources(memory_store: QdrantStore) -> None:
    """A Qdrant filter given to the retriever applies to every query."""
    _fill(memory_store)
    only_dogs = models.Filter(
        must=[models.FieldCondition(key="source", match=models.MatchValue(value="dogs.txt"))]
    )
    retriever = QdrantRetriever(memory_store, query_filter=only_dogs)
    assert await retriever.aretrieve("engine oil") == []
    assert [n.node.metadata["source"] for n in await retriever.aretrieve("puppies")] == ["dogs.txt"]


async def test_embedding_is_skipped_for_a_sparse_only_collection(memory_store: QdrantStore) -> None:
    """With no dense vectors stored, the query is not embedded (BM25 only)."""
    _fill(memory_store)

    class Exploding(ConceptEmbedding):
        async def _aget_query_embedding(self, query: str) -> list[float]:
            raise AssertionError("embedded a query for a sparse-only collection")

    nodes = await QdrantRetriever(memory_store, embed_model=Exploding()).aretrieve("dough")
    assert nodes[0].node.metadata["source"] == "bread.txt"


async def test_hybrid_retrieval_with_an_embedding_model(memory_store: QdrantStore) -> None:
    """With dense vectors stored, async and sync retrieval both find a paraphrase."""
    embed = ConceptEmbedding()
    _fill(memory_store, embed)
    retriever = QdrantRetriever(memory_store, embed_model=embed, top_k=3)
    assert (await retriever.aretrieve("canine healthcare"))[0].node.metadata["source"] == "dogs.txt"
    assert retriever.retrieve("automobile upkeep")[0].node.metadata["source"] == "cars.md"


def test_top_k_must_be_positive(memory_store: QdrantStore) -> None:
    """top_k=0 is refused with the rule."""
    with pytest.raises(StoreConfigError, match="top_k must be at least 1, got 0"):
        QdrantRetriever(memory_store, top_k=0)


def test_score_scales_are_as_documented() -> None:
    """BM25 scores exceed 1, hybrid RRF scores are at most 1, dense-only scores are cosines."""
    embed = ConceptEmbedding()
    with QdrantStore(location=":memory:") as store:
        for name, text in CORPUS.items():
            store.upsert([Chunk(text, name, 0, dense=embed.get_text_embedding(text))])
        bm25 = store.query("engine oil kilometres")
        assert bm25[0].score > 1.0
        q = "engine oil"
        hybrid = store.query(q, dense=embed.get_query_embedding(q))
        assert hybrid[0].score == pytest.approx(1.0)  # first in both lists: 1/2 + 1/2
        assert all(0 < h.score <= 1.0 for h in hybrid)
    client = QdrantClient(location=":memory:")
    client.create_collection(
        "dense", vectors_config=models.VectorParams(size=8, distance=models.Distance.COSINE)
    )
    client.upsert(
        "dense",
        [
            models.PointStruct(id=i, vector=embed.get_text_embedding(t), payload={"text": t})
            for i, t in enumerate(CORPUS.values())
        ],
    )
    with QdrantStore(client=client, collection="dense") as store:
        dense = store.query("x", dense=embed.get_query_embedding("car oil"))
        assert dense[0].score == pytest.approx(1.0) and all(-1 <= h.score <= 1 for h in dense)
    client.close()
