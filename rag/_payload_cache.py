"""The hits' payloads a local collection read recently, kept in memory (oldest out first).

Why: Qdrant Edge finds the top 100 of a query in ~0.07 ms, then takes ~0.6 ms to read their
payloads (even one small field): reading costs ten times the search, and more than a whole
bm25s query, which keeps its corpus in memory (SciFact, 5,183 abstracts; ``docs/rag.md``). The
chunks an application retrieves repeat from query to query, so a query reads most of its hits
from here.

It is only correct because a local folder has one writer: the store holding its lock, in this
process. Every write through the engine drops its collection's cache, so a hit is never older
than the last write. The size is bounded by the bytes of the payloads' text; past it, the
payloads read first are dropped first (first in, first out: a hit costs one dict lookup, where
least-recently-used order would cost a reordering per hit).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

#: The default budget, in bytes of payload text, per collection.
DEFAULT_BUDGET = 64 * 1024 * 1024
_ENTRY_OVERHEAD = 200  # a dict and its keys, roughly


class PayloadCache:
    """One collection's payloads by point id, the oldest dropped past ``budget`` bytes."""

    def __init__(self, budget: int = DEFAULT_BUDGET) -> None:
        self.budget = budget
        self.size = 0
        self._entries: dict[Hashable, tuple[dict[str, Any], int]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get_many(
        self, ids: Iterable[Hashable]
    ) -> tuple[dict[Hashable, dict[str, Any]], list[Hashable]]:
        """The cached payloads of ``ids``, and the ids not cached."""
        found: dict[Hashable, dict[str, Any]] = {}
        missing: list[Hashable] = []
        get = self._entries.get
        for pid in ids:
            entry = get(pid)
            if entry is None:
                missing.append(pid)
            else:
                found[pid] = entry[0]
        return found, missing

    def put(self, pid: Hashable, payload: dict[str, Any]) -> None:
        """Keep ``payload`` (the caller must not change it afterwards)."""
        if self.budget <= 0:
            return
        cost = _ENTRY_OVERHEAD + sum(len(v) for v in payload.values() if isinstance(v, str))
        old = self._entries.pop(pid, None)
        if old is not None:
            self.size -= old[1]
        self._entries[pid] = (payload, cost)
        self.size += cost
        while self.size > self.budget and self._entries:
            oldest = next(iter(self._entries))
            self.size -= self._entries.pop(oldest)[1]


__all__ = ["DEFAULT_BUDGET", "PayloadCache"]
