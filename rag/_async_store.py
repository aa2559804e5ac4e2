"""The async face of :class:`~batonflow.rag.QdrantStore`: each method runs its twin in a thread.

Neither Qdrant Edge nor qdrant-client's local mode has async calls, and a server's client is
used synchronously too, so ``a*`` methods hand the sync ones to a worker thread: the event loop
(a workflow's steps) keeps running while a store reads or writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .chunks import Chunk, Hit, StoredSource


class AsyncStoreMethods:
    """``aupsert``, ``aquery``, ...: the store's methods run in a worker thread."""

    if TYPE_CHECKING:  # the sync methods, which the store class defines

        def upsert(self, chunks: Sequence[Chunk]) -> int: ...
        def prune(self, source: str, keep: Collection[str]) -> int: ...
        def prune_many(self, keep: Mapping[str, Collection[str]]) -> int: ...
        def prune_stale(self, hashes: Mapping[str, str | None]) -> int: ...
        def delete_sources(self, sources: Collection[str]) -> int: ...
        def source_hashes(self) -> dict[str, str | None]: ...
        def stored_sources(self) -> dict[str, StoredSource]: ...
        def count(self, source: str | None = None) -> int: ...
        def query(
            self,
            text: str,
            *,
            dense: Sequence[float] | None = None,
            top_k: int = 5,
            query_filter: Any = None,
        ) -> list[Hit]: ...

    async def aupsert(self, chunks: Sequence[Chunk]) -> int:
        """:meth:`upsert` in a worker thread."""
        return await asyncio.to_thread(self.upsert, chunks)

    async def aprune(self, source: str, keep: Collection[str]) -> int:
        """:meth:`prune` in a worker thread."""
        return await asyncio.to_thread(self.prune, source, keep)

    async def aprune_many(self, keep: Mapping[str, Collection[str]]) -> int:
        """:meth:`prune_many` in a worker thread."""
        return await asyncio.to_thread(self.prune_many, keep)

    async def aprune_stale(self, hashes: Mapping[str, str | None]) -> int:
        """:meth:`prune_stale` in a worker thread."""
        return await asyncio.to_thread(self.prune_stale, hashes)

    async def adelete_sources(self, sources: Collection[str]) -> int:
        """:meth:`delete_sources` in a worker thread."""
        return await asyncio.to_thread(self.delete_sources, sources)

    async def asource_hashes(self) -> dict[str, str | None]:
        """:meth:`source_hashes` in a worker thread."""
        return await asyncio.to_thread(self.source_hashes)

    async def astored_sources(self) -> dict[str, StoredSource]:
        """:meth:`stored_sources` in a worker thread."""
        return await asyncio.to_thread(self.stored_sources)

    async def acount(self, source: str | None = None) -> int:
        """:meth:`count` in a worker thread."""
        return await asyncio.to_thread(self.count, source)

    async def aquery(
        self,
        text: str,
        *,
        dense: Sequence[float] | None = None,
        top_k: int = 5,
        query_filter: Any = None,
    ) -> list[Hit]:
        """:meth:`query` in a worker thread."""
        return await asyncio.to_thread(
            self.query, text, dense=dense, top_k=top_k, query_filter=query_filter
        )


__all__ = ["AsyncStoreMethods"]
