"""A server replica among others on one database: which runs it runs, and how it hears of the rest.

When the server's store can lease runs (a :class:`~batonflow.postgres.PostgresCheckpointStore`
with a ``replica_id``), :class:`ReplicaSet` joins the server's :class:`~._runs.RunManager` to
the other replicas:

* at start, the manager resumes only the unfinished runs this replica can claim (runs leased to
  it before a restart, or to nobody); runs live on other replicas are left to them;
* :class:`batonflow.postgres.leases.Replication` renews the leases and hands over the runs of
  replicas that died, which the manager resumes from their last checkpoint;
* an entry committed to the inbox of a run held here (an answer, an event, a cancel request,
  by any replica) is delivered at once on its ``NOTIFY``, and whatever happened to the
  ``NOTIFY``: after ``LISTEN`` reconnects and on every heartbeat, the inboxes of the runs held
  here are compared with what they were given;
* an event logged by a run held elsewhere wakes this replica's SSE readers of that run, which
  read the database's event log: a client may follow any run on any replica; after
  ``LISTEN`` reconnects every reader here looks at its log again (what was logged meanwhile
  was announced to nobody);
* on a clean stop (SIGTERM) this replica stops running its runs without recording anything,
  then releases their leases, and the other replicas take them over at once (:meth:`hand_over`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ._child_answers import deliver as deliver_to_child

if TYPE_CHECKING:
    from ._runs import RunManager

logger = logging.getLogger("batonflow.apps.server")


def can_replicate(store: Any) -> bool:
    """Whether ``store`` leases runs to replicas (it has a replica id and the lease calls)."""
    return getattr(store, "replica_id", None) is not None and hasattr(store, "claim_expired")


class ReplicaSet:
    """This replica's part in the replica set of ``manager``'s store."""

    def __init__(self, manager: RunManager) -> None:
        from batonflow.postgres.leases import Replication

        self.manager = manager
        self.store = manager.records
        self._changed: dict[str, asyncio.Event] = {}
        self.replication = Replication(
            self.store,
            on_takeover=self._take_over,
            on_inbox=self._inbox,
            on_events=self._events,
            on_resync=self._resync,
            on_lost=self._lost,
            workflows=manager.workflows,
        )

    @property
    def replica_id(self) -> str:
        """This replica's name in the leases."""
        return str(self.store.replica_id)

    def claim(self, run_id: str) -> bool:
        """Take ``run_id`` for this replica at start-up, unless another live replica holds it."""
        return bool(self.store.claim(run_id))

    async def start(self) -> int:
        """Start the heartbeat and the listener; return how many runs were taken over."""
        taken = await self.replication.start()
        return len(taken)

    async def stop(self) -> None:
        """Stop the heartbeat and the listener: from now on nothing is taken over or delivered.

        The first step of a clean stop; :meth:`hand_over` follows once the runs stopped.
        """
        await self.replication.stop()

    def hand_over(self, run_ids: list[str]) -> None:
        """Release the leases of ``run_ids``, which stopped running here, to the other replicas.

        Call it only once this process no longer runs them (so it cannot write into a run
        another replica took). The runs stay ``running`` or ``waiting`` with their
        checkpoints; the replicas listening take them over at once, the others on their next
        heartbeat, instead of after the lease runs out.
        """
        if not run_ids:
            return
        try:
            released = self.store.release_all(run_ids)
        except Exception as exc:  # the database may be gone too: the leases then expire
            logger.warning(
                "Could not release the leases of %d run(s): %s; another replica takes them "
                "over when the leases expire",
                len(run_ids),
                exc,
            )
            return
        if released:
            logger.info(
                "replica %s released %d run(s) to the other replicas",
                self.replica_id,
                len(released),
            )

    def cannot_continue(self, row: Any) -> bool:
        """Whether this replica's code cannot continue ``row``'s run (checked before it runs:
        ``WorkflowCheckpointer.check``). Such a run is left as it is, not marked: its lease is
        released at once for a replica whose code can (one still running the old version,
        during a rolling deploy), and this process never claims it again."""
        checkpointer = self.manager.checkpointers.get(row.workflow)
        if checkpointer is None:
            return False
        found = checkpointer.check(row.run_id)
        if found.ok:
            return False
        logger.warning(
            "replica %s leaves run %s to a replica whose code can continue it: %s",
            self.replica_id,
            row.run_id,
            "; ".join(found.reasons),
        )
        self.replication.refused.add(row.run_id)
        self.store.release(row.run_id)
        return True

    def changed(self, run_id: str) -> asyncio.Event:
        """An event set when the log of a run held elsewhere grows (for SSE readers here)."""
        event = self._changed.get(run_id)
        if event is None:
            event = self._changed[run_id] = asyncio.Event()
        return event

    def forget(self, run_id: str) -> None:
        """Drop the wake-up event of a run nobody here follows any more."""
        self._changed.pop(run_id, None)

    # -- callbacks of Replication ---------------------------------------------------------

    async def _take_over(self, record: Any) -> None:
        if record.run_id in self.manager.live:
            return
        row = self.manager.store.get(record.run_id)
        if row is None or self.cannot_continue(row):
            return
        logger.warning(
            "replica %s resumes run %s (%s) from its last checkpoint",
            self.replica_id,
            row.run_id,
            row.workflow,
        )
        self.manager.adopt(row, checked=True)

    def _inbox(self, run_id: str, seq: int) -> None:
        live = self.manager.live.get(run_id)
        if live is None:
            deliver_to_child(self.manager, run_id, seq)  # a child of a run here, if it is one
            return
        checkpointer = self.manager.checkpointers[live.workflow_name]
        taken = checkpointer.taken_in(run_id)
        if taken is None or taken >= seq:
            return  # delivered already (a NOTIFY after the heartbeat's look, or our own post)
        checkpointer.deliver(run_id)
        if live.status == "waiting":
            live.status = "running"

    def _resync(self) -> None:
        # LISTEN was down: log entries written meanwhile woke nobody. Every reader here
        # looks at its run's log again (rather than at its next keep-alive).
        changed, self._changed = self._changed, {}
        for event in changed.values():
            event.set()

    def _events(self, run_id: str, seq: int) -> None:
        event = self._changed.pop(run_id, None)
        if event is not None:
            event.set()

    async def _lost(self, run_id: str) -> None:
        live = self.manager.live.get(run_id)
        if live is not None:
            logger.warning(
                "this server stops running run %s: replica %s no longer holds its lease",
                run_id,
                self.replica_id,
            )
            await self.manager.drop(live)


__all__ = ["ReplicaSet", "can_replicate"]
