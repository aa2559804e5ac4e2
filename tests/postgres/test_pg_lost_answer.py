"""Every store write whose answer is lost (its connection broke after the statement was sent)
returns as if it had succeeded once: exactly one row, entry or end, the right seq.

The lost answer is made deterministic on a server of the module's own. The store's write is
held on the server, then its backend is cut off (``pg_terminate_backend``, or ``SIGKILL``,
after which the server restarts as after a crash) while it waits:

* *committed*: the commit waits for a synchronous standby that does not exist
  (``synchronous_standby_names``), so it is committed locally when the backend goes;
* *not committed*: the statement waits for a lock a test transaction holds on the tables.

Either way the client reads "server closed the connection unexpectedly", with no answer.
When the postmaster itself is killed, the store reports the outage and the caller retries the
same write once the server is back (as the engine and the client do): the retry finds the
first try's commit.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from batonflow.core.durable._records import Checkpoint, RunRecord
from batonflow.core.errors import StoreUnreachableError
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres._sql import SCHEMA_VERSION
from pg_server import PostgresServer, kill_postmaster, running_server, start_server

DB = "lost"


@pytest.fixture(scope="module")
def own_server():
    """A server these tests cut backends of (and crash): the session's is shared."""
    with running_server() as server:
        yield server


@pytest.fixture
def store(own_server: PostgresServer):
    with _admin(own_server) as conn:  # once back from the last test's crash
        conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB}")
        # Commits in this database wait for synchronous standbys, once some are named.
        conn.execute(f"ALTER DATABASE {DB} SET synchronous_commit = on")
    with psycopg.connect(own_server.url(DB), autocommit=True) as conn:
        conn.execute("CREATE TABLE probe (n int)")  # see _commits_wait
    store = PostgresCheckpointStore(
        own_server.url(DB), replica_id="a", outage_seconds=60, lease_seconds=2.0
    )
    yield store
    store.close()


def _admin(server: PostgresServer, database: str = "postgres", deadline: float = 60):
    """A connection, once the server accepts them again (after a crash restart)."""
    end = time.monotonic() + deadline
    while True:
        try:
            return psycopg.connect(server.url(database), autocommit=True)
        except psycopg.OperationalError:
            assert time.monotonic() < end, "the server did not accept connections again"
            time.sleep(0.05)


def _admin_sql(server: PostgresServer, sql: str) -> None:
    """Run ``sql`` on the admin database, again while the server restarts (after a crash)."""
    end = time.monotonic() + 60
    while True:
        try:
            with _admin(server) as conn:
                conn.execute(sql)  # type: ignore[arg-type]
            return
        except psycopg.OperationalError:
            assert time.monotonic() < end, "the server did not come back"
            time.sleep(0.05)


def _settings(server: PostgresServer, standbys: str | None) -> None:
    if standbys is None:
        _admin_sql(server, "ALTER SYSTEM RESET synchronous_standby_names")
    else:
        _admin_sql(server, f"ALTER SYSTEM SET synchronous_standby_names = '{standbys}'")


def _reload(server: PostgresServer) -> None:
    _admin_sql(server, "SELECT pg_reload_conf()")


def _commits_wait(server: PostgresServer) -> None:
    """Wait until commits in the test database wait for the standby that was named (the
    server applies a reload asynchronously): a probe's commit is held, then cut off."""
    end = time.monotonic() + 30
    while True:
        probe = _admin(server, DB)
        pid = probe.info.backend_pid
        thread = threading.Thread(target=lambda: _quietly(probe, "INSERT INTO probe VALUES (1)"))
        thread.start()
        with _admin(server) as conn:
            while thread.is_alive():
                row = conn.execute(
                    "SELECT wait_event FROM pg_stat_activity WHERE pid = %s", (pid,)
                ).fetchone()
                if row is not None and row[0] == "SyncRep":
                    conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
                    thread.join()
                    probe.close()
                    return
                time.sleep(0.01)
        probe.close()
        assert time.monotonic() < end, "commits never waited for the named standby"
        time.sleep(0.05)


def _quietly(conn: psycopg.Connection[Any], sql: str) -> None:
    try:
        conn.execute(sql)  # type: ignore[arg-type]
    except psycopg.OperationalError:
        pass  # cut off on purpose


def _until_done(call: Callable[[], Any], refused: threading.Semaphore) -> Any:
    """``call()``, again after each ``retry_after``, as the engine and the client do
    (``refused`` is released each time the store reports the outage)."""
    end = time.monotonic() + 60
    while True:
        try:
            return call()
        except StoreUnreachableError as exc:
            assert exc.retry_after is not None and time.monotonic() < end, exc
            refused.release()
            time.sleep(exc.retry_after)


def _held_backend(server: PostgresServer, waiting: str, done: threading.Event) -> int:
    """The pid of the store's backend once its write waits (for ``SyncRep`` or a lock)."""
    column = "wait_event" if waiting == "SyncRep" else "wait_event_type"
    end = time.monotonic() + 30
    with _admin(server) as conn:
        while True:
            row = conn.execute(
                f"SELECT pid FROM pg_stat_activity WHERE datname = %s AND {column} = %s",
                (DB, waiting),
            ).fetchone()
            if row is not None:
                return int(row[0])
            assert not done.is_set(), "the write was not held: it returned before the cut"
            assert time.monotonic() < end, f"the write never waited for {waiting}"
            time.sleep(0.01)


