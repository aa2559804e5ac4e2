"""A replica's log entries and run ends commit without waiting for ``NOTIFY``'s commit lock.

A transaction that sends a ``NOTIFY`` takes, while it commits, a lock on the whole server (an
object lock on database 0: PostgreSQL's ``async.c``, ``PreCommit_Notify``). When each write
carried its own ``NOTIFY``, every replica's writes queued for that lock, and a second replica
made the queue long. The test holds the lock: a session that wrote and notified, whose commit
waits for a synchronous standby that does not exist (the server's ``synchronous_standby_names``
names one; the store's sessions commit with ``synchronous_commit=off`` and never wait for it).
Meanwhile the store's writes commit, and their announcements arrive once the lock is free.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from batonflow.core.durable._records import RunRecord
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres.store import EVENTS_CHANNEL
from pg_server import running_server
from waiting import until

#: What a backend waiting for NOTIFY's commit lock waits for.
NOTIFY_LOCK_WAITERS = (
    "SELECT count(*) FROM pg_locks WHERE locktype = 'object' AND NOT granted "
    "AND classid = 'pg_database'::regclass AND objid = 0"
)


@pytest.fixture
def stalling_url() -> Iterator[str]:
    """A fresh server whose synchronous commits wait for a standby that never comes."""
    with running_server() as server:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET synchronous_standby_names = 'nobody'")
            conn.execute("SELECT pg_reload_conf()")
        yield server.url()


def _watch(url: str, sql: str, args: tuple[Any, ...] = ()) -> Any:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql, args).fetchone()[0]  # type: ignore[index]


@contextmanager
def notify_lock_held(url: str) -> Iterator[None]:
    """Hold NOTIFY's commit lock: a transaction that wrote and notified, stuck in its commit."""
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("CREATE TABLE IF NOT EXISTS held (x int)")
    pid = conn.info.backend_pid

    def commit() -> None:
        conn.execute("SET synchronous_commit = on")
        with conn.transaction():
            conn.execute("INSERT INTO held VALUES (1)")
            conn.execute("NOTIFY held")

    holder = threading.Thread(target=commit, daemon=True)
    holder.start()
    try:
        until(
            lambda: (
                _watch(url, "SELECT wait_event FROM pg_stat_activity WHERE pid = %s", (pid,))
                == "SyncRep"
            ),
            "the holder's commit never waited for its standby",
        )
        yield
    finally:
        # Cancelled, the commit ends locally (it was written; only the standby is not waited for).
        _watch(url, "SELECT pg_cancel_backend(%s)", (pid,))
        holder.join(30)
        conn.close()


def _record(run_id: str) -> RunRecord:
    now = time.time()
    return RunRecord(run_id, "Flow", "running", now, now, owner="server")


def test_writes_commit_while_another_session_holds_notifys_commit_lock(stalling_url):
    store = PostgresCheckpointStore(stalling_url, replica_id="a")
    listener = psycopg.connect(stalling_url, autocommit=True)
    listener.execute(f"LISTEN {EVENTS_CHANNEL}")
    run_id = uuid.uuid4().hex
    store.create_run(_record(run_id))
    written: list[int] = []
    try:
        with notify_lock_held(stalling_url):
            # The lock is held: a plain NOTIFY now waits for it.
            probe = threading.Thread(
                target=_watch, args=(stalling_url, "SELECT pg_notify('probe', 'x')"), daemon=True
            )
            probe.start()
            until(
                lambda: _watch(stalling_url, NOTIFY_LOCK_WAITERS) >= 1,
                "a NOTIFY did not wait for the held lock",
            )

            def write() -> None:
                written.append(store.append_event(run_id, "event", '{"n": 1}'))
                store.finish_run(run_id, "completed", result="1", end='{"status": "completed"}')
                written.append(2)

            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            writer.join(20)
            assert written == [1, 2], (
                "the store's log entry and run end waited for NOTIFY's commit lock: "
                f"{_watch(stalling_url, NOTIFY_LOCK_WAITERS)} backend(s) wait for it"
            )
            assert store.run(run_id).status == "completed"  # type: ignore[union-attr]
        probe.join(30)
        # The lock is free: the entries' announcement (the end's seq is the newest) arrives.
        got: list[str] = []
        deadline = time.monotonic() + 30
        for note in listener.notifies(timeout=30):
            got.append(note.payload)
            if f"{run_id} 2" in got or time.monotonic() > deadline:
                break
        assert f"{run_id} 2" in got, got
    finally:
        listener.close()
        store.close()
