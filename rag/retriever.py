"""``QdrantRetriever``: a llama-index retriever over a :class:`~batonflow.rag.store.QdrantStore`.

It returns llama-index ``NodeWithScore`` objects, so llama-index node postprocessors (rerankers),
response synthesizers and query engines compose with it::

    retriever = QdrantRetriever(store, top_k=5)
    nodes = await retriever.aretrieve("how are events passed between steps?")
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from qdrant_client import models

from .errors import StoreConfigError
from .store import Hit, QdrantStore


class QdrantRetriever(BaseRetriever):
    """Retrieve chunks from a :class:`QdrantStore`: BM25 sparse, or hybrid with an embedding model.

    With ``embed_model`` and a collection that holds dense vectors, each query is embedded and
    run as a hybrid query (sparse + dense, fused with RRF); otherwise it is sparse BM25 only.

    Args:
        store: the store to search.
        embed_model: the llama-index embedding model the documents were ingested with.
        top_k: how many nodes to return.
        query_filter: a Qdrant filter applied to every query (e.g. on ``source``).
        **kwargs: passed to llama-index's ``BaseRetriever`` (``callback_manager``, ...).
    """

    def __init__(
        self,
        store: QdrantStore,
        *,
        embed_model: BaseEmbedding | None = None,
        top_k: int = 5,
        query_filter: models.Filter | None = None,
        **kwargs: Any,
    ) -> None:
        if top_k < 1:
            raise StoreConfigError(f"top_k must be at least 1, got {top_k}.")
        super().__init__(**kwargs)
        self.store = store
        self.embed_model = embed_model
        self.top_k = top_k
        self.query_filter = query_filter

    def _dense_model(self) -> BaseEmbedding | None:
        # Embedding the query is only worth it when the collection has dense vectors.
        if self.embed_model is None or self.store.dense_size is None:
            return None
        return self.embed_model

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        dense = None
        model = self._dense_model()
        if model is not None:
            dense = query_bundle.embedding or model.get_query_embedding(query_bundle.query_str)
        hits = self.store.query(
            query_bundle.query_str, dense=dense, top_k=self.top_k, query_filter=self.query_filter
        )
        return [hit_to_node(h) for h in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        dense = None
        model = self._dense_model()
        if model is not None:
            dense = query_bundle.embedding or await model.aget_query_embedding(
                query_bundle.query_str
            )
        hits = await self.store.aquery(
            query_bundle.query_str, dense=dense, top_k=self.top_k, query_filter=self.query_filter
        )
        return [hit_to_node(h) for h in hits]


def hit_to_node(hit: Hit) -> NodeWithScore:
    """A store :class:`Hit` as a llama-index ``NodeWithScore`` (metadata gains ``source``)."""
    metadata = dict(hit.metadata)
    metadata.setdefault("source", hit.source)
    return NodeWithScore(
        node=TextNode(id_=hit.id, text=hit.text, metadata=metadata), score=hit.score
    )


__all__ = ["QdrantRetriever", "hit_to_node"]