def lose_answer(server: PostgresServer, call: Callable[[], Any], *, committed: bool, cut: str):
    """Run ``call`` (retried through the outage) with the answer of its write lost after the
    write committed or before; return what ``call`` returned."""
    lock = None
    outcome: dict[str, Any] = {}
    done = threading.Event()
    refused = threading.Semaphore(0)

    def run() -> None:
        try:
            outcome["value"] = _until_done(call, refused)
        except BaseException as exc:  # handed to the test's thread
            outcome["error"] = exc
        done.set()

    thread = threading.Thread(target=run)
    try:
        if committed:
            _settings(server, "nobody")
            _reload(server)
            _commits_wait(server)
        else:
            lock = _admin(server, DB)
            lock.autocommit = False
            lock.execute(
                "LOCK TABLE checkpoint_runs, checkpoints, run_events, run_inbox "
                "IN ACCESS EXCLUSIVE MODE"
            )
        thread.start()
        pid = _held_backend(server, "SyncRep" if committed else "Lock", done)
        if committed:
            _settings(server, None)  # read at the reload below, once the backend is gone
        if cut == "terminated":
            with _admin(server) as conn:
                conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        elif cut == "killed":
            os.kill(pid, signal.SIGKILL)  # the server restarts as after a crash
        else:  # the postmaster: the server is down until started again
            kill_postmaster(server)
            # The caller is told of the outage, and retries the same write later.
            assert refused.acquire(timeout=30), "the store never reported the outage"
            start_server(server)
    finally:
        if lock is not None:
            try:
                lock.rollback()
            except psycopg.OperationalError:
                pass  # the crash restart ended it
            lock.close()
        if committed:
            _settings(server, None)
            _reload(server)
        if thread.ident is not None:
            thread.join(90)
    assert not thread.is_alive(), "the write never returned"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _record(run_id: str) -> RunRecord:
    now = time.time()
    return RunRecord(run_id, "Flow", "running", now, now, owner="server", pid=os.getpid())


def _checkpoint(run_id: str, seq: int) -> Checkpoint:
    return Checkpoint(f"{run_id}:{seq}", run_id, "Flow", "s", None, (), time.time(), {}, seq)


@dataclass(frozen=True)
class Write:
    """One kind of write: what is there before, the write, and what it must leave."""

    setup: Callable[[PostgresCheckpointStore, str], Any]
    write: Callable[[PostgresCheckpointStore, str, Any], Any]
    check: Callable[[PostgresCheckpointStore, str, Any, Any], None]


def _events(store, run_id):
    return [(e.seq, e.kind, e.body) for e in store.events(run_id)]


def _create(store, run_id):
    store.create_run(_record(run_id))


def _expired(store, run_id):
    """A run of another replica whose lease ran out: ``claim_expired`` takes it."""
    with PostgresCheckpointStore(store.url, replica_id="b") as other:
        other.create_run(_record(run_id))
    with store.connection() as conn:
        conn.execute("UPDATE checkpoint_runs SET lease_until = 0 WHERE run_id = %s", (run_id,))
        # After a restart (the cases before this one crash the server) every holder has a
        # lease length to renew before its runs count as expired: wait that out.
        while (
            conn.execute(
                "SELECT EXTRACT(EPOCH FROM clock_timestamp() - pg_postmaster_start_time())"
            ).fetchone()[0]
            <= store.lease_seconds
        ):
            time.sleep(0.1)


def _check_created(store, run_id, record, result):
    assert result is None and store.run(run_id) == record
    assert store.lease_of(run_id)[0] == "a"


def _check_first_put(store, run_id, cp, result):
    assert [c.id for c in store.list(run_id)] == [cp.id]
    assert store.run(run_id).status == "running"


def _check_event(store, run_id, before, seq):
    assert seq == before + 1
    assert _events(store, run_id) == [(n, "event", f'"e{n}"') for n in range(1, seq + 1)]


def _check_waiting(store, run_id, _, seq):
    assert seq == 1 and _events(store, run_id) == [(1, "event", '"ask"')]
    record = store.run(run_id)
    assert (record.status, record.waiting_seq) == ("waiting", 1)


def _check_status(store, run_id, end, result):
    record = store.run(run_id)
    assert (record.status, record.result) == ("completed", '"r"')
    ends = [e for e in _events(store, run_id) if e[1] == "end"]
    assert ends == ([] if end is None else [(1, "end", end)])
    assert store.lease_of(run_id) == (None, None)


def _check_post(store, run_id, answer, seq):
    items = store.inbox(run_id)
    assert seq == 1 and [(i.seq, i.body) for i in items] == [(1, '"hi"')]
    assert (items[0].key is not None) is answer
    assert store.run(run_id).status == "running"


