"""Filters: llama-index MetadataFilters, Qdrant filters and dicts, per store query, retriever and run."""

from __future__ import annotations

import pytest
from batonflow.rag import QdrantRetriever, QdrantStore, RAGWorkflow
from batonflow.rag.errors import RAGConfigError, StoreConfigError
from batonflow.rag.filters import to_qdrant_filter
from batonflow.rag.retriever import QdrantQuery
from batonflow.rag.store import Chunk
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from qdrant_client import QdrantClient, models

DOCS = [
    ("en/oil.md", "Change the engine oil every 8000 kilometres.", {"lang": "en", "year": 2021}),
    (
        "de/oil.md",
        "Change the engine oil every 8000 kilometres, bitte.",
        {"lang": "de", "year": 2023},
    ),
    (
        "fr/oil.md",
        "Change the engine oil every 8000 kilometres, merci.",
        {"lang": "fr", "year": 2024},
    ),
]


@pytest.fixture(params=["edge", "client"])
def store(request: pytest.FixtureRequest):
    if request.param == "edge":
        s = QdrantStore(location=":memory:")
    else:
        s = QdrantStore(client=QdrantClient(location=":memory:"))
    for source, text, meta in DOCS:
        s.upsert([Chunk(text=text, source=source, index=0, metadata={**meta, "file_name": source})])
    yield s
    s.close()


def _sources(hits) -> set[str]:
    return {h.source for h in hits}


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        pytest.param(
            MetadataFilters(filters=[MetadataFilter(key="lang", value="de")]),
            {"de/oil.md"},
            id="eq",
        ),
        pytest.param(
            MetadataFilters(
                filters=[MetadataFilter(key="lang", value="de", operator=FilterOperator.NE)]
            ),
            {"en/oil.md", "fr/oil.md"},
            id="ne",
        ),
        pytest.param(
            MetadataFilters(
                filters=[MetadataFilter(key="year", value=2023, operator=FilterOperator.GTE)]
            ),
            {"de/oil.md", "fr/oil.md"},
            id="gte",
        ),
        pytest.param(
            MetadataFilters(
                filters=[MetadataFilter(key="lang", value=["en", "fr"], operator=FilterOperator.IN)]
            ),
            {"en/oil.md", "fr/oil.md"},
            id="in",
        ),
        pytest.param(
            MetadataFilters(
                filters=[
                    MetadataFilter(key="lang", value="en"),
                    MetadataFilters(
                        filters=[MetadataFilter(key="year", value=2024)],
                        condition=FilterCondition.AND,
                    ),
                ],
                condition=FilterCondition.OR,
            ),
            {"en/oil.md", "fr/oil.md"},
            id="nested-or",
        ),
        pytest.param(
            MetadataFilters(
                filters=[MetadataFilter(key="lang", value="en")], condition=FilterCondition.NOT
            ),
            {"de/oil.md", "fr/oil.md"},
            id="not",
        ),
        pytest.param(
            models.Filter(
                must=[
                    models.FieldCondition(key="source", match=models.MatchValue(value="fr/oil.md"))
                ]
            ),
            {"fr/oil.md"},
            id="qdrant-filter",
        ),
        pytest.param({"lang": ["de", "fr"], "year": 2024}, {"fr/oil.md"}, id="dict"),
    ],
)
def test_store_query_takes_every_kind_of_filter(store: QdrantStore, filters, expected) -> None:
    """MetadataFilters, Qdrant filters and dicts select the same chunks on both engines."""
    assert _sources(store.query("engine oil", top_k=10, query_filter=filters)) == expected


def test_unknown_filter_kind_and_operator_are_clear_errors() -> None:
    """A filter of another type, or an operator Qdrant lacks, names what to pass."""
    with pytest.raises(
        StoreConfigError, match=r"filters= got str .*pass a llama-index MetadataFilters"
    ):
        to_qdrant_filter("lang=en")
    bad = MetadataFilters(filters=[MetadataFilter(key="t", value="x", operator=FilterOperator.ALL)])
    with pytest.raises(
        StoreConfigError, match=r"operator 'all' \(on 't'\) has no Qdrant equivalent"
    ):
        to_qdrant_filter(bad)


async def test_retriever_filters_apply_to_every_query_and_combine_per_query(
    store: QdrantStore,
) -> None:
    """A retriever's filters hold on each query; a QdrantQuery's filters and top_k add to them."""
    retriever = QdrantRetriever(store, top_k=5, filters={"lang": ["de", "fr"]})
    nodes = await retriever.aretrieve("engine oil")
    assert {n.node.metadata["source"] for n in nodes} == {"de/oil.md", "fr/oil.md"}
    nodes = await retriever.aretrieve(QdrantQuery("engine oil", filters={"year": 2024}))
    assert [n.node.metadata["source"] for n in nodes] == ["fr/oil.md"]
    nodes = retriever.retrieve(QdrantQuery("engine oil", top_k=1))
    assert len(nodes) == 1


async def test_run_takes_filters_and_top_k(store: QdrantStore) -> None:
    """run(filters=..., top_k=...) narrows one run; the workflow's filters hold on every run."""
    flow = RAGWorkflow(store=store)
    response = await flow.run(query="engine oil", filters={"lang": "de"})
    assert [s.metadata["source"] for s in response.sources] == ["de/oil.md"]
    response = await flow.run(query="engine oil", top_k=2)
    assert len(response.sources) == 2
    english = RAGWorkflow(
        store=store, filters=MetadataFilters(filters=[MetadataFilter(key="lang", value="en")])
    )
    assert [s.metadata["source"] for s in (await english.run(query="engine oil")).sources] == [
        "en/oil.md"
    ]
    assert (await english.run(query="engine oil", filters={"lang": "de"})).sources == []
    with pytest.raises(StoreConfigError, match=r"run\(top_k=...\) must be at least 1, got 0"):
        await flow.run(query="engine oil", top_k=0)
    with pytest.raises(StoreConfigError, match="filters= got int"):
        await flow.run(query="engine oil", filters=3)


async def test_run_options_need_the_default_retriever() -> None:
    """Per-run filters with a custom retriever, or filters= beside retriever=, are refused."""

    class Fixed(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return []

    with pytest.raises(RAGConfigError, match="give the filters to your retriever"):
        RAGWorkflow(retriever=Fixed(), filters={"lang": "en"})
    with pytest.raises(
        RAGConfigError, match=r"needs the default QdrantRetriever, and this workflow has a Fixed"
    ):
        await RAGWorkflow(retriever=Fixed()).run(query="x", top_k=2)
