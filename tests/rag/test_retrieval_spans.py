"""Retrieval spans: named after the collection, with the documents, the query embedding inside."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from batonflow.observability.genai import instrument_llama_index
from batonflow.rag import IngestionWorkflow, QdrantRetriever, QdrantStore
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rag_helpers import ConceptEmbedding


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.clear()


async def _retrieve(exporter: InMemorySpanExporter, capture: bool, corpus) -> tuple:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    embed = ConceptEmbedding()
    store = QdrantStore(location=":memory:", collection="manuals")
    await IngestionWorkflow(store=store, embed_model=embed).run(paths=[corpus])
    undo = instrument_llama_index(provider, capture_content=capture)
    try:
        with provider.get_tracer("test").start_as_current_span("retrieve step"):
            nodes = await QdrantRetriever(store, embed_model=embed, top_k=2).aretrieve(
                "automobile upkeep"
            )
    finally:
        undo()
        store.close()
        provider.shutdown()
    spans = {s.name: s for s in exporter.get_finished_spans()}
    return spans, nodes


async def test_retrieval_span_is_named_after_the_collection_with_documents(
    exporter: InMemorySpanExporter, corpus
) -> None:
    """`retrieval manuals` carries each document's id and score; the embedding span is its child."""
    spans, nodes = await _retrieve(exporter, False, corpus)
    retrieval = spans["retrieval manuals"]
    attrs = dict(retrieval.attributes or {})
    assert attrs["gen_ai.data_source.id"] == "manuals"
    assert attrs["retrieval.documents.0.document.id"] == nodes[0].node.node_id
    assert attrs["retrieval.documents.1.document.score"] == pytest.approx(nodes[1].score)
    assert "retrieval.documents.0.document.content" not in attrs  # content is opt-in
    embedding = next(s for name, s in spans.items() if name.startswith("embeddings"))
    assert embedding.parent is not None and embedding.parent.span_id == retrieval.context.span_id
    assert retrieval.parent is not None
    assert retrieval.parent.span_id == spans["retrieve step"].context.span_id


async def test_retrieved_content_is_recorded_when_asked(
    exporter: InMemorySpanExporter, corpus
) -> None:
    """With content capture on, each document's text and metadata are on the span."""
    spans, nodes = await _retrieve(exporter, True, corpus)
    attrs = dict(spans["retrieval manuals"].attributes or {})
    assert attrs["retrieval.documents.0.document.content"] == nodes[0].node.get_content()
    assert '"file_name": "cars.md"' in attrs["retrieval.documents.0.document.metadata"]
