"""Several servers on one database: leases with a heartbeat, takeover, and LISTEN/NOTIFY.

A :class:`Replication` runs inside each ``batonflow serve`` replica whose store is a
:class:`~batonflow.postgres.store.PostgresCheckpointStore` with a ``replica_id``:

* every ``lease_seconds / 3`` it renews the leases of the runs this replica holds, and takes
  over the runs whose holder stopped renewing (a replica that died) or released them (a
  replica that stopped cleanly): ``on_takeover(record)`` is called for each, and the server
  resumes it from its last checkpoint;
* it listens on the store's channels: ``on_inbox(run_id, seq)`` when an entry (an answer, an
  event, a cancel request) was committed to a run's inbox by any replica, ``on_events(run_id,
  seq)`` when a run's event log grew, so SSE streams served by any replica wake up at once
  instead of polling, and a release (a replica stopping cleanly) makes it take the released
  runs over at once.

``NOTIFY`` is a hint, never the only way an inbox entry arrives: a notification sent while the
``LISTEN`` connection is down (a network blip, a pooler or database restart, a terminated
backend) is lost. So after every (re)connect of ``LISTEN``, and on every heartbeat, one query
reads the last inbox ``seq`` of every run held here (:meth:`PostgresCheckpointStore.
inbox_heads`) and ``on_inbox(run_id, seq)`` is called for each; the callee delivers what the run
has not taken in yet (the checkpointer counts what it delivered, so nothing is taken twice).
The listener's connection is named ``batonflow-listen <replica id>`` (``application_name``),
so operators (and tests) find it in ``pg_stat_activity``.

A lost lease (this replica stalled past it and another took the run) shows up as a run missing
from :meth:`PostgresCheckpointStore.renew_leases`; the store's fencing already refuses its
writes, and ``on_lost(run_id)`` lets the server stop running it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import psycopg
from batonflow.core.durable._records import RunRecord
from batonflow.core.errors import StoreUnreachableError

from ._errors import no_free_slot, no_slot_advice, reason
from .store import EVENTS_CHANNEL, INBOX_CHANNEL, RELEASE_CHANNEL, PostgresCheckpointStore

log = logging.getLogger("batonflow.postgres")

Callback = Callable[..., Awaitable[Any] | Any]


class Replication:
    """One replica's share of the runs in a database that several replicas use.

    Args:
        store: The replica's store (its ``replica_id`` names the replica).
        on_takeover: Called with the :class:`RunRecord` of each run taken over from a dead
            or stopped replica (may be async); the server resumes the run.
        on_inbox: Called with a run id and an inbox ``seq`` when that run's inbox holds
            entries up to ``seq``: on a ``NOTIFY``, and for every run held here after each
            (re)connect of ``LISTEN`` and on each heartbeat. It must deliver only what the run
            has not taken in (it is called again for entries already delivered).
        on_events: Called with a run id and a sequence number when a run's event log grew.
        on_lost: Called with a run id when this replica no longer holds a run it ran.
        on_resync: Called with no argument after each (re)connect of ``LISTEN``: whatever
            was announced while it was down reached nobody, so a reader that waits for
            ``on_events`` should look at the log again.
        interval: Seconds between heartbeats (default a third of the lease).
        workflows: The workflow names this replica runs; it takes over only their runs
            (default: any).
    """

    def __init__(
        self,
        store: PostgresCheckpointStore,
        *,
        on_takeover: Callback,
        on_inbox: Callback | None = None,
        on_events: Callback | None = None,
        on_lost: Callback | None = None,
        on_resync: Callback | None = None,
        interval: float | None = None,
        workflows: Iterable[str] | None = None,
    ) -> None:
        if store.replica_id is None:
            raise ValueError(
                "Replication needs a store with a replica id: "
                "PostgresCheckpointStore(url, replica_id='name-of-this-server')."
            )
        self.store = store
        self.interval = interval if interval is not None else store.lease_seconds / 3
        self._on_takeover = on_takeover
        self._on_inbox = on_inbox
        self._on_events = on_events
        self._on_lost = on_lost
        self._on_resync = on_resync
        self.workflows = None if workflows is None else frozenset(workflows)
        self._held: set[str] = set()
        #: Runs this replica's code cannot continue (a newer or older version of the
        #: workflow): never claimed by this process, left to the replicas that can.
        self.refused: set[str] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self.listening = asyncio.Event()

    async def start(self) -> list[RunRecord]:
        """Take over what dead replicas left, then start the heartbeat and the listener.

        Returns:
            The runs taken over at start (their ``on_takeover`` calls are done).
        """
        taken = await self._take_over()
        self._tasks = [
            asyncio.create_task(self._heartbeat(), name="batonflow-heartbeat"),
            asyncio.create_task(self._listen(), name="batonflow-listen"),
        ]
        return taken

    async def stop(self) -> None:
        """Stop the heartbeat and the listener (leases then expire unless released).

        Nothing is taken over or delivered afterwards.
        """
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []

    async def _take_over(self) -> list[RunRecord]:
        records = await asyncio.to_thread(
            lambda: self.store.claim_expired(workflows=self.workflows, exclude=self.refused)
        )
        for record in records:
            log.warning(
                "replica %s takes over run %s (%s), which its holder released or stopped renewing",
                self.store.replica_id,
                record.run_id,
                record.workflow_name,
            )
            await _call(self._on_takeover, record)
        return records

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                held = set(await asyncio.to_thread(self.store.renew_leases))
                for run_id in self._held - held:
                    if self._on_lost is not None:
                        await _call(self._on_lost, run_id)
                self._held = held
                await self._take_over()
                await self._catch_up()
            except asyncio.CancelledError:
                raise
            except StoreUnreachableError as exc:  # an outage: one line, not a traceback a beat
                log.warning("lease heartbeat of replica %s: %s", self.store.replica_id, exc)
            except Exception:  # a failed heartbeat is retried at the next beat
                log.exception("lease heartbeat of replica %s failed", self.store.replica_id)

    async def _listen(self) -> None:
        delay = 0.5
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self.store.url,
                    autocommit=True,
                    application_name=f"batonflow-listen {self.store.replica_id}"[:63],
                )
                async with conn:
                    for channel in (INBOX_CHANNEL, EVENTS_CHANNEL, RELEASE_CHANNEL):
                        await conn.execute(f"LISTEN {channel}")
                    # What was committed while nobody listened was announced to nobody:
                    # look now (what comes after LISTEN is announced).
                    await self._catch_up()
                    if self._on_resync is not None:
                        await _call(self._on_resync)
                    self.listening.set()
                    delay = 0.5
                    async for note in conn.notifies():
                        await self._dispatch(note.channel, note.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the server restarted or the network broke: listen again
                self.listening.clear()
                if no_free_slot(exc):
                    log.warning(
                        "LISTEN connection of replica %s refused: the server has no free "
                        "connection (%s); answers and cancels reach its runs at the next "
                        "heartbeat meanwhile; %s. Retrying in %.1f s",
                        self.store.replica_id,
                        reason(exc, self.store.url),
                        no_slot_advice(self.store.pool_size),
                        delay,
                    )
                else:
                    log.warning("LISTEN connection lost; reconnecting in %.1f s", delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)

    async def _catch_up(self) -> None:
        """Call ``on_inbox`` for every run held here that has inbox entries (one query)."""
        if self._on_inbox is None:
            return
        heads = await asyncio.to_thread(self.store.inbox_heads)
        for run_id, seq in heads.items():
            try:
                await _call(self._on_inbox, run_id, seq)
            except Exception:  # one run's failure must not keep the others' entries back
                log.exception("delivering the inbox of run %s failed", run_id)

    async def _dispatch(self, channel: str, payload: str) -> None:
        if channel == RELEASE_CHANNEL:
            # The payload is the releasing store's lease token: a process restarted under this
            # replica id takes over what its predecessor released.
            if payload != self.store.lease_token:
                try:
                    await self._take_over()
                except Exception:  # the heartbeat takes them over instead
                    log.exception("taking over the runs replica %s released failed", payload)
            return
        run_id, _, seq = payload.rpartition(" ")
        try:
            if channel == INBOX_CHANNEL and self._on_inbox is not None:
                await _call(self._on_inbox, run_id, int(seq))
            elif channel == EVENTS_CHANNEL and self._on_events is not None:
                await _call(self._on_events, run_id, int(seq))
        except Exception:  # one bad callback must not stop the listener
            log.exception("handling %s for run %s failed", channel, run_id)


async def _call(fn: Callback, *args: Any) -> None:
    result = fn(*args)
    if inspect.isawaitable(result):
        await result


__all__ = ["Replication"]
