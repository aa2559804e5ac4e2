"""The run queue of the in-memory store: the same claims as the SQL stores', in dicts.

See :mod:`batonflow.core.durable._queue` for what a claim counts and takes.
"""

from __future__ import annotations

import builtins
import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import QueueFullError
from ._queue import Counts, QueueEntry, QueuePlace, RunLimits
from ._records import RunRecord


class MemoryQueue:
    """:class:`QueueStore` for the in-memory store (its runs' records and a dict of entries)."""

    _lock: threading.Lock
    _runs: dict[str, Any]
    create_run: Callable[[RunRecord], None]
    finish_run: Callable[..., None]

    def _entries(self) -> dict[str, builtins.list[Any]]:
        entries = self.__dict__.get("_queue_entries")
        if entries is None:
            entries = self.__dict__["_queue_entries"] = {}
        return entries  # type: ignore[no-any-return]

    def _status(self, run_id: str) -> str | None:
        run = self._runs.get(run_id)
        return None if run is None or run.record is None else str(run.record.status)

    def _memory_counts(self, workflow: str, limits: RunLimits) -> Counts:
        entries = self._entries()
        running = sum(
            1
            for run in self._runs.values()
            if run.record is not None
            and run.record.workflow_name == workflow
            and run.record.status in ("running", "waiting")
        )
        keys: dict[str, int] = {}
        since = time.time() - limits.per
        recent = 0
        for run_id, (name, key, _, _, started) in entries.items():
            if name != workflow or started is None:
                continue
            recent += started >= since
            if key is not None and self._status(run_id) in ("running", "waiting"):
                keys[key] = keys.get(key, 0) + 1
        return Counts(running, keys, recent)

    def _waiting(self, workflow: str) -> builtins.list[tuple[str, builtins.list[Any]]]:
        return sorted(
            (
                (run_id, e)
                for run_id, e in self._entries().items()
                if e[0] == workflow and e[4] is None and self._status(run_id) == "queued"
            ),
            key=lambda item: (-item[1][2], item[1][3], item[0]),
        )

    def enqueue(self, record: RunRecord, entry: QueueEntry, max_queued: int | None) -> None:
        """Record ``record`` (``queued``) and its place in the queue.

        Raises:
            QueueFullError: ``max_queued`` runs of the workflow are queued; nothing recorded.
            RunConflictError: A run with that id, or with its idempotency key, exists.
        """
        workflow = record.workflow_name
        with self._lock:
            if max_queued is not None and len(self._waiting(workflow)) >= max_queued:
                key = record.idempotency_key
                if key is None or key not in getattr(self, "_keys", {}):
                    raise QueueFullError(workflow, max_queued, None)
        self.create_run(record)  # the id and key checks
        with self._lock:
            self._entries()[record.run_id] = [
                workflow,
                entry.key,
                entry.priority,
                record.created_at,
                None,
            ]

    def claim_queued(self, workflow: str, limits: RunLimits, want: int) -> builtins.list[RunRecord]:
        """Take up to ``want`` queued runs of ``workflow`` that fit ``limits``."""
        with self._lock:
            counts = self._memory_counts(workflow, limits)
            room = counts.room(limits, want)
            claimed: builtins.list[RunRecord] = []
            now = time.time()
            for run_id, entry in self._waiting(workflow):
                if len(claimed) >= room:
                    break
                if not counts.fits(limits, entry[1]):
                    continue
                counts.take(entry[1])
                entry[4] = now
                run = self._runs[run_id]
                run.record = dataclasses.replace(run.record, status="running", updated_at=now)
                claimed.append(run.record)
            return claimed

    def cancel_queued(self, run_id: str, error: str, end: str | None = None) -> bool:
        """Cancel ``run_id`` if it is still queued (it never starts); whether it was."""
        with self._lock:
            if self._status(run_id) != "queued":
                return False
        self.finish_run(run_id, "cancelled", error=error, end=end)
        return True

    def queue_place(self, run_id: str, limits: RunLimits | None) -> QueuePlace | None:
        """Where a queued run waits: its position and the limit it waits on."""
        with self._lock:
            entry = self._entries().get(run_id)
            if entry is None or self._status(run_id) != "queued":
                return None
            order = [r for r, _ in self._waiting(entry[0])]
            reason = "position"
            if limits is not None:
                reason = self._memory_counts(entry[0], limits).blocking(limits, entry[1])
            return QueuePlace(order.index(run_id) + 1, reason)


__all__ = ["MemoryQueue"]
