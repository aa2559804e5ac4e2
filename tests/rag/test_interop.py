"""Interop with llama-index's QdrantVectorStore: it reads what batonflow ingests, and back."""

from __future__ import annotations

from pathlib import Path

import pytest
from batonflow.rag import IngestionWorkflow, QdrantStore, RAGWorkflow
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters
from llama_index.vector_stores.qdrant import QdrantVectorStore
from qdrant_client import QdrantClient
from rag_helpers import ConceptEmbedding

# llama-index's store creates payload indexes, which qdrant-client's local mode warns are no-ops.
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")


async def test_llama_index_reads_what_batonflow_ingests(corpus: Path) -> None:
    """VectorStoreIndex.from_vector_store over our collection retrieves, with metadata filters."""
    client = QdrantClient(location=":memory:")
    embed = ConceptEmbedding()
    with QdrantStore(client=client, collection="ours") as store:
        await IngestionWorkflow(store=store, embed_model=embed).run(paths=[corpus])
    index = VectorStoreIndex.from_vector_store(
        QdrantVectorStore(client=client, collection_name="ours"), embed_model=embed
    )
    nodes = index.as_retriever(similarity_top_k=2).retrieve("automobile upkeep")
    assert nodes[0].node.metadata["file_name"] == "cars.md"
    assert "engine oil" in nodes[0].node.get_content()
    only_dogs = MetadataFilters(filters=[MetadataFilter(key="file_name", value="dogs.txt")])
    nodes = index.as_retriever(similarity_top_k=3, filters=only_dogs).retrieve("automobile upkeep")
    assert [n.node.metadata["file_name"] for n in nodes] == ["dogs.txt"]
    assert nodes[0].node.ref_doc_id == str(corpus.resolve() / "dogs.txt")
    client.close()


async def test_batonflow_reads_a_llama_index_collection() -> None:
    """A collection llama-index's QdrantVectorStore wrote is searched by embedding and cited."""
    client = QdrantClient(location=":memory:")
    embed = ConceptEmbedding()
    vector_store = QdrantVectorStore(client=client, collection_name="theirs")
    VectorStoreIndex.from_documents(
        [
            Document(text="Puppies need vaccinations.", metadata={"topic": "pets"}, id_="pets"),
            Document(
                text="Knead the dough and bake the bread.", metadata={"topic": "food"}, id_="food"
            ),
        ],
        storage_context=StorageContext.from_defaults(vector_store=vector_store),
        embed_model=embed,
    )
    with QdrantStore(client=client, collection="theirs") as store:
        response = await RAGWorkflow(store=store, embed_model=embed, top_k=1).run(
            query="canine health"
        )
        assert response.sources[0].text == "Puppies need vaccinations."
        assert response.sources[0].metadata["topic"] == "pets"
        assert response.sources[0].metadata["source"] == "pets"
        filtered = await RAGWorkflow(store=store, embed_model=embed).run(
            query="canine health", filters={"topic": "food"}
        )
        assert [s.metadata["topic"] for s in filtered.sources] == ["food"]
    client.close()


async def test_batonflow_writes_into_a_llama_index_collection() -> None:
    """Ingesting into llama-index's collection adds dense points that llama-index then finds."""
    client = QdrantClient(location=":memory:")
    embed = ConceptEmbedding()
    vector_store = QdrantVectorStore(client=client, collection_name="theirs")
    VectorStoreIndex.from_documents(
        [Document(text="Puppies need vaccinations.", id_="pets")],
        storage_context=StorageContext.from_defaults(vector_store=vector_store),
        embed_model=embed,
    )
    with QdrantStore(client=client, collection="theirs") as store:
        doc = Document(text="Knead the dough and bake the bread.", metadata={"source": "bread"})
        await IngestionWorkflow(store=store, embed_model=embed).run(documents=[doc])
        assert store.count() == 2
    index = VectorStoreIndex.from_vector_store(vector_store, embed_model=embed)
    nodes = index.as_retriever(similarity_top_k=1).retrieve("baking recipe")
    assert nodes[0].node.get_content() == "Knead the dough and bake the bread."
    client.close()
