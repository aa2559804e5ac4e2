"""The run queue on PostgreSQL: the advisory lock, ``FOR UPDATE SKIP LOCKED`` candidates, and a
one-statement insert and claim where the limits allow.

These are methods of :class:`~batonflow.postgres.store.PostgresCheckpointStore` (the class
inherits :class:`PgQueueMethods` ahead of the SQL store's own queue,
:class:`~batonflow.core.durable._queue.SqlQueue`, which they fall back on). Their SQL is in
:mod:`batonflow.postgres._sql`.
"""

from __future__ import annotations

import builtins
import time
import uuid
from typing import Any

import psycopg
from batonflow.core.durable._queue import QueueEntry, RunLimits
from batonflow.core.durable._rechecks import NOT_COMMITTED, Recheck, run_recorded
from batonflow.core.durable._records import RunRecord, check_status, run_exists_error
from batonflow.core.durable._sql_schema import run_row

from ._sql import QUEUE_CLAIM_FREE, QUEUE_CLAIMED, QUEUE_INSERT, QUEUE_LEASED, QUEUE_LOCK


class PgQueueMethods:
    """What the PostgreSQL store does differently with its run queue (see the module doc)."""

    replica_id: str | None
    lease_token: str
    lease_seconds: float
    unique_violation: Any
    sql: Any
    _where: str
    _recorded: set[str]
    _write: Any

    skip_locked = " FOR UPDATE SKIP LOCKED"

    def _lock_queue(self, conn: psycopg.Connection[Any], workflow: str) -> None:
        conn.execute(QUEUE_LOCK, (workflow,))

    def enqueue(self, record: RunRecord, entry: QueueEntry, max_queued: int | None) -> None:
        """As :meth:`SqlQueue.enqueue`; without ``max_queued``, one statement."""
        if max_queued is not None:
            super().enqueue(record, entry, max_queued)
            return
        check_status(record.status)
        args = (
            *run_row(record),
            record.workflow_name,
            entry.key,
            entry.priority,
            record.created_at,
        )

        def insert(conn: psycopg.Connection[Any]) -> None:
            try:
                conn.execute(QUEUE_INSERT, args)
            except self.unique_violation as exc:
                raise run_exists_error(record.run_id, self._where, record.idempotency_key) from exc

        self._write(
            "queue a run", insert, transaction=False, recheck=run_recorded(self.sql, record)
        )
        self._recorded.add(record.run_id)

    def claim_queued(self, workflow: str, limits: RunLimits, want: int) -> builtins.list[RunRecord]:
        """As :meth:`SqlQueue.claim_queued`; when only ``max_running`` bounds it, one
        statement (the queue's row locks, no advisory lock and no counts)."""
        if limits.counts_store or want <= 0:
            return super().claim_queued(workflow, limits, want)
        claim = uuid.uuid4().hex
        args = {
            "workflow": workflow,
            "want": want,
            "now": time.time(),
            "replica": self.replica_id,
            "token": self.lease_token,
            "lease": self.lease_seconds,
            "claim": claim,
        }
        rows = self._write(
            "claim queued runs",
            lambda conn: conn.execute(QUEUE_CLAIM_FREE, args).fetchall(),
            transaction=False,
            recheck=self._claim_recheck(claim),
        )
        return [r if isinstance(r, RunRecord) else RunRecord(*r) for r in rows]

    def _queued_args(self, record: RunRecord) -> tuple[Any, ...]:
        # No lease: whichever replica claims the run leases it then.
        return (*run_row(record), None, None, False, self.lease_seconds, False)

    def _hold_claimed(
        self, conn: psycopg.Connection[Any], run_ids: builtins.list[str], claim: str
    ) -> None:
        conn.execute(
            QUEUE_LEASED,
            (self.replica_id, self.lease_token, self.lease_seconds, claim, run_ids),
        )

    def _claim_recheck(self, claim: str) -> Recheck[builtins.list[RunRecord]]:
        def claimed(conn: psycopg.Connection[Any]) -> Any:
            rows = conn.execute(QUEUE_CLAIMED, (claim,)).fetchall()
            return [RunRecord(*r) for r in rows] or NOT_COMMITTED

        return Recheck(("queue-claim", claim), claimed)


__all__ = ["PgQueueMethods"]
