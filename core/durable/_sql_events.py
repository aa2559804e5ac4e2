"""The SQL store's event logs and inboxes: what a run streamed out and what was sent to it.

These functions are members of :class:`~batonflow.core.durable._sql_store.SqlRunStore` (bound in
its class body). A run's event log (``run_events``) holds what it wrote to its stream and, last,
its ``end``; an entry that asks for input makes the run ``waiting`` in the same transaction. Its
inbox (``run_inbox``) holds the events sent to it, committed before the sender is answered; an
answer to the question a run waits for is taken once, the unique key deciding between two. A
dialect may send a plain log entry straight to its connection (SQLite's, PostgreSQL's
``append_event``) and announce entries and posts (:meth:`SqlRunStore._appended`,
:meth:`SqlRunStore._posted`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ._rechecks import event_appended, inbox_posted
from ._records import InboxItem, StoredEvent, answered_error, check_limit, check_post

if TYPE_CHECKING:
    from ._sql_store import Conn, SqlRunStore


def append_event(
    self: SqlRunStore, run_id: str, kind: str, body: str, *, waiting: bool = False
) -> int:
    """Append one entry to the run's event log and return its ``seq`` (from 1).

    Args:
        run_id: The run.
        kind: ``"event"`` or ``"end"``.
        body: The entry as JSON text.
        waiting: The event asks for input: the run becomes ``waiting`` for it, atomically.

    Raises:
        StoreFullError: The disk is full; nothing was written.
    """
    sql = self.sql

    def append(conn: Conn) -> int:
        (seq,) = conn.execute(sql.append_event, (run_id, kind, body, run_id)).fetchone()
        if waiting:
            conn.execute(sql.mark_waiting, (seq, time.time(), run_id))
        return int(seq)

    return self._write(
        "record a stream event",
        append,
        transaction=waiting,
        recheck=event_appended(self.sql, run_id, kind, body, waiting, None),
    )


def events(
    self: SqlRunStore, run_id: str, after: int = 0, limit: int | None = None
) -> list[StoredEvent]:
    """The run's log entries with ``seq > after``, in order (at most ``limit``).

    Raises:
        ValueError: A negative ``limit``.
    """
    sql = self.sql.events
    args: tuple[Any, ...] = (run_id, after)
    limit = check_limit(limit)
    if limit is not None:
        sql += f" LIMIT {self.sql.param}"
        args = (*args, limit)
    return [StoredEvent(int(s), str(k), str(b)) for s, k, b in self._query(sql, args)]


def post_event(self: SqlRunStore, run_id: str, body: str, *, answer: bool = False) -> int:
    """Commit an event sent to a run into its inbox; return its inbox ``seq``.

    Args:
        run_id: The run.
        body: The event, serialized.
        answer: It answers the question the run waits for: accepted only while the run is
            ``waiting`` and only once per question (the run becomes ``running``).

    Raises:
        RunConflictError: The run is unknown or has ended, or (``answer``) it waits for
            nothing or its question was answered already.
        StoreFullError: The disk is full; nothing was written.
    """
    sql = self.sql
    stamp = time.time()  # the entry's created_at: it tells this post from any other

    def post(conn: Conn) -> int:
        row = conn.execute(sql.lock_run, (run_id,)).fetchone()
        key = check_post(run_id, None if row is None else (row[0], row[1]), answer)
        (seq,) = conn.execute(sql.next_inbox_seq, (run_id,)).fetchone()
        try:
            # The unique (run_id, key) decides which of two answers wins.
            conn.execute(sql.insert_inbox, (run_id, seq, body, key, stamp))
        except self.unique_violation as exc:
            raise answered_error(run_id) from exc
        if key is not None:
            conn.execute(sql.answered, (stamp, run_id))
        self._posted(conn, run_id, int(seq))
        return int(seq)

    return self._write(
        "commit an event to the run's inbox",
        post,
        recheck=inbox_posted(sql, run_id, body, answer, stamp),
    )


def inbox(self: SqlRunStore, run_id: str, after: int = 0) -> list[InboxItem]:
    """The run's inbox events with ``seq > after``, in order."""
    rows = self._query(self.sql.inbox, (run_id, after))
    return [InboxItem(int(s), str(b), k) for s, b, k in rows]


__all__ = ["append_event", "events", "inbox", "post_event"]