def _check_claim(store, run_id, _, claimed):
    assert [r.run_id for r in claimed] == [run_id]
    with store.connection() as conn:
        row = conn.execute(
            "SELECT lease_owner, lease_token FROM checkpoint_runs WHERE run_id = %s", (run_id,)
        ).fetchone()
    assert row == ("a", store.lease_token)


def _ask(store, run_id):
    _create(store, run_id)
    store.append_event(run_id, "event", '"ask"', waiting=True)
    return True


WRITES = {
    "create_run": Write(
        lambda s, r: _record(r), lambda s, r, rec: s.create_run(rec), _check_created
    ),
    "first put": Write(
        lambda s, r: _checkpoint(r, 0), lambda s, r, cp: s.put(cp), _check_first_put
    ),
    "put": Write(
        lambda s, r: (_create(s, r), _checkpoint(r, 0))[1],
        lambda s, r, cp: s.put(cp),
        _check_first_put,
    ),
    "first event": Write(
        lambda s, r: (_create(s, r), 0)[1],
        lambda s, r, _: s.append_event(r, "event", '"e1"'),
        _check_event,
    ),
    "event": Write(
        lambda s, r: (_create(s, r), s.append_event(r, "event", '"e1"'))[1],
        lambda s, r, _: s.append_event(r, "event", '"e2"'),
        _check_event,
    ),
    "waiting event": Write(
        lambda s, r: _create(s, r),
        lambda s, r, _: s.append_event(r, "event", '"ask"', waiting=True),
        _check_waiting,
    ),
    "status": Write(
        lambda s, r: _create(s, r),
        lambda s, r, _: s.set_status(r, "completed", result='"r"'),
        _check_status,
    ),
    "status and end": Write(
        lambda s, r: (_create(s, r), '{"status": "completed"}')[1],
        lambda s, r, end: s.finish_run(r, "completed", result='"r"', end=end),
        _check_status,
    ),
    "post": Write(
        lambda s, r: (_create(s, r), False)[1],
        lambda s, r, _: s.post_event(r, '"hi"'),
        _check_post,
    ),
    "answer": Write(_ask, lambda s, r, _: s.post_event(r, '"hi"', answer=True), _check_post),
    "claim_expired": Write(_expired, lambda s, r, _: s.claim_expired(), _check_claim),
    "release_all": Write(
        lambda s, r: _create(s, r),
        lambda s, r, _: s.release_all([r]),
        lambda s, r, _, released: (
            released == [r] and s.lease_of(r) == (None, None) or pytest.fail(str(released))
        ),
    ),
    "delete": Write(
        lambda s, r: (_create(s, r), s.put(_checkpoint(r, 0)), s.append_event(r, "event", "1")),
        lambda s, r, _: s.delete(r),
        lambda s, r, _, result: (
            s.run(r) is None and s.list(r) == [] and s.events(r) == [] or pytest.fail("kept")
        ),
    ),
}


@pytest.mark.parametrize("cut", ["terminated", "killed"])
@pytest.mark.parametrize("committed", [True, False], ids=["committed", "not-committed"])
@pytest.mark.parametrize("kind", list(WRITES))
def test_a_write_whose_answer_is_lost_is_made_once(store, own_server, kind, committed, cut):
    """The write returns what it would have, once; what it leaves is there exactly once."""
    write = WRITES[kind]
    run_id = uuid.uuid4().hex
    given = write.setup(store, run_id)
    result = lose_answer(
        own_server, lambda: write.write(store, run_id, given), committed=committed, cut=cut
    )
    write.check(store, run_id, given, result)


@pytest.mark.parametrize(
    "kind", ["create_run", "event", "status and end", "answer", "claim_expired"]
)
def test_a_write_retried_after_a_killed_postmaster_is_made_once(store, own_server, kind):
    """The postmaster killed while the write's commit waits: the store reports the outage,
    the caller's retry of the write once the server is back finds it committed."""
    write = WRITES[kind]
    run_id = uuid.uuid4().hex
    given = write.setup(store, run_id)
    result = lose_answer(
        own_server, lambda: write.write(store, run_id, given), committed=True, cut="postmaster"
    )
    write.check(store, run_id, given, result)


def test_a_version_4_database_is_migrated_to_lease_changes(own_server, store):
    """A version-4 database (no lease_change) gets the column; a claim marks what it took."""
    run_id = uuid.uuid4().hex
    _expired(store, run_id)
    with store.connection() as conn:
        conn.execute("ALTER TABLE checkpoint_runs DROP COLUMN lease_change")
        conn.execute("UPDATE batonflow_schema SET version = 4")
    with PostgresCheckpointStore(own_server.url(DB), replica_id="c", lease_seconds=2.0) as again:
        with again.connection() as conn:
            assert conn.execute("SELECT version FROM batonflow_schema").fetchone() == (
                SCHEMA_VERSION,
            )
        assert [r.run_id for r in again.claim_expired()] == [run_id]
        with again.connection() as conn:
            row = conn.execute(
                "SELECT lease_owner, lease_change IS NOT NULL FROM checkpoint_runs "
                "WHERE run_id = %s",
                (run_id,),
            ).fetchone()
        assert row == ("c", True)
