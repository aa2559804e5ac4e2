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

    def search(
        self,
        collection: str,
        layout: Layout,
        *,
        sparse: SparseVector | None,
        dense: list[float] | None,
        limit: int,
        flt: models.Filter | None,
        fields: list[str] | bool,
    ) -> list[tuple[str, float, dict[str, Any]]]:
        """The best ``limit`` points by one vector (``sparse``, else ``dense``), with ``fields``."""
        query: Any
        using: str | None
        if sparse is not None and layout.sparse is not None:
            if not sparse.indices:
                return []
            query, using = (
                models.SparseVector(indices=sparse.indices, values=sparse.values),
                layout.sparse,
            )
        elif dense is not None:
            query, using = dense, layout.dense or None
        else:
            return []
        response = self.client.query_points(
            collection,
            query=query,
            using=using,
            limit=limit,
            query_filter=flt,
            with_payload=fields,
        )
        return [(str(p.id), float(p.score), dict(p.payload or {})) for p in response.points]

    def retrieve(
        self, collection: str, ids: Sequence[str], fields: list[str] | bool
    ) -> dict[str, dict[str, Any]]:
        """The payloads (``fields`` of them) of the points ``ids`` that exist."""
        if not ids:
            return {}
        records = self.client.retrieve(
            collection, ids=list(ids), with_payload=fields, with_vectors=False
        )
        return {str(r.id): dict(r.payload or {}) for r in records}

    def set_sparse(
        self,
        collection: str,
        layout: Layout,
        vectors: Sequence[tuple[str, SparseVector]],
        payload: dict[str, Any],
    ) -> None:
        """Replace the sparse vectors of points and set ``payload`` fields on them."""
        if not vectors or layout.sparse is None:
            return
        name = layout.sparse
        self.client.update_vectors(
            collection,
            points=[
                models.PointVectors(
                    id=pid,
                    vector={name: models.SparseVector(indices=v.indices, values=v.values)},
                )
                for pid, v in vectors
            ],
            wait=True,
        )
        self.client.set_payload(
            collection, payload=payload, points=[pid for pid, _ in vectors], wait=True
        )

    def memory_index(self, collection: str, layout: Layout) -> None:
        """No vectors in memory: a Qdrant server searches its own (see ``_memory_index``)."""
        return None

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


def client_engine(
    client: QdrantClient | None,
    url: str | None,
    location: str | None,
    api_key: str | None,
    timeout: int | None,
    where: str,
) -> ClientEngine:
    """The qdrant-client engine: a given client, a server by URL, or a local-mode folder."""
    if client is not None:
        return ClientEngine(client, owned=False)
    if url is not None or location is not None:
        made = QdrantClient(url=url, location=location, api_key=api_key, timeout=timeout)
        return ClientEngine(made, owned=True)
    return ClientEngine(open_local_client(where), owned=True)


__all__ = ["ClientEngine", "client_engine", "open_local_client"]
