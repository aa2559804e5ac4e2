"""``QdrantStore``: chunks in a Qdrant collection, embedded locally or on a server.

The same code talks to three kinds of Qdrant:

* ``QdrantStore(path=".batonflow/qdrant")`` (the default): qdrant-client's embedded local mode,
  a folder on disk, no server. Only one client may open a folder at a time.
* ``QdrantStore(location=":memory:")``: local mode in memory, gone when the store closes.
* ``QdrantStore(url="http://localhost:6333", api_key=...)``: a Qdrant server or cluster.

Every point carries a sparse BM25 vector named ``"sparse"`` (see :mod:`batonflow.rag.sparse`;
the collection applies IDF with ``Modifier.IDF``) and, when an embedding model is used, a dense
vector named ``"dense"``. Point ids are UUID5s of (source, chunk index, content hash), so
writing the same chunk twice overwrites it; :meth:`QdrantStore.replace_source` also deletes the
source's old chunks that are not in the new set, so re-ingesting a document never duplicates it.

qdrant-client's local mode is synchronous (and commits each point); the ``a*`` methods run the
calls in a worker thread, one at a time, so the event loop stays free.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException

from .chunks import Chunk, Hit, chunks_of, point_id
from .errors import StoreConfigError, StoreLockedError, StoreUnavailableError
from .sparse import BM25SparseEncoder

SPARSE = "sparse"
DENSE = "dense"
DEFAULT_PATH = ".batonflow/qdrant"
_SCROLL_PAGE = 1024
#: Above this many sources, local mode prunes in one scan of the collection: each filtered
#: request is itself a full scan there, so one filter per source would be quadratic.
_LOCAL_SCAN_SOURCES = 8


class QdrantStore:
    """Chunks with sparse (and optionally dense) vectors in one Qdrant collection.

    Give at most one of ``path``, ``location``, ``url`` or ``client``; with none, the local
    folder ``.batonflow/qdrant`` is used. The collection is created on the first write with the
    vectors it needs.

    Args:
        path: a local folder for embedded Qdrant (``":memory:"`` means in memory).
        location: ``":memory:"`` for in-memory local mode (or a URL, as qdrant-client allows).
        url: the URL of a Qdrant server.
        api_key: the server's API key.
        collection: the collection name.
        client: an existing ``QdrantClient`` to use instead (the store will not close it).
        encoder: the sparse encoder; defaults to English BM25.
        batch_size: points per upsert request.
        timeout: seconds to wait for a Qdrant server's answers (qdrant-client's default: 5).

    Raises:
        StoreConfigError: more than one place to store was given.
        StoreLockedError: the local folder is already open in another client.
        StoreUnavailableError: (on first use) the server at ``url`` cannot be reached.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        location: str | None = None,
        url: str | None = None,
        api_key: str | None = None,
        collection: str = "docs",
        client: QdrantClient | None = None,
        encoder: BM25SparseEncoder | None = None,
        batch_size: int = 256,
        timeout: int | None = None,
    ) -> None:
        given = [
            name
            for name, v in (
                ("path", path),
                ("location", location),
                ("url", url),
                ("client", client),
            )
            if v is not None
        ]
        if len(given) > 1:
            raise StoreConfigError(
                f"QdrantStore got {' and '.join(given)}; give only one of path=, location=, "
                "url= or client=."
            )
        if batch_size < 1:
            raise StoreConfigError(f"batch_size must be at least 1, got {batch_size}.")
        self.collection = collection
        self.encoder = encoder or BM25SparseEncoder()
        self.batch_size = batch_size
        self.url = url if client is None else client.init_options.get("url")
        self._owns_client = client is None
        self._lock = threading.Lock()
        self._dense_size: int | None = None
        self._known = False  # the collection exists and its config was read
        if client is not None:
            self.client = client
            opts = client.init_options
            self.is_local = opts.get("location") == ":memory:" or opts.get("path") is not None
        elif url is not None:
            self.client = QdrantClient(url=url, api_key=api_key, timeout=timeout)
            self.is_local = False
        else:
            where = location if location is not None else os.fspath(path or DEFAULT_PATH)
            self.is_local = True
            self.client = _open_local(where)

    # --- collection -----------------------------------------------------------------------

    def _read_config(self) -> bool:
        """Whether the collection exists; caches its dense vector size."""
        if self._known:
            return True
        try:
            exists = self.client.collection_exists(self.collection)
        except ResponseHandlingException as exc:  # qdrant-client's "no response" error
            raise StoreUnavailableError(
                f"Could not reach Qdrant at {self.url} ({exc}); start the server, check url= "
                "(and api_key=), or leave url= out to use local embedded Qdrant."
            ) from exc
        if not exists:
            return False
        params = self.client.get_collection(self.collection).config.params
        sparse = params.sparse_vectors or {}
        if SPARSE not in sparse:
            raise StoreConfigError(
                f"Collection {self.collection!r} exists but was not created by batonflow (it "
                f"has no sparse vector named {SPARSE!r}); use another collection= name."
            )
        vectors = params.vectors if isinstance(params.vectors, dict) else {}
        self._dense_size = vectors[DENSE].size if DENSE in vectors else None
        self._known = True
        return True

    def ensure_collection(self, dense_size: int | None = None) -> None:
        """Create the collection if needed, or check that it fits ``dense_size``.

        Raises:
            StoreConfigError: the collection's dense vectors do not match ``dense_size``.
        """
        with self._lock:
            self._ensure_collection(dense_size)

    def _ensure_collection(self, dense_size: int | None) -> None:
        if not self._read_config():
            self.client.create_collection(
                self.collection,
                vectors_config=(
                    {DENSE: models.VectorParams(size=dense_size, distance=models.Distance.COSINE)}
                    if dense_size is not None
                    else {}
                ),
                sparse_vectors_config={
                    SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)
                },
            )
            if not self.is_local:  # local mode ignores payload indexes (and warns)
                self.client.create_payload_index(
                    self.collection, "source", models.PayloadSchemaType.KEYWORD
                )
            self._dense_size = dense_size
            self._known = True
            return
        if dense_size != self._dense_size:
            have = (
                f"dense vectors of size {self._dense_size}"
                if self._dense_size
                else "no dense vectors"
            )
            want = f"dense vectors of size {dense_size}" if dense_size else "no dense vectors"
            raise StoreConfigError(
                f"Collection {self.collection!r} holds {have}, but this ingestion has {want}. "
                "Use the same embedding model as before (or none), or ingest into a new "
                "collection= (store.drop() deletes this one)."
            )

    @property
    def dense_size(self) -> int | None:
        """The size of the collection's dense vectors (``None``: sparse only, or no collection)."""
        if self._known:  # cached: no need to wait for a write holding the lock
            return self._dense_size
        with self._lock:
            return self._dense_size if self._read_config() else None

    def drop(self) -> None:
        """Delete the collection and everything in it."""
        with self._lock:
            self.client.delete_collection(self.collection)
            self._known = False
            self._dense_size = None

    # --- writes -----------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[Chunk]) -> int:
        """Write chunks (in batches of ``batch_size``); returns how many were written."""
        if not chunks:
            return 0
        dense = {c.dense is not None for c in chunks}
        if len(dense) > 1:
            raise StoreConfigError(
                "Some chunks have dense vectors and some do not; embed all of them or none."
            )
        sizes = {len(c.dense) for c in chunks if c.dense is not None}
        if len(sizes) > 1:
            raise StoreConfigError(
                f"The chunks' dense vectors differ in size ({sorted(sizes)}); embed them all "
                "with one model."
            )
        size = sizes.pop() if sizes else None
        sparse = self.encoder.encode_documents([c.text for c in chunks])
        # The points are built here from checked parts (ints, floats, JSON payloads), so they
        # skip pydantic validation, which otherwise costs more than encoding the chunk.
        point = models.PointStruct.model_construct
        sparse_vector = models.SparseVector.model_construct
        points = []
        for chunk, vec in zip(chunks, sparse, strict=True):
            vectors: dict[str, Any] = {
                SPARSE: sparse_vector(indices=vec.indices, values=vec.values)
            }
            if chunk.dense is not None:
                vectors[DENSE] = [float(x) for x in chunk.dense]
            payload = {
                "text": chunk.text,
                "source": chunk.source,
                "chunk": chunk.index,
                "metadata": chunk.metadata,
            }
            points.append(point(id=chunk.id, vector=vectors, payload=payload))
        with self._lock:
            self._ensure_collection(size)
            for start in range(0, len(points), self.batch_size):
                batch = points[start : start + self.batch_size]
                self.client.upsert(self.collection, points=batch, wait=True)
        return len(points)

    def prune(self, source: str, keep: Collection[str]) -> int:
        """Delete the points of ``source`` whose ids are not in ``keep``; returns how many."""
        return self.prune_many({source: keep})

    def prune_many(self, keep: Mapping[str, Collection[str]]) -> int:
        """For each source of ``keep``, delete its points whose ids are not in ``keep[source]``.

        Returns how many points were deleted. Sources not named are left alone.
        """
        wanted = {source: {str(i) for i in ids} for source, ids in keep.items()}
        if not wanted:
            return 0
        with self._lock:
            if not self._read_config():
                return 0
            stale: list[models.ExtendedPointId] = []
            for flt in self._source_filters(list(wanted)):
                offset: models.ExtendedPointId | None = None
                while True:
                    points, offset = self.client.scroll(
                        self.collection,
                        scroll_filter=flt,
                        limit=_SCROLL_PAGE,
                        offset=offset,
                        with_payload=["source"],
                        with_vectors=False,
                    )
                    for p in points:
                        ids = wanted.get(str((p.payload or {}).get("source")))
                        if ids is not None and str(p.id) not in ids:
                            stale.append(p.id)
                    if offset is None:
                        break
            for start in range(0, len(stale), _SCROLL_PAGE):
                self.client.delete(
                    self.collection,
                    points_selector=models.PointIdsList(points=stale[start : start + _SCROLL_PAGE]),
                    wait=True,
                )
            return len(stale)

    def _source_filters(self, sources: list[str]) -> list[models.Filter | None]:
        if self.is_local and len(sources) > _LOCAL_SCAN_SOURCES:
            return [None]  # one scan of everything, matched in Python
        step = 256  # keeps each request's filter small for the server's keyword index
        return [
            models.Filter(
                must=[
                    models.FieldCondition(
                        key="source", match=models.MatchAny(any=sources[i : i + step])
                    )
                ]
            )
            for i in range(0, len(sources), step)
        ]

    def replace_source(self, source: str, chunks: Sequence[Chunk]) -> int:
        """Make ``chunks`` the only chunks of ``source``; returns how many old ones were removed."""
        self.upsert(chunks)
        return self.prune(source, {c.id for c in chunks})

    def delete_source(self, source: str) -> int:
        """Delete every chunk of ``source``; returns how many."""
        return self.prune(source, ())

    # --- reads ------------------------------------------------------------------------------

    def count(self, source: str | None = None) -> int:
        """How many chunks the collection holds (of ``source`` only, when given)."""
        with self._lock:
            if not self._read_config():
                return 0
            flt = (
                models.Filter(
                    must=[
                        models.FieldCondition(key="source", match=models.MatchValue(value=source))
                    ]
                )
                if source is not None
                else None
            )
            return self.client.count(self.collection, count_filter=flt, exact=True).count

    def query(
        self,
        text: str,
        *,
        dense: Sequence[float] | None = None,
        top_k: int = 5,
        query_filter: models.Filter | None = None,
    ) -> list[Hit]:
        """The ``top_k`` best chunks for ``text``.

        Sparse BM25 alone by default; with a ``dense`` query embedding (and dense vectors in the
        collection), a hybrid query: sparse and dense candidates fused with reciprocal rank
        fusion (RRF). A missing collection or a query with no usable words finds nothing.
        """
        if top_k < 1:
            raise StoreConfigError(f"top_k must be at least 1, got {top_k}.")
        sparse = self.encoder.encode_query(text)
        sparse_query = models.SparseVector(indices=sparse.indices, values=sparse.values)
        with self._lock:
            if not self._read_config():
                return []
            use_dense = dense is not None and self._dense_size is not None
            if use_dense and dense is not None and len(dense) != self._dense_size:
                raise StoreConfigError(
                    f"The query embedding has {len(dense)} dimensions but collection "
                    f"{self.collection!r} stores {self._dense_size}; query with the embedding "
                    "model the documents were ingested with."
                )
            if not sparse.indices and not use_dense:
                return []
            common: dict[str, Any] = {
                "limit": top_k,
                "query_filter": query_filter,
                "with_payload": True,
            }
            if use_dense and sparse.indices:
                wide = max(4 * top_k, 20)
                response = self.client.query_points(
                    self.collection,
                    prefetch=[
                        models.Prefetch(query=sparse_query, using=SPARSE, limit=wide),
                        models.Prefetch(query=list(dense or ()), using=DENSE, limit=wide),
                    ],
                    query=models.FusionQuery(fusion=models.Fusion.RRF),
                    **common,
                )
            elif use_dense:
                response = self.client.query_points(
                    self.collection, query=list(dense or ()), using=DENSE, **common
                )
            else:
                response = self.client.query_points(
                    self.collection, query=sparse_query, using=SPARSE, **common
                )
        return [_hit(p) for p in response.points]

    # --- async ------------------------------------------------------------------------------

    async def aupsert(self, chunks: Sequence[Chunk]) -> int:
        """:meth:`upsert` in a worker thread."""
        return await asyncio.to_thread(self.upsert, chunks)

    async def aprune(self, source: str, keep: Collection[str]) -> int:
        """:meth:`prune` in a worker thread."""
        return await asyncio.to_thread(self.prune, source, keep)

    async def aprune_many(self, keep: Mapping[str, Collection[str]]) -> int:
        """:meth:`prune_many` in a worker thread."""
        return await asyncio.to_thread(self.prune_many, keep)

    async def acount(self, source: str | None = None) -> int:
        """:meth:`count` in a worker thread."""
        return await asyncio.to_thread(self.count, source)

    async def aquery(
        self,
        text: str,
        *,
        dense: Sequence[float] | None = None,
        top_k: int = 5,
        query_filter: models.Filter | None = None,
    ) -> list[Hit]:
        """:meth:`query` in a worker thread."""
        return await asyncio.to_thread(
            self.query, text, dense=dense, top_k=top_k, query_filter=query_filter
        )

    # --- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        """Close the client (releasing a local folder's lock), unless it was passed in."""
        if self._owns_client:
            with self._lock:
                self.client.close()

    def __enter__(self) -> QdrantStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"QdrantStore(collection={self.collection!r}, local={self.is_local})"


def _open_local(where: str) -> QdrantClient:
    try:
        if where == ":memory:":
            return QdrantClient(location=where, force_disable_check_same_thread=True)
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


def _hit(point: models.ScoredPoint) -> Hit:
    payload = point.payload or {}
    return Hit(
        id=str(point.id),
        text=str(payload.get("text", "")),
        score=float(point.score),
        source=str(payload.get("source", "")),
        metadata=dict(payload.get("metadata") or {}),
    )


__all__ = ["DENSE", "SPARSE", "Chunk", "Hit", "QdrantStore", "chunks_of", "point_id"]
