"""The leases of a PostgreSQL store shared by server replicas: renewing, claiming, releasing.

These are methods of :class:`~batonflow.postgres.store.PostgresCheckpointStore` (the class
inherits :class:`LeaseMethods`); :mod:`batonflow.postgres.leases` calls them from each
replica's heartbeat and listener. Their SQL is in :mod:`batonflow.postgres._sql`.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Iterable
from typing import Any

import psycopg
from batonflow.core.durable._rechecks import NOT_COMMITTED, Recheck
from batonflow.core.durable._records import ACTIVE, RunRecord
from batonflow.core.errors import CheckpointError

from ._sql import (
    CLAIM_EXPIRED,
    CLAIM_ONE,
    CLAIMED,
    INBOX_HEADS,
    LEASE_OF,
    RELEASE,
    RELEASE_CHANNEL,
    RELEASED,
    RENEW,
)


class LeaseMethods:
    """What a store with a replica id does with its leases (see the store's module doc)."""

    replica_id: str | None
    lease_token: str
    lease_seconds: float
    _last_seq: dict[str, int]
    _write: Any
    _query: Any

    def _replica(self) -> str:
        if self.replica_id is None:
            raise CheckpointError(
                "Leases need a replica id; create the store with "
                "PostgresCheckpointStore(url, replica_id='name-of-this-server')."
            )
        return self.replica_id

    def renew_leases(self) -> builtins.list[str]:
        """Extend the leases this store holds; return the ids of the runs it still holds."""
        self._replica()
        rows = self._write(
            "renew leases",
            lambda conn: conn.execute(RENEW, (self.lease_seconds, self.lease_token)).fetchall(),
            idempotent=True,
        )
        return [str(r[0]) for r in rows]

    def claim_expired(
        self,
        *,
        owner: str | None = "server",
        workflows: Iterable[str] | None = None,
        limit: int = 50,
        exclude: Iterable[str] = (),
    ) -> builtins.list[RunRecord]:
        """Take over runs nobody runs any more, at most ``limit``.

        Those are the runs whose holder's lease expired (a dead or stalled replica's) and
        the runs in progress whose holder released them (a replica that stopped cleanly).
        Only runs started by ``owner`` are taken: ``running``, ``waiting``, and
        ``interrupted`` ones whose lease expired (a run left ``interrupted`` without a lease
        is resumed by a person, not taken); and only of the named ``workflows`` when given
        (the ones this replica can run). Replicas racing for the same run never both get it
        (``FOR UPDATE SKIP LOCKED`` and a conditional update): each run goes to exactly one.
        The runs are marked with the claim's own id, so a claim whose answer was lost finds
        and returns the runs it took (nobody would run them otherwise). The runs in
        ``exclude`` are never taken (those this replica's code cannot continue).
        """
        names = None if workflows is None else sorted(workflows)
        skipped = sorted(exclude)
        me = self._replica()
        active = sorted(ACTIVE)
        claim = uuid.uuid4().hex
        args = (
            *(me, self.lease_token, self.lease_seconds, claim, [*active, "interrupted"]),
            *(owner, owner, names, names, skipped, self.lease_token, active, limit),
        )

        def claimed(conn: psycopg.Connection[Any]) -> Any:
            rows = conn.execute(CLAIMED, (claim, self.lease_token)).fetchall()
            return rows or NOT_COMMITTED

        rows = self._write(
            "claim expired runs",
            lambda conn: conn.execute(CLAIM_EXPIRED, args).fetchall(),
            recheck=Recheck(
                ("claim", owner, None if names is None else tuple(names), limit, *skipped),
                claimed,
            ),
        )
        return [RunRecord(*row) for row in rows]

    def claim(self, run_id: str) -> bool:
        """Lease one run in progress to this store if nobody else holds a live lease on it.

        A lease under this replica id (a previous process of this replica, restarted) is
        taken, and that process is fenced off from the run. An ended run is never claimed.
        """
        me = self._replica()
        rows = self._write(
            "claim a run",
            lambda conn: conn.execute(
                CLAIM_ONE, (me, self.lease_token, self.lease_seconds, run_id, me)
            ).fetchall(),
            idempotent=True,
        )
        return bool(rows)

    def release(self, run_id: str) -> None:
        """Give up this replica's lease on a run (another replica may take it at once)."""
        self.release_all([run_id])

    def release_all(self, run_ids: Iterable[str]) -> builtins.list[str]:
        """Give up this replica's leases on ``run_ids`` and tell the other replicas.

        For a clean stop, once this replica no longer runs them: the runs stay as recorded
        (``running``, ``waiting``) and ``NOTIFY batonflow_release`` makes the replicas that
        listen take them over at once (:meth:`claim_expired`).

        Returns:
            The ids of the runs released (those this replica still held).
        """
        me = self._replica()
        ids = sorted(set(run_ids))
        change = uuid.uuid4().hex

        def release(conn: psycopg.Connection[Any]) -> builtins.list[str]:
            rows = conn.execute(RELEASE, (change, ids, me, self.lease_token)).fetchall()
            if rows:
                conn.execute("SELECT pg_notify(%s, %s)", (RELEASE_CHANNEL, self.lease_token))
            return [str(r[0]) for r in rows]

        def released(conn: psycopg.Connection[Any]) -> Any:
            rows = conn.execute(RELEASED, (ids, change)).fetchall()
            if not rows:
                return NOT_COMMITTED
            # The first try's notification may be lost with its answer: announce again.
            conn.execute("SELECT pg_notify(%s, %s)", (RELEASE_CHANNEL, self.lease_token))
            return [str(r[0]) for r in rows]

        if not ids:
            return []
        done = self._write("release leases", release, recheck=Recheck(("release", *ids), released))
        for run_id in done:
            self._last_seq.pop(run_id, None)
        return done

    def inbox_heads(self) -> dict[str, int]:
        """The last inbox ``seq`` of each run this replica holds, for runs with inbox entries.

        One query for all the runs: a replica compares it with what it delivered, so an
        entry whose ``NOTIFY`` was lost (the ``LISTEN`` connection dropped) is still found.
        """
        rows = self._query(INBOX_HEADS, (self._replica(), self.lease_token))
        return {str(run_id): int(seq) for run_id, seq in rows}

    def lease_of(self, run_id: str) -> tuple[str | None, float | None]:
        """Who holds the run, and for how many more seconds (negative: expired)."""
        rows = self._query(LEASE_OF, (run_id,))
        if not rows:
            return None, None
        owner, left = rows[0]
        return owner, None if left is None else float(left)


__all__ = ["LeaseMethods"]
