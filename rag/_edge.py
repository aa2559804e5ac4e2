"""The embedded engine: Qdrant Edge (``qdrant-edge-py``), Qdrant's own engine in the process.

Why not qdrant-client's local mode: it scores every point in Python, so a sparse query took
~460 ms at 10,000 chunks on the benchmark machine, where Qdrant Edge (the Rust engine behind a
Qdrant server, with the same IDF and RRF) takes under a millisecond and returns the same
scores (see ``docs/rag.md``, Performance). qdrant-client stays the engine for a server by URL
(:mod:`batonflow.rag._client`).

One Edge shard is one collection, in the folder ``<path>/<collection>``; a lock file on
``<path>`` keeps a second store (or process) out, as qdrant-client's local mode does. In-memory
stores (``":memory:"``) are shards in a temporary folder deleted on close.

Filters arrive as qdrant-client ``models.Filter`` (the public type) and are translated here.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import portalocker
import qdrant_edge as qe

from ._payload_cache import DEFAULT_BUDGET, PayloadCache
from .errors import StoreConfigError, StoreLockedError
from .layout import READ_FIELDS, Layout, detect
from .sparse import SparseVector

if TYPE_CHECKING:
    from qdrant_client import models

    from ._memory_index import MemoryIndex

_CONFIG = "edge_config.json"
_PAGE = 1024
#: Search in one thread. Edge's default pool (one thread per CPU) is no faster for a top-k
#: query of a single user, and it is much slower when the process also runs CPU-heavy code:
#: after a numpy/torch burst (an embedding model, qdrant-client) a query's p50 went from
#: 0.26 ms to 12 ms with the pool (10,000 chunks, 2-core machine).
_SEARCH_THREADS = 1
#: Points an on-disk shard takes into its appendable segment before they are moved out of it
#: (see :func:`_disk_config`).
_SETTLE_EVERY = 10_000
#: The optimizer's thresholds for on-disk shards, in KB of vectors: an appendable segment
#: bigger than ``_INDEXING_KB`` is optimized into an immutable one; segments are merged up to
#: ``_SEGMENT_KB``. Each settle makes one segment of the points written since (11 segments at
#: 100,000 points; twice the size made no difference, bench/edge_memory.py).
_INDEXING_KB = 1_000
_SEGMENT_KB = 3_000


class EdgeEngine:
    """Collections as Qdrant Edge shards under one folder (see the module docs)."""

    is_local = True

    def __init__(
        self, where: str, payload_cache: int = DEFAULT_BUDGET, *, memory_index: bool = False
    ) -> None:
        self.memory = where == ":memory:"
        # Hits' payloads read recently, per collection (see _payload_cache: why, and why safe).
        self._cache_budget = payload_cache
        self._caches: dict[str, PayloadCache] = {}
        # Collections' vectors in memory, when asked for (see _memory_index); dropped on writes.
        self._memory_index = memory_index
        self._indexes: dict[str, MemoryIndex] = {}
        self.root = (
            Path(tempfile.mkdtemp(prefix="batonflow-qdrant-", dir=_memory_folder()))
            if self.memory
            else Path(where)
        )
        self.where = where
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock_file = (self.root / ".lock").open("a")
        try:
            portalocker.lock(self._lock_file, portalocker.LOCK_EX | portalocker.LOCK_NB)
        except portalocker.exceptions.LockException as exc:
            self._lock_file.close()
            raise StoreLockedError(
                f"The local Qdrant folder {where!r} is already open in another process (or "
                "another QdrantStore). Close the other one (store.close()), use another path=, "
                "or run a Qdrant server and pass url= for concurrent access."
            ) from exc
        self._shards: dict[str, qe.EdgeShard] = {}
        # An on-disk store's shards keep their points in memory-mapped files (_disk_config);
        # points written since each shard last settled them there.
        self._config = _config if self.memory else _disk_config
        self._unsettled: dict[str, int] = {}

    # --- collections ----------------------------------------------------------------------

    def _folder(self, collection: str) -> Path:
        if not collection or "/" in collection or collection.startswith("."):
            raise StoreConfigError(
                f"Collection name {collection!r} cannot be a folder name; use letters, digits, "
                "'-' and '_'."
            )
        return self.root / collection

    def _shard(self, collection: str) -> qe.EdgeShard | None:
        shard = self._shards.get(collection)
        if shard is None:
            layout = self._stored_layout(collection)
            if layout is not None:
                shard = self._shards[collection] = qe.EdgeShard.load(
                    str(self._folder(collection)), self._config(layout)
                )
        return shard

    def _stored_layout(self, collection: str) -> Layout | None:
        path = self._folder(collection) / _CONFIG
        if not path.exists():
            return None
        config = json.loads(path.read_text(encoding="utf-8"))
        vectors = config.get("vectors") or {}
        dense = {name: int(v["size"]) for name, v in vectors.items() if "size" in v}
        return detect(dense, set(config.get("sparse_vectors") or {}))

    def layout(self, collection: str) -> Layout | None:
        """The collection's vectors, or ``None`` when it does not exist."""
        return self._stored_layout(collection) if self._shard(collection) is not None else None

    def create(self, collection: str, layout: Layout) -> None:
        """Create the collection's shard with ``layout``'s vectors."""
        self._shards[collection] = qe.EdgeShard.create(
            str(self._folder(collection)), self._config(layout)
        )

    def collections(self) -> list[str]:
        """The names of the collections in the folder."""
        return sorted(p.name for p in self.root.iterdir() if (p / _CONFIG).exists())

    def drop(self, collection: str) -> None:
        """Delete the collection's shard and its folder."""
        self._forget(collection)
        self._unsettled.pop(collection, None)
        shard = self._shards.pop(collection, None)
        if shard is not None:
            shard.close()
        shutil.rmtree(self._folder(collection), ignore_errors=True)

    def _forget(self, collection: str) -> None:
        """Drop what is kept of ``collection`` in memory (before a write changes it)."""
        self._caches.pop(collection, None)
        self._indexes.pop(collection, None)

    def memory_index(self, collection: str, layout: Layout) -> MemoryIndex | None:
        """The collection's vectors in memory (built now if needed), or ``None`` when off."""
        if not self._memory_index:
            return None
        index = self._indexes.get(collection)
        if index is None:
            from ._memory_index import MemoryIndex  # numpy: only for a store that asks

            shard = self._need(collection)
            ids: list[Any] = []
            sparse: list[tuple[list[int], list[float]]] = []
            dense: list[list[float]] = []
            offset: Any = None
            while True:
                records, offset = shard.scroll(
                    qe.ScrollRequest(
                        offset=offset, limit=_PAGE, with_payload=False, with_vector=True
                    )
                )
                for r in records:
                    vector = r.vector or {}
                    ids.append(r.id)
                    if layout.sparse is not None:
                        sv = vector.get(layout.sparse)
                        sparse.append((sv.indices, sv.values) if sv is not None else ([], []))
                    if layout.dense is not None:
                        dense.append(vector.get(layout.dense) or [0.0] * (layout.dense_size or 0))
                if offset is None:
                    break
            index = self._indexes[collection] = MemoryIndex(
                ids,
                sparse if layout.sparse is not None else None,
                dense if layout.dense is not None else None,
            )
        return index

    def payloads_of(
        self, collection: str, index: MemoryIndex, rows: Sequence[int]
    ) -> list[dict[str, Any] | None]:
        """The :data:`READ_FIELDS` payloads of ``index``'s ``rows`` (``None``: none read)."""
        shard = self._need(collection)
        keys = [index.keys[r] for r in rows]
        if self._cache_budget <= 0:
            records = shard.retrieve([index.ids[r] for r in rows], READ_FIELDS, False)
            by_id = {str(rec.id): dict(rec.payload or {}) for rec in records}
            return [by_id.get(index.ids[r]) for r in rows]
        cache = self._caches.get(collection)
        if cache is None:
            cache = self._caches[collection] = PayloadCache(self._cache_budget)
        found, missing = cache.get_many(keys)
        if missing:
            wanted = {index.keys[r]: index.ids[r] for r in rows}
            for record in shard.retrieve([wanted[k] for k in missing], READ_FIELDS, False):
                key = _key(record.id)
                payload = dict(record.payload or {})
                found[key] = payload
                cache.put(key, payload)
        return [found.get(key) for key in keys]

    # --- points ---------------------------------------------------------------------------

    def upsert(
        self,
        collection: str,
        layout: Layout,
        points: Sequence[tuple[str, SparseVector | None, list[float] | None, dict[str, Any]]],
    ) -> None:
        """Write points ``(id, sparse, dense, payload)``."""
        shard = self._need(collection)
        batch = []
        for pid, sparse, dense, payload in points:
            vector: dict[str, Any] = {}
            if sparse is not None and layout.sparse is not None:
                vector[layout.sparse] = qe.SparseVector(sparse.indices, sparse.values)
            if dense is not None and layout.dense is not None:
                vector[layout.dense] = dense
            batch.append(qe.Point(pid, vector, payload))
        self._forget(collection)
        shard.update(qe.UpdateOperation.upsert_points(batch))
        self._settle(collection, shard, len(batch))

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id."""
        if ids:
            self._forget(collection)
            self._need(collection).update(qe.UpdateOperation.delete_points(list(ids)))

    def scroll(
        self, collection: str, flt: models.Filter | None, fields: list[str]
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every point matching ``flt``, as ``(id, payload with only fields)``."""
        shard = self._need(collection)
        offset: Any = None
        edge_filter = to_edge_filter(flt)
        while True:
            records, offset = shard.scroll(
                qe.ScrollRequest(
                    offset=offset, limit=_PAGE, filter=edge_filter, with_payload=fields
                )
            )
            for r in records:
                yield str(r.id), dict(r.payload or {})
            if offset is None:
                return

    def count(self, collection: str, flt: models.Filter | None) -> int:
        """How many points match ``flt``."""
        return int(self._need(collection).count(qe.CountRequest(filter=to_edge_filter(flt))))

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
        """The best ``limit`` points by one vector (``sparse``, else ``dense``), with ``fields``.

        Without fields, the ids are the engine's own objects (hashable, ordered, ``str()`` gives
        the point id), which :meth:`retrieve` takes back.
        """
        shard = self._need(collection)
        if sparse is not None and layout.sparse is not None:
            if not sparse.indices:
                return []
            query = qe.Query.Nearest(
                qe.SparseVector(sparse.indices, sparse.values), using=layout.sparse
            )
        elif dense is not None and layout.dense is not None:
            query = qe.Query.Nearest(dense, using=layout.dense)
        else:
            return []
        cached = fields == READ_FIELDS and self._cache_budget > 0
        request = qe.QueryRequest(
            limit=limit,
            query=query,
            filter=to_edge_filter(flt),
            with_payload=False if cached else fields,
        )
        found = shard.query(request)
        if fields is False:  # ids for fusion: left as the engine's objects (str() costs ~2 us)
            return [(p.id, p.score, {}) for p in found]
        if cached:
            # Each p.id builds a uuid.UUID (~2 us): read it once; the hit makes it a str only
            # when its id is asked for.
            ids = [p.id for p in found]
            payloads = self._read_cached(collection, shard, ids)
            return [
                (pid, p.score, payload)
                for pid, p in zip(ids, found, strict=True)
                if (payload := payloads.get(_key(pid))) is not None
            ]
        return [(str(p.id), float(p.score), dict(p.payload or {})) for p in found]

    def _read_cached(
        self, collection: str, shard: qe.EdgeShard, ids: Sequence[Any]
    ) -> dict[Any, dict[str, Any]]:
        """The :data:`READ_FIELDS` payloads of ``ids`` by :func:`_key`, cached or read (kept)."""
        cache = self._caches.get(collection)
        if cache is None:
            cache = self._caches[collection] = PayloadCache(self._cache_budget)
        found, missing = cache.get_many([_key(pid) for pid in ids])
        if missing:
            wanted = {_key(pid): pid for pid in ids}
            for record in shard.retrieve([wanted[k] for k in missing], READ_FIELDS, False):
                key = _key(record.id)
                payload = dict(record.payload or {})
                found[key] = payload
                cache.put(key, payload)
        return found

    def retrieve(
        self, collection: str, ids: Sequence[str], fields: list[str] | bool
    ) -> dict[str, dict[str, Any]]:
        """The payloads (``fields`` of them) of the points ``ids`` that exist."""
        if not ids:
            return {}
        shard = self._need(collection)
        if fields == READ_FIELDS and self._cache_budget > 0:
            payloads = self._read_cached(collection, shard, ids)
            return {str(pid): payloads[_key(pid)] for pid in ids if _key(pid) in payloads}
        records = shard.retrieve(list(ids), fields, False)
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
        shard = self._need(collection)
        self._forget(collection)
        shard.update(
            qe.UpdateOperation.update_vectors(
                [
                    qe.PointVectors(pid, {layout.sparse: qe.SparseVector(v.indices, v.values)})
                    for pid, v in vectors
                ]
            )
        )
        shard.update(qe.UpdateOperation.set_payload([pid for pid, _ in vectors], payload))
        self._settle(collection, shard, len(vectors))

    def _settle(self, collection: str, shard: qe.EdgeShard, written: int) -> None:
        """Every :data:`_SETTLE_EVERY` points written to an on-disk shard, move them from its
        appendable segment into memory-mapped ones (see :func:`_disk_config`)."""
        if self.memory:
            return
        count = self._unsettled.get(collection, 0) + written
        if count >= _SETTLE_EVERY:
            shard.optimize()
            # The optimizer's in-memory copies are released when the shard is flushed.
            shard.flush()
            count = 0
        self._unsettled[collection] = count

    def _need(self, collection: str) -> qe.EdgeShard:
        shard = self._shard(collection)
        if shard is None:
            raise StoreConfigError(f"Collection {collection!r} does not exist; ingest first.")
        return shard

    # --- lifecycle ------------------------------------------------------------------------

    def flush(self) -> None:
        """Write pending changes to disk."""
        for shard in self._shards.values():
            shard.flush()

    def close(self) -> None:
        """Close every shard and release the folder (deleting it when in memory)."""
        for shard in self._shards.values():
            with contextlib.suppress(Exception):  # closing is best effort; the WAL is durable
                shard.close()
        self._shards.clear()
        self._caches.clear()
        self._indexes.clear()
        with contextlib.suppress(OSError):
            portalocker.unlock(self._lock_file)
        self._lock_file.close()
        if self.memory:
            shutil.rmtree(self.root, ignore_errors=True)


