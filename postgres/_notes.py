"""The PostgreSQL store's announcements of new log entries: sent after their commits, batched.

A transaction that sends a ``NOTIFY`` takes, while it commits, a lock on the whole server (an
object lock on database 0, so that notifications enter the queue in commit order; PostgreSQL's
``src/backend/commands/async.c``, ``PreCommit_Notify``): such commits are serialised, whatever
they write. When every step write and run end of every replica carried its own ``NOTIFY``, a
second replica doubled the connections queueing for that lock, and a queue formed that the
first replica alone never saw (the backend the lock is handed to must be woken and scheduled
before anyone else may commit a ``NOTIFY``).

So the log entries' ``NOTIFY batonflow_events`` leave the writes' transactions: a write
commits without taking that lock, and :class:`Announcer` sends the announcements of the
entries committed meanwhile in one statement, one at a time per store (the writes of a
replica take the lock once per batch, not once per entry). An announcement is a hint (see
:mod:`batonflow.postgres.leases`): readers on other replicas read the event log itself and
look again at their heartbeat, so one that is lost (the process died between the commit and
the announcement) delays a reader, never loses an entry. It is sent after the commit, as a
``NOTIFY`` in the transaction was delivered, so a reader woken by it finds the entry.

The thread lingers a moment (:data:`LINGER`, a few milliseconds) between the first entry it
is told of and sending: a run's entries committed close together (its last stream event, its
``StopEvent`` and its end, a few statements apart) go in one announcement, and a lone run
costs one announcement round trip where it cost one per entry. Only readers on *other*
replicas wait for announcements (the replica that holds a run wakes its own readers itself),
and they are told that much later.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("batonflow.postgres")

#: Seconds the announcer waits, after the first entry not yet announced, for more to join it.
LINGER = 0.005


class Announcer:
    """Sends ``(run id, seq)`` announcements in batches on its own thread, one batch at a time.

    Args:
        send: Sends one batch (``"run_id seq"`` payloads) in one transaction.
        linger: Seconds to wait after the first entry of a batch for more to join it.
    """

    def __init__(self, send: Callable[[list[str]], None], linger: float = LINGER) -> None:
        self._send = send
        self._linger = linger
        self._ready = threading.Condition()
        #: The newest seq of each run not announced yet (a reader reads all that is new).
        self._pending: dict[str, int] = {}
        self._thread: threading.Thread | None = None
        self._closed = False

    def announce(self, run_id: str, seq: int) -> None:
        """Announce that the run's log holds entries up to ``seq`` (call after the commit)."""
        with self._ready:
            if self._closed:
                return
            first = not self._pending
            if seq > self._pending.get(run_id, 0):
                self._pending[run_id] = seq
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._work, name="batonflow-pg-announcer", daemon=True
                )
                self._thread.start()
            if first:  # a thread lingering over a batch need not wake for each entry
                self._ready.notify()

    def _work(self) -> None:
        while True:
            with self._ready:
                while not self._pending and not self._closed:
                    self._ready.wait()
                deadline = time.monotonic() + self._linger
                while not self._closed and (left := deadline - time.monotonic()) > 0:
                    self._ready.wait(left)  # close() cuts it short
                batch, self._pending = self._pending, {}
                if not batch and self._closed:
                    return
            try:
                self._send([f"{run_id} {seq}" for run_id, seq in batch.items()])
            except Exception as exc:  # a hint: readers look again at their heartbeat
                log.warning("announcing %d run(s)' new log entries failed: %s", len(batch), exc)

    def close(self) -> None:
        """Send what is pending, then stop the thread."""
        with self._ready:
            self._closed = True
            thread = self._thread
            self._ready.notify()
        if thread is not None:
            thread.join()


__all__ = ["Announcer"]
