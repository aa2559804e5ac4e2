"""What one ingestion run decides per source, and how it sends chunks on without piling them up.

:class:`IngestionWorkflow`'s ``load`` step reads a folder a few files at a time: for each batch
it decides which sources changed (:class:`Plan`), splits those, and hands the chunks to a
:class:`Sender`, which sends them on in batches of ``embed_batch_size`` and waits while
:data:`MAX_IN_FLIGHT` batches are not stored yet. So memory holds a few batches of chunks, not
the whole folder: reading, embedding and storing go on at the same time.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Mapping, Sequence

from batonflow.core import Context

from .chunks import StoredSource
from .events import EmbedBatchEvent
from .loading import PendingChunk

#: Batches sent and not stored yet, at most (the embedding step runs four at once).
MAX_IN_FLIGHT = 8

# A run's gate goes with its context (several runs of one workflow can be in flight).
_GATES: weakref.WeakKeyDictionary[Context, asyncio.Semaphore] = weakref.WeakKeyDictionary()


class Plan:
    """What ingestion decided for each source it has seen so far, and what it counted."""

    def __init__(self, stored: Mapping[str, StoredSource], force: bool) -> None:
        self.stored = stored
        self.force = force
        self.files = 0
        self.added: list[str] = []
        self.updated: list[str] = []
        self.unchanged: list[str] = []
        self.repaired: list[str] = []
        #: every source seen, with its hash
        self.seen: dict[str, str] = {}
        #: the sources to write, with their new hash
        self.changed: dict[str, str] = {}
        self.split_total = 0
        self.split_done = 0

    def decide(self, hashes: Mapping[str, str]) -> set[str]:
        """Sort the sources of one batch; return those to split and write."""
        out: set[str] = set()
        for source, digest in hashes.items():
            self.seen[source] = digest
            known = self.stored.get(source)
            if known is None:
                self.added.append(source)
            elif not known.complete:
                self.repaired.append(source)
            elif not self.force and known.content_hash == digest:
                self.unchanged.append(source)
                continue
            else:
                self.updated.append(source)
            self.changed[source] = digest
            out.add(source)
        return out


class Sender:
    """Sends chunks on in batches, holding back while too many are not stored yet."""

    def __init__(self, ctx: Context, size: int, show: bool) -> None:
        self.ctx = ctx
        self.size = size
        self.show = show
        self.buffer: list[PendingChunk] = []
        self.batches = 0
        self.chunks = 0
        self.gate = _GATES[ctx] = asyncio.Semaphore(MAX_IN_FLIGHT)

    async def add(self, pending: Sequence[PendingChunk]) -> None:
        """Queue chunks; send every full batch."""
        self.buffer.extend(pending)
        self.chunks += len(pending)
        await self.ctx.store.set("ingest_total", self.chunks)
        while len(self.buffer) >= self.size:
            batch, self.buffer = self.buffer[: self.size], self.buffer[self.size :]
            await self._send(batch)

    async def flush(self) -> None:
        """Send what is left."""
        if self.buffer:
            batch, self.buffer = self.buffer, []
            await self._send(batch)

    async def _send(self, batch: list[PendingChunk]) -> None:
        await self.gate.acquire()
        self.ctx.send_event(EmbedBatchEvent(chunks=batch, seq=self.batches))
        self.batches += 1

    @staticmethod
    def stored(ctx: Context) -> None:
        """A batch of the run of ``ctx`` is stored: let one more go."""
        gate = _GATES.get(ctx)
        if gate is not None:
            gate.release()


__all__ = ["MAX_IN_FLIGHT", "Plan", "Sender"]