def _key(pid: Any) -> Any:
    """A point id as a cache key: a UUID's integer (hashed in C; a UUID hashes in Python), the
    same for the engine's UUID objects and their strings."""
    if isinstance(pid, uuid.UUID):
        return pid.int
    if isinstance(pid, str):
        try:
            return uuid.UUID(pid).int
        except ValueError:
            return pid
    return pid


def _memory_folder() -> str | None:
    """Where an in-memory store's shards go: a RAM-backed folder when there is one (Linux's
    ``/dev/shm``), so its writes wait for no disk; else the system's temporary folder."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def _config(layout: Layout) -> qe.EdgeConfig:
    vectors = (
        {layout.dense: qe.EdgeVectorParams(size=layout.dense_size, distance=qe.Distance.Cosine)}
        if layout.dense is not None and layout.dense_size is not None
        else None
    )
    sparse = (
        {layout.sparse: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}
        if layout.sparse is not None
        else None
    )
    return qe.EdgeConfig(vectors=vectors, sparse_vectors=sparse, max_search_threads=_SEARCH_THREADS)


def _disk_config(layout: Layout) -> qe.EdgeConfig:
    """An on-disk shard's configuration: points end in memory-mapped segments.

    Edge writes points into an appendable segment, which keeps its sparse vectors' inverted
    index in the process's heap (about 1.3 KB a BM25 point, never given back while the shard is
    open: measured in ``bench/edge_memory.py``). :meth:`EdgeEngine._settle` has the optimizer
    move every :data:`_SETTLE_EVERY` written points into immutable segments whose sparse index
    and vectors are memory-mapped files read on demand (``Memory.Cold``: page cache, which the
    kernel can reclaim, not the heap). Their payloads are mapped and read in (``Cached``):
    read on demand, the hits' payloads made a BM25 query 4x slower. Dense vectors get no HNSW
    graph (``m=0``): searched exactly, as in the appendable segment, and the optimizer does not
    spend its time building one. The memory settings alone change nothing: they apply only to
    the segments the optimizer builds.
    """
    cold = qe.Memory.Cold
    vectors = (
        {
            layout.dense: qe.EdgeVectorParams(
                size=layout.dense_size,
                distance=qe.Distance.Cosine,
                memory=cold,
                hnsw_config=qe.HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=10_000),
            )
        }
        if layout.dense is not None and layout.dense_size is not None
        else None
    )
    sparse = (
        {layout.sparse: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf, memory=cold)}
        if layout.sparse is not None
        else None
    )
    return qe.EdgeConfig(
        vectors=vectors,
        sparse_vectors=sparse,
        max_search_threads=_SEARCH_THREADS,
        payload_memory=qe.Memory.Cached,
        optimizers=qe.EdgeOptimizersConfig(
            indexing_threshold=_INDEXING_KB, max_segment_size=_SEGMENT_KB
        ),
    )


def is_client_folder(where: str) -> bool:
    """Whether ``where`` holds qdrant-client local-mode data (kept on that engine)."""
    return where != ":memory:" and os.path.exists(os.path.join(where, "meta.json"))


# --- filters --------------------------------------------------------------------------------


def _unsupported(what: object) -> StoreConfigError:
    return StoreConfigError(
        f"The embedded Qdrant engine does not support the filter condition "
        f"{type(what).__name__} ({what!r:.80}); use match (value/any/except/text), range, "
        "is_empty, is_null, has_id or nested filters, or a Qdrant server (url=)."
    )


def _match(m: Any) -> Any:
    from qdrant_client import models  # only a query with a filter needs qdrant-client

    if isinstance(m, models.MatchValue):
        return qe.MatchValue(m.value)
    if isinstance(m, models.MatchAny):
        return qe.MatchAny(list(m.any))
    if isinstance(m, models.MatchExcept):
        return qe.MatchExcept(list(m.except_))
    if isinstance(m, models.MatchText):
        return qe.MatchText(m.text)
    raise _unsupported(m)


def _condition(c: Any) -> Any:
    from qdrant_client import models  # only a query with a filter needs qdrant-client

    if isinstance(c, models.Filter):
        return to_edge_filter(c)
    if isinstance(c, models.FieldCondition):
        if c.match is not None:
            return qe.FieldCondition(c.key, match=_match(c.match))
        if isinstance(c.range, models.Range):
            r = c.range
            return qe.FieldCondition(
                c.key, range=qe.RangeFloat(gte=r.gte, gt=r.gt, lte=r.lte, lt=r.lt)
            )
        if c.is_empty is not None:
            return qe.FieldCondition(c.key, is_empty=c.is_empty)
        if c.is_null is not None:
            return qe.FieldCondition(c.key, is_null=c.is_null)
        raise _unsupported(c)
    if isinstance(c, models.IsEmptyCondition):
        return qe.IsEmptyCondition(c.is_empty.key)
    if isinstance(c, models.IsNullCondition):
        return qe.IsNullCondition(c.is_null.key)
    if isinstance(c, models.HasIdCondition):
        return qe.HasIdCondition({str(i) for i in c.has_id})
    if isinstance(c, models.NestedCondition):
        return qe.NestedCondition(c.nested.key, to_edge_filter(c.nested.filter))
    raise _unsupported(c)


def _conditions(part: Any) -> list[Any] | None:
    if part is None:
        return None
    items = part if isinstance(part, list) else [part]
    return [_condition(c) for c in items]


def to_edge_filter(flt: models.Filter | None) -> Any:
    """A qdrant-client filter as a Qdrant Edge filter (``None`` stays ``None``).

    Raises:
        StoreConfigError: the filter uses a condition the embedded engine does not take.
    """
    if flt is None:
        return None
    min_should = None
    if flt.min_should is not None:
        min_should = qe.MinShould(
            [_condition(c) for c in flt.min_should.conditions], flt.min_should.min_count
        )
    return qe.Filter(
        must=_conditions(flt.must),
        should=_conditions(flt.should),
        must_not=_conditions(flt.must_not),
        min_should=min_should,
    )


__all__ = ["EdgeEngine", "is_client_folder", "to_edge_filter"]
