"""Batches stored in the order they were split, however their embeddings come back.

Each batch's BM25 vectors are encoded with the collection's mean length as it is when the batch
is written (:meth:`~batonflow.rag.store.QdrantStore.mean_length`), so the order of the writes
decides the vectors. ``embed_and_store`` runs several batches at once (and worker processes
return embeddings in any order): writing them in their split order gives the same points
whatever the timing, with or without workers.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any


class InOrder:
    """Runs batch ``seq``'s write once the writes of batches ``0 .. seq - 1`` have run."""

    #: The turnstile of each ingestion run in this process (by its context).
    of_run: weakref.WeakKeyDictionary[Any, InOrder] = weakref.WeakKeyDictionary()

    def __init__(self) -> None:
        self._turn = asyncio.Condition()
        self._done = 0

    async def run(self, seq: int, write: Callable[[], Awaitable[object]]) -> None:
        """Wait for batch ``seq``'s turn, then ``await write()`` (a failed write ends its turn
        too, so the next batch is not held)."""
        async with self._turn:
            await self._turn.wait_for(lambda: self._done == seq)
        try:
            await write()
        finally:
            async with self._turn:
                self._done += 1
                self._turn.notify_all()


__all__ = ["InOrder"]
