"""``QdrantStore``: chunks in a Qdrant collection, embedded in the process or on a server.

The same code talks to three kinds of Qdrant:

* ``QdrantStore(path=".batonflow/qdrant")`` (the default): Qdrant Edge, Qdrant's own engine
  embedded in the process (``qdrant-edge-py``), a folder on disk, no server. Only one store
  may open a folder at a time.
* ``QdrantStore(location=":memory:")``: the same engine in a temporary folder, gone on close.
* ``QdrantStore(url="http://localhost:6333", api_key=...)`` or ``client=QdrantClient(...)``:
  through qdrant-client, a Qdrant server or cluster (or qdrant-client's local mode). A folder
  already holding qdrant-client local-mode data is opened with qdrant-client too.

Points carry a sparse BM25 vector (``"sparse"``, see :mod:`batonflow.rag.sparse`; the collection
applies IDF) and, with an embedding model, a dense vector (``"text-dense"``), with llama-index's
payload layout (:mod:`batonflow.rag.layout`), so llama-index's ``QdrantVectorStore`` reads what
batonflow writes and the other way round. Point ids are UUID5s of (source, chunk index, content
hash): writing the same chunk twice overwrites it, and :meth:`QdrantStore.replace_source` also
deletes the source's old chunks, so re-ingesting a document never duplicates it.

The engines are synchronous; the ``a*`` methods run them in a worker thread, one call at a
time, so the event loop stays free.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._async_store import AsyncStoreMethods
from ._bm25_points import encode_points, load_lengths, renormalise
from ._edge import EdgeEngine, is_client_folder
from ._payload_cache import DEFAULT_BUDGET
from ._search import search
from .chunks import Chunk, Hit, StoredSource, chunks_of, point_id
from .errors import CollectionNotFoundError, StoreConfigError, collection_missing
from .fusion import RRF_K
from .layout import DENSE, SPARSE, Layout
from .lengths import MeanLength
from .sparse import BM25SparseEncoder

if TYPE_CHECKING:
    # Imported where used: a store on the embedded engine, its collections and its queries
    # without a filter need neither qdrant-client nor llama-index (their imports take seconds),
    # so a missing collection is reported before they load.
    from qdrant_client import QdrantClient, models

    from ._client import ClientEngine

DEFAULT_PATH = ".batonflow/qdrant"
#: Above this many sources, pruning scans the collection once instead of filtering per source
#: (a filter on an unindexed field is itself a scan, so per-source filters would be quadratic).
_SCAN_SOURCES = 8
_SOURCE_FIELDS = ["source", "content_hash", "source_chunks"]
_ABSENT = object()


class QdrantStore(AsyncStoreMethods):
    """Chunks with sparse (and optionally dense) vectors in one Qdrant collection.

    Give at most one of ``path``, ``location``, ``url`` or ``client``; with none, the local
    folder ``.batonflow/qdrant`` is used. The collection is created on the first write with the
    vectors it needs.

    Args:
        path: a local folder for embedded Qdrant (``":memory:"`` means in memory).
        location: ``":memory:"`` for an in-memory store (or a URL, as qdrant-client allows).
        url: the URL of a Qdrant server.
        api_key: the server's API key.
        collection: the collection name.
        client: an existing ``QdrantClient`` to use instead (the store will not close it).
        encoder: the sparse encoder; defaults to the multilingual BM25 encoder.
        batch_size: points per upsert request.
        timeout: seconds to wait for a Qdrant server's answers (qdrant-client's default: 5).
        rrf_k: the constant of the hybrid queries' reciprocal-rank fusion
            (:mod:`batonflow.rag.fusion`).
        payload_cache_mb: on the embedded engine, how many megabytes of hits' payloads (their
            text) to keep in memory for later queries (``0``: none). Reading 100 payloads costs
            Qdrant Edge ten times the search; the local folder has one writer, this store, so
            the cache is never stale (every write drops it).
        memory_index: on the embedded engine, answer hybrid queries without a filter from a
            copy of the collection's vectors in memory, with numpy (:mod:`batonflow.rag._memory_index`:
            what it costs, and where it differs from the engine's scores).
    Raises:
        StoreConfigError: more than one place to store was given, a negative
            ``payload_cache_mb``, or ``memory_index=True`` on a Qdrant server or client.
        StoreLockedError: the local folder is already open in another store or process.
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
        rrf_k: int = RRF_K,
        payload_cache_mb: float = DEFAULT_BUDGET / 2**20,
        memory_index: bool = False,
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
        if payload_cache_mb < 0:
            raise StoreConfigError(
                f"payload_cache_mb must be 0 (no cache) or more, got {payload_cache_mb}."
            )
        self.collection = collection
        self.encoder = encoder or BM25SparseEncoder()
        self.batch_size = batch_size
        self.rrf_k = rrf_k
        self._lock = threading.Lock()
        # point id -> (BM25 length, mean its vector was encoded with); loaded on first write
        self._lengths: MeanLength | None = None  # read from the collection when first needed
        self._layout: Layout | None = None  # cached once the collection is known to exist
        where = location if location is not None else os.fspath(path or DEFAULT_PATH)
        embedded = client is None and url is None and location in (None, ":memory:")
        self._engine: EdgeEngine | ClientEngine
        if embedded and not is_client_folder(where):
            self._engine = EdgeEngine(
                where, payload_cache=int(payload_cache_mb * 2**20), memory_index=memory_index
            )
        elif memory_index:
            raise StoreConfigError(
                "memory_index=True needs the embedded engine (path= or location=':memory:'); "
                "a Qdrant server searches its own vectors: leave memory_index out."
            )
        else:
            from ._client import client_engine  # qdrant-client: imported only when used

            self._engine = client_engine(client, url, location, api_key, timeout, where)
        self.is_local = self._engine.is_local
        self.url = None if isinstance(self._engine, EdgeEngine) else self._engine.url

    @property
    def engine(self) -> str:
        """``"edge"`` (Qdrant Edge in the process) or ``"client"`` (qdrant-client)."""
        return "edge" if isinstance(self._engine, EdgeEngine) else "client"

    @property
    def client(self) -> QdrantClient:
        """The ``QdrantClient`` (for llama-index's ``QdrantVectorStore``, or your own calls).

        Raises:
            StoreConfigError: the store runs on embedded Qdrant Edge, which has no client.
        """
        if not isinstance(self._engine, EdgeEngine):
            return self._engine.client
        raise StoreConfigError(
            f"QdrantStore(path={self._engine.where!r}) runs on embedded Qdrant Edge, which has "
            "no QdrantClient; pass client=QdrantClient(...) or url= to share the collection "
            "with other qdrant-client code (e.g. llama-index's QdrantVectorStore)."
        )

    @property
    def where(self) -> str:
        """Where the store is (a folder, ``":memory:"`` or a URL), for messages."""
        return self._engine.where

    # --- collection -----------------------------------------------------------------------

    def _read_layout(self) -> Layout | None:
        if self._layout is None:
            self._layout = self._engine.layout(self.collection)
        return self._layout

    def exists(self) -> bool:
        """Whether the collection exists."""
        with self._lock:
            return self._read_layout() is not None

    def collections(self) -> list[str]:
        """The names of the collections in this Qdrant."""
        with self._lock:
            return self._engine.collections()

    def ensure_collection(self, dense_size: int | None = None) -> None:
        """Create the collection if needed, or check that it fits ``dense_size``.

        Raises:
            StoreConfigError: the collection's dense vectors do not match ``dense_size``.
        """
        with self._lock:
            self._ensure_collection(dense_size)

    def _ensure_collection(self, dense_size: int | None) -> Layout:
        layout = self._read_layout()
        if layout is None:
            layout = Layout(
                dense=DENSE if dense_size is not None else None,
                dense_size=dense_size,
                sparse=SPARSE,
            )
            self._engine.create(self.collection, layout)
            self._layout = layout
            return layout
        if dense_size != layout.dense_size:
            have = (
                f"dense vectors of size {layout.dense_size}"
                if layout.dense_size
                else "no dense vectors"
            )
            want = f"dense vectors of size {dense_size}" if dense_size else "no dense vectors"
            raise StoreConfigError(
                f"Collection {self.collection!r} holds {have}, but this ingestion has {want}. "
                "Use the same embedding model as before (or none), or ingest into a new "
                "collection= (store.drop() deletes this one)."
            )
        return layout

    @property
    def dense_size(self) -> int | None:
        """The size of the collection's dense vectors (``None``: sparse only, or no collection)."""
        if self._layout is not None:  # cached: no need to wait for a write holding the lock
            return self._layout.dense_size
        with self._lock:
            layout = self._read_layout()
            return layout.dense_size if layout is not None else None

    def drop(self) -> None:
        """Delete the collection and everything in it."""
        with self._lock:
            self._engine.drop(self.collection)
            self._layout = None
            self._lengths = None

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
        counted = [self.encoder.count_terms(c.text) for c in chunks]
        ids = [c.id for c in chunks]  # a SHA-256 and a UUID5 each: computed once
        with self._lock:
            layout = self._ensure_collection(size)
            if layout.sparse is None and layout.dense is None:
                raise StoreConfigError(
                    f"Collection {self.collection!r} has neither a BM25 sparse vector nor a "
                    "dense one batonflow knows; use another collection=."
                )
            points = encode_points(self.encoder, self._load_lengths(), chunks, ids, counted)
            for start in range(0, len(points), self.batch_size):
                self._engine.upsert(
                    self.collection, layout, points[start : start + self.batch_size]
                )
            self._renormalise(layout)
        return len(points)

    # --- the collection's mean length (BM25 length normalisation) ---------------------------

    def mean_length(self) -> float | None:
        """The collection's mean chunk length in BM25 terms (``None``: empty or no collection).

        Every point records its length (``bm25_len``) and the mean its sparse vector was
        encoded with (``bm25_avg``), so the figure lives with the collection: a store reads
        the lengths on its first write (or on this call), and keeps them as it writes and
        deletes. A batch is encoded with the mean including itself; a point encoded with a
        mean more than 5% (:data:`DRIFT`) from the current one is re-encoded. Points written
        by earlier versions (no ``bm25_len``; encoded with the encoder's fixed ``avg_len``)
        are measured from their text once, in memory, and re-encoded on the next write.
        Another process writing the same collection is seen when this store is reopened.
        """
        with self._lock:
            if self._read_layout() is None:
                return None
            lengths = self._load_lengths()
            return lengths.mean() if len(lengths) else None

    def _load_lengths(self) -> MeanLength:
        if self._lengths is None:
            self._lengths = load_lengths(self._engine, self.collection, self.encoder)
        return self._lengths

    def _renormalise(self, layout: Layout) -> None:
        if self._lengths is not None:
            renormalise(
                self._engine, self.collection, layout, self.encoder, self._lengths, self.batch_size
            )

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
        return self._delete_where(
            list(wanted),
            ["source"],
            lambda pid, payload: (
                (ids := wanted.get(str(payload.get("source")))) is not None and pid not in ids
            ),
        )

    def prune_stale(self, hashes: Mapping[str, str | None]) -> int:
        """For each source of ``hashes``, delete its points not written with ``hashes[source]``.

        What ingestion does once a changed source's new version is stored: every chunk of the
        new version carries its hash (an unchanged chunk keeps its id and is rewritten), so the
        chunks with another hash are the old version's leftovers. Returns how many.
        """
        if not hashes:
            return 0

        def stale(pid: str, payload: dict[str, Any]) -> bool:
            want = hashes.get(str(payload.get("source")), _ABSENT)
            return want is not _ABSENT and payload.get("content_hash") != want

        return self._delete_where(list(hashes), ["source", "content_hash"], stale)

    def _delete_where(
        self, sources: list[str], fields: list[str], stale: Callable[[str, dict[str, Any]], bool]
    ) -> int:
        """Delete the points of ``sources`` that ``stale(id, payload)`` picks; how many."""
        with self._lock:
            if self._read_layout() is None:
                return 0
            doomed = [
                pid
                for flt in self._source_filters(sources)
                for pid, payload in self._engine.scroll(self.collection, flt, fields)
                if stale(pid, payload)
            ]
            for start in range(0, len(doomed), 1024):
                self._engine.delete(self.collection, doomed[start : start + 1024])
            if doomed:
                self._load_lengths().forget(doomed)
                layout = self._read_layout()
                if layout is not None:
                    self._renormalise(layout)
            return len(doomed)

    def _source_filters(self, sources: list[str]) -> list[models.Filter | None]:
        if len(sources) > _SCAN_SOURCES and (self.is_local or self.engine == "edge"):
            return [None]  # one scan of everything, matched in Python
        from qdrant_client import models

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

    def delete_sources(self, sources: Collection[str]) -> int:
        """Delete every chunk of each of ``sources``; returns how many."""
        return self.prune_many({s: () for s in sources})

    def source_hashes(self) -> dict[str, str | None]:
        """Each stored source with the content hash its chunks were ingested with.

        ``None`` for a source written without one (by hand, or by an earlier version), and for
        one that is not stored whole (see :meth:`stored_sources`).
        """
        return {
            source: stored.content_hash if stored.complete else None
            for source, stored in self.stored_sources().items()
        }

    def stored_sources(self) -> dict[str, StoredSource]:
        """What the collection holds of each source: its hash, chunks, and whether it is whole.

        Ingestion writes a source's chunks in batches; a process that dies between two of them
        leaves part of the source, whose chunks all carry the new hash. Each chunk also
        records how many chunks its version has, so such a source is reported
        ``complete=False`` (as is a mix of two versions' chunks) and ingestion writes it again.
        """
        with self._lock:
            if self._read_layout() is None:
                return {}
            hashes: dict[str, set[str | None]] = {}
            counts: dict[str, int] = {}
            declared: dict[str, set[int | None]] = {}
            for _, payload in self._engine.scroll(self.collection, None, _SOURCE_FIELDS):
                source = payload.get("source")
                if source is None:
                    continue
                key = str(source)
                hashes.setdefault(key, set()).add(payload.get("content_hash"))
                counts[key] = counts.get(key, 0) + 1
                total = payload.get("source_chunks")
                declared.setdefault(key, set()).add(total if isinstance(total, int) else None)
        out: dict[str, StoredSource] = {}
        for key, seen in hashes.items():
            digest = next(iter(seen)) if len(seen) == 1 else None
            totals = declared[key]
            if len(seen) > 1 or len(totals) > 1:
                whole = False  # two versions' chunks, or chunks with and without a count
            else:
                (total,) = totals
                whole = total is None or total == counts[key]
            out[key] = StoredSource(content_hash=digest, chunks=counts[key], complete=whole)
        return out

    # --- reads ------------------------------------------------------------------------------

    def count(self, source: str | None = None) -> int:
        """How many chunks the collection holds (of ``source`` only, when given)."""
        with self._lock:
            if self._read_layout() is None:
                return 0
            from qdrant_client import models

            flt = (
                models.Filter(
                    must=[
                        models.FieldCondition(key="source", match=models.MatchValue(value=source))
                    ]
                )
                if source is not None
                else None
            )
            return self._engine.count(self.collection, flt)

    def query(
        self,
        text: str,
        *,
        dense: Sequence[float] | None = None,
        top_k: int = 5,
        query_filter: Any = None,
    ) -> list[Hit]:
        """The ``top_k`` best chunks for ``text``.

        Sparse BM25 alone by default; with a ``dense`` query embedding (and dense vectors in the
        collection), a hybrid query: sparse and dense candidates fused with reciprocal rank
        fusion (RRF). A missing collection or a query with no usable words finds nothing.

        Args:
            text: the query.
            dense: the query's embedding, by the model the documents were embedded with.
            top_k: how many chunks to return.
            query_filter: only chunks matching it: a qdrant-client ``models.Filter``, llama-index
                ``MetadataFilters`` or a dict (see :mod:`batonflow.rag.filters`).

        Raises:
            StoreConfigError: ``top_k < 1``, a bad filter, a query embedding of the wrong size,
                or a collection without BM25 vectors queried without an embedding.
        """
        if top_k < 1:
            raise StoreConfigError(f"top_k must be at least 1, got {top_k}.")
        flt = None
        if query_filter is not None:
            from .filters import to_qdrant_filter  # llama-index's filter types

            flt = to_qdrant_filter(query_filter)
        sparse = self.encoder.encode_query(text)
        with self._lock:
            layout = self._read_layout()
            if layout is None:
                return []
            use_dense = dense is not None and layout.dense is not None
            if use_dense and dense is not None and len(dense) != layout.dense_size:
                raise StoreConfigError(
                    f"The query embedding has {len(dense)} dimensions but collection "
                    f"{self.collection!r} stores {layout.dense_size}; query with the embedding "
                    "model the documents were ingested with."
                )
            if layout.sparse is None and not use_dense:
                raise StoreConfigError(
                    f"Collection {self.collection!r} has no BM25 sparse vectors (it was not "
                    "written by batonflow, e.g. by llama-index's QdrantVectorStore), so it can "
                    "only be searched by embedding; pass embed_model= (the model its documents "
                    "were embedded with)."
                )
            dense_q = [float(x) for x in dense] if use_dense and dense is not None else None
            sparse_q = sparse if layout.sparse is not None and sparse.indices else None
            return search(
                self._engine,
                self.collection,
                layout,
                sparse=sparse_q,
                dense=dense_q,
                top_k=top_k,
                flt=flt,
                rrf_k=self.rrf_k,
            )

    # --- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        """Close the engine (releasing a local folder's lock); a passed-in client stays open."""
        with self._lock:
            self._engine.close()

    def __enter__(self) -> QdrantStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"QdrantStore(collection={self.collection!r}, engine={self.engine!r})"


def collection_not_found(store: QdrantStore) -> CollectionNotFoundError:
    """The error for a query on a collection that does not exist, listing those that do."""
    return CollectionNotFoundError(
        collection_missing(store.collection, store.where, store.collections())
    )


__all__ = [
    "DENSE",
    "SPARSE",
    "Chunk",
    "Hit",
    "QdrantStore",
    "StoredSource",
    "chunks_of",
    "collection_not_found",
    "point_id",
]
