"""After a lost answer: how a write of the SQL store tells whether it committed.

A connection to a database server can break after a statement was sent and before its answer
came back (the server was killed, its backend terminated, the network cut): the write may have
committed or not, and the client cannot know from the error. A store that retries such a write
(PostgreSQL's, through an outage) must not make it twice, nor refuse it as done by someone else
when it was its own. Each write is therefore either *idempotent* (made again, it changes
nothing more: a delete, a lease renewal, a checkpoint keyed by its run and seq), or comes with a
:class:`Recheck`: a read, made on a new connection before the write is tried again, that
finds what the write leaves behind when it committed (the run's last log entry, the status it
wrote with its own timestamp, the inbox entry with its own creation time) and returns what the
write would have returned, or :data:`NOT_COMMITTED`.

The checks here are those of :class:`~batonflow.core.durable._sql_store.SqlRunStore`'s writes, in SQL
both dialects read. They lock the run's row first (where a row lock exists): a transaction
of the lost connection that the server has not ended yet is waited for, not raced. SQLite has
no lost answers (the database is a local file) and ignores them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar

from ._records import Checkpoint, RunRecord
from ._sql_schema import Statements, run_row

T = TypeVar("T")
Conn = Any


class _NotCommitted(Enum):
    NOT_COMMITTED = "not committed"


#: What a :class:`Recheck` returns when the write did not commit (it is then made again).
NOT_COMMITTED = _NotCommitted.NOT_COMMITTED


@dataclass(frozen=True, slots=True)
class Recheck(Generic[T]):
    """How one write is recognised after a lost answer.

    Attributes:
        key: The same write asked again (the caller retrying it after the store reported the
            outage) has the same key: the store keeps the recheck of a write whose answer was
            lost under it, so the retry looks for the first try's traces (its timestamp).
        committed: Given a connection in a transaction, what the write returned if it
            committed, else :data:`NOT_COMMITTED`.
    """

    key: Hashable
    committed: Callable[[Conn], T | _NotCommitted]


def run_recorded(sql: Statements, record: RunRecord) -> Recheck[None]:
    """A new run: its row is this very record (its creation time, pid and input included)."""

    def committed(conn: Conn) -> _NotCommitted | None:
        row = conn.execute(sql.select_run, (record.run_id,)).fetchone()
        return None if row is not None and tuple(row) == run_row(record) else NOT_COMMITTED

    return Recheck(("run", record.run_id), committed)


def status_written(
    sql: Statements,
    run_id: str,
    status: str,
    result: str | None,
    error: str | None,
    stamp: float,
) -> Recheck[None]:
    """A status change (``finish_run``, with or without its ``end``): the run's row holds the
    status, result and error it wrote, with its own ``updated_at`` (the end entry commits with
    it)."""

    def committed(conn: Conn) -> _NotCommitted | None:
        row = conn.execute(sql.outcome, (run_id,)).fetchone()
        if row is not None and tuple(row) == (status, result, error, stamp):
            return None
        return NOT_COMMITTED

    return Recheck(("status", run_id, status, result, error), committed)


def checkpoint_stored(sql: Statements, checkpoint: Checkpoint) -> Recheck[None]:
    """A checkpoint: the run's checkpoint at its seq has its id and creation time."""

    def committed(conn: Conn) -> _NotCommitted | None:
        row = conn.execute(sql.checkpoint_at, (checkpoint.run_id, checkpoint.seq)).fetchone()
        if row is not None and row[0] == checkpoint.id and row[1] == checkpoint.created_at:
            return None
        return NOT_COMMITTED

    return Recheck(("checkpoint", checkpoint.run_id, checkpoint.seq), committed)


def inbox_posted(
    sql: Statements, run_id: str, body: str, answer: bool, stamp: float
) -> Recheck[int]:
    """An inbox post: the entry with its body and its own ``created_at`` (the post's clock
    reading identifies it: two posts of one body do not read the same instant)."""

    def committed(conn: Conn) -> int | _NotCommitted:
        conn.execute(sql.lock_run, (run_id,)).fetchone()
        row = conn.execute(sql.inbox_post, (run_id, stamp, body)).fetchone()
        return NOT_COMMITTED if row is None else int(row[0])

    return Recheck(("post", run_id, body, answer), committed)


def event_appended(
    sql: Statements, run_id: str, kind: str, body: str, waiting: bool, last: int | None
) -> Recheck[int]:
    """A log entry: the run's last entry is this one, right after ``last`` (the seq of the
    entry this store appended before it; ``None`` when it knows none: then the last entry's
    kind and body decide). A run has one writer, so nothing else appended meanwhile."""

    def committed(conn: Conn) -> int | _NotCommitted:
        conn.execute(sql.lock_run, (run_id,)).fetchone()
        row = conn.execute(sql.last_event, (run_id,)).fetchone()
        if row is None or (row[1], row[2]) != (kind, body):
            return NOT_COMMITTED
        seq = int(row[0])
        return seq if last is None or seq == last + 1 else NOT_COMMITTED

    return Recheck(("event", run_id, kind, body, waiting), committed)


__all__ = [
    "NOT_COMMITTED",
    "Recheck",
    "checkpoint_stored",
    "event_appended",
    "inbox_posted",
    "run_recorded",
    "status_written",
]
