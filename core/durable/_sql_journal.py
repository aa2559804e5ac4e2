"""The SQL store's journaled calls (``ctx.journal``): one row per call of a step execution.

These functions are members of :class:`~batonflow.core.durable._sql_store.SqlRunStore` (bound in
its class body). A row is keyed by run, step, execution and call order; a write is fenced as
the run's other writes are (a PostgreSQL replica that lost the run's lease is refused) and is
an upsert, so a retried write whose answer was lost, or a retry of a step whose call raised,
leaves one row.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from ._records import JournalEntry

if TYPE_CHECKING:
    from ._sql_store import Conn, SqlRunStore


def _entry(row: tuple[Any, ...]) -> JournalEntry:
    step, execution, call, name, attempt, error, body, created = row
    return JournalEntry(
        str(step),
        int(execution),
        int(call),
        str(name),
        int(attempt),
        bool(error),
        str(body),
        float(created),
    )


def journal_get(
    self: SqlRunStore, run_id: str, step: str, execution: int, call: int
) -> JournalEntry | None:
    """The recorded outcome of one journaled call, or ``None``."""
    rows = self._query(self.sql.journal_get, (run_id, step, execution, call))
    return _entry(rows[0]) if rows else None


def journal_put(self: SqlRunStore, run_id: str, entry: JournalEntry) -> None:
    """Record a journaled call's outcome (replacing one at its position), atomically.

    Raises:
        StoreFullError: The disk is full; nothing was written.
        LeaseLostError: (PostgreSQL replicas) another replica holds the run now.
    """
    row = (
        run_id,
        entry.step,
        entry.execution,
        entry.call,
        entry.name,
        entry.attempt,
        int(entry.error),
        entry.body,
        entry.created_at,
    )

    def put(conn: Conn) -> None:
        self._fence(conn, run_id)
        conn.execute(self.sql.journal_put, row)

    self._write("record a journaled call", put, idempotent=True)


def journal(self: SqlRunStore, run_id: str) -> builtins.list[JournalEntry]:
    """The run's journaled calls, in the order they were recorded."""
    return [_entry(row) for row in self._query(self.sql.journal, (run_id,))]


__all__ = ["journal", "journal_get", "journal_put"]
