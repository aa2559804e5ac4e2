"""``QdrantRetriever``: a llama-index retriever over a :class:`~batonflow.rag.store.QdrantStore`.

It returns llama-index ``NodeWithScore`` objects, so llama-index node postprocessors (rerankers),
response synthesizers and query engines compose with it::

    retriever = QdrantRetriever(store, top_k=5, filters={"lang": "en"})
    nodes = await retriever.aretrieve("how are events passed between steps?")
    nodes = await retriever.aretrieve(QdrantQuery("events", filters=..., top_k=3))  # per query

Scores: BM25 (sparse only) is unbounded, about 0-30; dense only is cosine similarity (-1 to 1);
hybrid is RRF, ``1/(rank + 1)`` summed over the two lists (at most 1.0, the best rank in both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from .errors import StoreConfigError
from .filters import combine, to_qdrant_filter
from .store import Hit, QdrantStore, collection_not_found


@dataclass
class QdrantQuery(QueryBundle):
    """A query with its own filter and ``top_k`` (for one retrieval).

    Attributes:
        filters: only chunks matching it (MetadataFilters, a Qdrant filter or a dict), on top
            of the retriever's own ``filters``.
        top_k: how many nodes to return instead of the retriever's ``top_k``.
    """

    filters: Any = None
    top_k: int | None = None


class QdrantRetriever(BaseRetriever):
    """Retrieve chunks from a :class:`QdrantStore`: BM25 sparse, or hybrid with an embedding model.

    With ``embed_model`` and a collection that holds dense vectors, each query is embedded and
    run as a hybrid query (sparse + dense, fused with RRF); otherwise it is sparse BM25 only.

    Args:
        store: the store to search.
        embed_model: the llama-index embedding model the documents were ingested with.
        top_k: how many nodes to return.
        filters: only chunks matching it, on every query: llama-index ``MetadataFilters``, a
            qdrant-client ``models.Filter``, or a dict (see :mod:`batonflow.rag.filters`).
        query_filter: the same as ``filters`` (its earlier name); both given must both hold.
        **kwargs: passed to llama-index's ``BaseRetriever`` (``callback_manager``, ...).

    Raises:
        StoreConfigError: ``top_k < 1`` or a filter of an unknown kind.
    """

    def __init__(
        self,
        store: QdrantStore,
        *,
        embed_model: BaseEmbedding | None = None,
        top_k: int = 5,
        filters: Any = None,
        query_filter: Any = None,
        **kwargs: Any,
    ) -> None:
        if top_k < 1:
            raise StoreConfigError(f"top_k must be at least 1, got {top_k}.")
        super().__init__(**kwargs)
        self.store = store
        self.embed_model = embed_model
        self.top_k = top_k
        self.filters = combine(to_qdrant_filter(filters), to_qdrant_filter(query_filter))

    @property
    def collection(self) -> str:
        """The store's collection (names the retrieval span)."""
        return self.store.collection

    def _dense_model(self) -> BaseEmbedding | None:
        # Embedding the query is only worth it when the collection has dense vectors.
        if self.embed_model is None or self.store.dense_size is None:
            return None
        return self.embed_model

    def _options(self, query_bundle: QueryBundle) -> tuple[Any, int]:
        if not self.store.exists():
            raise collection_not_found(self.store)
        if not isinstance(query_bundle, QdrantQuery):
            return self.filters, self.top_k
        top_k = query_bundle.top_k if query_bundle.top_k is not None else self.top_k
        if top_k < 1:
            raise StoreConfigError(f"top_k must be at least 1, got {top_k}.")
        return combine(self.filters, to_qdrant_filter(query_bundle.filters)), top_k

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        flt, top_k = self._options(query_bundle)
        dense = None
        model = self._dense_model()
        if model is not None:
            dense = query_bundle.embedding or model.get_query_embedding(query_bundle.query_str)
        hits = self.store.query(query_bundle.query_str, dense=dense, top_k=top_k, query_filter=flt)
        return [hit_to_node(h) for h in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        flt, top_k = self._options(query_bundle)
        dense = None
        model = self._dense_model()
        if model is not None:
            dense = query_bundle.embedding or await model.aget_query_embedding(
                query_bundle.query_str
            )
        hits = await self.store.aquery(
            query_bundle.query_str, dense=dense, top_k=top_k, query_filter=flt
        )
        return [hit_to_node(h) for h in hits]


def hit_to_node(hit: Hit) -> NodeWithScore:
    """A store :class:`Hit` as a llama-index ``NodeWithScore`` (metadata gains ``source``)."""
    metadata = dict(hit.metadata)
    metadata.setdefault("source", hit.source)
    return NodeWithScore(
        node=TextNode(id_=hit.id, text=hit.text, metadata=metadata), score=hit.score
    )


__all__ = ["QdrantQuery", "QdrantRetriever", "collection_not_found", "hit_to_node"]
