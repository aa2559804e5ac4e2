"""Taking queued runs out of the store and starting them, as the limits allow.

A :class:`Dispatcher` serves one workflow's queue in one process (a checkpointer with
limits, or one ``batonflow serve`` replica): each *pass* asks the store for as many queued runs
as this process may still run (``max_running`` minus what it runs) and the store-wide limits
allow (:meth:`~batonflow.core.durable._queue.QueueStore.claim_queued`), then starts each one
here. Passes come when something may have freed a slot here (a run of this process ended, a
run was queued here) and every ``poll`` seconds (a run of another process ended, a rate
window moved on).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ._queue import QueueStore, RunLimits
from ._records import RunRecord
from ._store import OffLoopWrites

logger = logging.getLogger("batonflow.core")

#: At most this many runs per pass when no ``max_running`` bounds them.
PASS = 64


class Dispatcher:
    """Starts queued runs of ``workflow`` from ``store`` under ``limits``.

    Args:
        store: The run store (it keeps the queue).
        workflow: The workflow name whose queue this serves.
        limits: The limits its runs start under.
        start: Starts one claimed run here (on the event loop).
        running: How many runs this process runs now (what ``max_running`` bounds).
        poll: Seconds between passes when nothing here wakes it.
    """

    def __init__(
        self,
        store: QueueStore,
        workflow: str,
        limits: RunLimits,
        start: Callable[[RunRecord], Any],
        running: Callable[[], int],
        poll: float = 0.2,
    ) -> None:
        self.store = store
        self.workflow = workflow
        self.limits = limits
        self._start = start
        self._running = running
        self.poll = poll
        self._wake = asyncio.Event()
        self._off_loop = isinstance(store, OffLoopWrites)

    def room(self) -> int:
        """How many more runs this process may start now."""
        if self.limits.max_running is None:
            return PASS
        return max(0, min(PASS, self.limits.max_running - self._running()))

    def wake(self) -> None:
        """Make a pass soon (a slot may be free here)."""
        self._wake.set()

    def claim(self) -> list[RunRecord]:
        """Take the queued runs this process may start now (not started yet)."""
        want = self.room()
        return self.store.claim_queued(self.workflow, self.limits, want) if want else []

    def start_all(self, records: list[RunRecord]) -> None:
        """Start claimed runs here; one that cannot start is logged (its record says why)."""
        for record in records:
            try:
                self._start(record)
            except Exception as exc:
                logger.warning("Queued run %s could not start: %s", record.run_id, exc)

    async def once(self) -> int:
        """One pass: claim (off the loop where the store writes so) and start; how many."""
        if self._off_loop:
            records = await asyncio.to_thread(self.claim)
        else:
            records = self.claim()
        self.start_all(records)
        return len(records)

    async def serve(self) -> None:
        """Make passes until cancelled; a store error is logged and the next pass tries again."""
        while True:
            self._wake.clear()
            try:
                started = await self.once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.warning("The queue of %s could not be served: %s", self.workflow, exc)
                started = 0
            if started and self.room():
                continue  # more may fit at once (a pass takes at most PASS)
            try:
                async with asyncio.timeout(self.poll):
                    await self._wake.wait()
            except TimeoutError:
                pass


__all__ = ["PASS", "Dispatcher"]
