"""The qdrant-client engine: a Qdrant server by URL, or a ``QdrantClient`` the caller passed.

It speaks the same small interface as :class:`~batonflow.rag._edge.EdgeEngine`, so
:class:`~batonflow.rag.QdrantStore` reads and writes the same layout on either.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException

from ._probe import unreachable
from .errors import StoreLockedError, StoreUnavailableError
from .layout import Layout, detect
from .sparse import SparseVector

_PAGE = 1024


class ClientEngine:
    """Collections through qdrant-client (see the module docs)."""

    def __init__(self, client: QdrantClient, *, owned: bool) -> None:
        self.client = client
        self.owned = owned
        opts = client.init_options
        self.is_local = opts.get("location") == ":memory:" or opts.get("path") is not None
        self.url = opts.get("url")
        self.where = str(self.url or opts.get("path") or opts.get("location") or "")

    def _unavailable(self, exc: Exception) -> StoreUnavailableError:
        return unreachable(str(self.url), exc)

    def layout(self, collection: str) -> Layout | None:
        """The collection's vectors, or ``None`` when it does not exist."""
        try:
            if not self.client.collection_exists(collection):
                return None
        except ResponseHandlingException as exc:  # qdrant-client's "no response" error
            raise self._unavailable(exc) from exc
        params = self.client.get_collection(collection).config.params
        vectors = params.vectors
        if isinstance(vectors, models.VectorParams):  # one unnamed vector
            dense = {"": vectors.size}
        else:
            dense = {name: v.size for name, v in (vectors or {}).items()}
        return detect(dense, set(params.sparse_vectors or {}))

    def create(self, collection: str, layout: Layout) -> None:
        """Create the collection with ``layout``'s vectors."""
        vectors = (
            {
                layout.dense: models.VectorParams(
                    size=layout.dense_size, distance=models.Distance.COSINE
                )
            }
            if layout.dense is not None and layout.dense_size is not None
            else {}
        )
        sparse = (
            {layout.sparse: models.SparseVectorParams(modifier=models.Modifier.IDF)}
            if layout.sparse is not None
            else None
        )
        self.client.create_collection(
            collection, vectors_config=vectors, sparse_vectors_config=sparse
        )
        if not self.is_local:  # local mode ignores payload indexes (and warns)
            self.client.create_payload_index(collection, "source", models.PayloadSchemaType.KEYWORD)

    def collections(self) -> list[str]:
        """The names of the collections."""
        return sorted(c.name for c in self.client.get_collections().collections)

    def drop(self, collection: str) -> None:
        """Delete the collection."""
        self.client.delete_collection(collection)

    def upsert(
        self,
        collection: str,
        layout: Layout,
        points: Sequence[tuple[str, SparseVector | None, list[float] | None, dict[str, Any]]],
    ) -> None:
        """Write points ``(id, sparse, dense, payload)``."""
        # Built from checked parts, so they skip pydantic validation (which costs more than
        # encoding the chunk).
        point = models.PointStruct.model_construct
        sparse_vector = models.SparseVector.model_construct
        batch = []
        for pid, sparse, dense, payload in points:
            vector: dict[str, Any] = {}
            if sparse is not None and layout.sparse is not None:
                vector[layout.sparse] = sparse_vector(indices=sparse.indices, values=sparse.values)
            if dense is not None and layout.dense is not None:
                vector[layout.dense] = dense
            batch.append(point(id=pid, vector=vector, payload=payload))
        self.client.upsert(collection, points=batch, wait=True)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id."""
        if ids:
            self.client.delete(
                collection, points_selector=models.PointIdsList(points=list(ids)), wait=True
            )

    def scroll(
        self, collection: str, flt: models.Filter | None, fields: list[str]
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every point matching ``flt``, as ``(id, payload with only fields)``."""
        offset: Any = None
        while True:
            points, offset = self.client.scroll(
                collection,
                scroll_filter=flt,
                limit=_PAGE,
                offset=offset,
                with_payload=fields,
                with_vectors=False,
            )
            for p in points:
                yield str(p.id), dict(p.payload or {})
            if offset is None:
                return

    def count(self, collection: str, flt: models.Filter | None) -> int:
        """How many points match ``flt``."""
        return self.client.count(collection, count_filter=flt, exact=True).count

    def query(
        self,
        collection: str,
        layout: Layout,
        *,
        sparse: SparseVector | None,
        dense: list[float] | None,
        top_k: int,
        flt: models.Filter | None,
        wide: int,
    ) -> list[tuple[str, float, dict[str, Any]]]:
        """The best ``top_k`` points: sparse, dense, or both fused with RRF."""
        sparse_q = (
            models.SparseVector(indices=sparse.indices, values=sparse.values)
            if sparse is not None and sparse.indices and layout.sparse is not None
            else None
        )
        common: dict[str, Any] = {"limit": top_k, "query_filter": flt, "with_payload": True}
        if sparse_q is not None and dense is not None:
            response = self.client.query_points(
                collection,
                prefetch=[
                    models.Prefetch(query=sparse_q, using=layout.sparse, limit=wide),
                    models.Prefetch(query=dense, using=layout.dense or None, limit=wide),
                ],
                query=models.FusionQuery(fusion=models.Fusion.RRF),
                **common,
            )
        elif dense is not None:
            response = self.client.query_points(
                collection, query=dense, using=layout.dense or None, **common
            )
        elif sparse_q is not None:
            response = self.client.query_points(
                collection, query=sparse_q, using=layout.sparse, **common
            )
        else:
            return []
        return [(str(p.id), float(p.score), dict(p.payload or {})) for p in response.points]

    def flush(self) -> None:
        """Nothing to flush: qdrant-client writes with ``wait=True``."""

    def close(self) -> None:
        """Close the client, if this engine opened it."""
        if self.owned:
            self.client.close()


def open_local_client(where: str) -> QdrantClient:
    """qdrant-client's local mode on a folder that already holds its data."""
    try:
        # Calls are serialised by the store's lock, so the SQLite file may be used from the
        # worker thread of the async methods.
        return QdrantClient(path=where, force_disable_check_same_thread=True)
    except RuntimeError as exc:
        if "already accessed" not in str(exc):
            raise
        raise StoreLockedError(
            f"The local Qdrant folder {where!r} is already open in another process (or another "
            "QdrantStore). Close the other one (store.close()), use another path=, or run a "
            "Qdrant server and pass url= for concurrent access."
        ) from exc


__all__ = ["ClientEngine", "open_local_client"]
