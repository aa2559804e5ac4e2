"""Fencing on PostgreSQL: a write from a store that no longer holds a run is refused, whoever
holds it now (another replica, another process under the same replica id, or nobody because the
run ended or was released), and an ended run never changes again."""

from __future__ import annotations

import time
import uuid

import psycopg
import pytest
from batonflow.core.durable._records import Checkpoint, RunRecord
from batonflow.core.errors import CheckpointError, LeaseLostError
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres._sql import SCHEMA_VERSION


def _record(run_id: str) -> RunRecord:
    now = time.time()
    return RunRecord(run_id, "Flow", "running", now, now, owner="server")


def _checkpoint(run_id: str, seq: int) -> Checkpoint:
    return Checkpoint(f"{run_id}:{seq}", run_id, "Flow", "s", None, (), time.time(), {}, seq)


def _expire(url: str, run_id: str) -> None:
    """Make a run's lease run out now, as if its replica had stalled past it."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE checkpoint_runs SET lease_until = lease_until - 3600 WHERE run_id = %s",
            (run_id,),
        )


def _late_writes(store: PostgresCheckpointStore, run_id: str, seq: int) -> None:
    """Every fenced write a stalled replica makes when it wakes: each must be refused."""
    with pytest.raises(LeaseLostError):
        store.put(_checkpoint(run_id, seq))
    with pytest.raises(LeaseLostError):
        store.append_event(run_id, "event", '{"late": 1}')
    with pytest.raises(LeaseLostError):
        store.append_event(run_id, "event", '{"late": 2}', waiting=True)
    with pytest.raises(LeaseLostError):
        store.set_status(run_id, "interrupted", error="late")
    with pytest.raises(LeaseLostError):
        store.finish_run(run_id, "interrupted", error="late", end='{"status": "interrupted"}')
    with pytest.raises(LeaseLostError):
        store.acquire(run_id)


def test_a_run_completed_elsewhere_is_not_changed_by_the_late_replica(postgres_url):
    """B takes A's expired run over and completes it; A's late writes are all refused and the
    run keeps B's result, status and log, with one end entry last."""
    with (
        PostgresCheckpointStore(postgres_url, replica_id="a") as a,
        PostgresCheckpointStore(postgres_url, replica_id="b") as b,
    ):
        run_id = uuid.uuid4().hex
        a.create_run(_record(run_id))
        a.put(_checkpoint(run_id, 0))
        _expire(postgres_url, run_id)
        assert [r.run_id for r in b.claim_expired()] == [run_id]
        b.put(_checkpoint(run_id, 1))
        b.finish_run(run_id, "completed", result='"b"', end='{"status": "completed"}')
        before = [(e.seq, e.kind, e.body) for e in a.events(run_id)]
        _late_writes(a, run_id, 2)
        record = a.run(run_id)
        assert record is not None and (record.status, record.result) == ("completed", '"b"')
        assert [(e.seq, e.kind, e.body) for e in a.events(run_id)] == before
        assert before[-1][1] == "end" and [e[1] for e in before].count("end") == 1
        assert [c.seq for c in a.list(run_id)] == [0, 1]
        assert a.claim(run_id) is False and b.claim(run_id) is False
        assert a.claim_expired() == [] and b.claim_expired() == []


def test_a_released_lease_is_not_free_to_write(postgres_url):
    """After its lease was released (nobody holds the run), a store writes nothing into it."""
    with PostgresCheckpointStore(postgres_url, replica_id="a") as a:
        run_id = uuid.uuid4().hex
        a.create_run(_record(run_id))
        a.release(run_id)
        assert a.lease_of(run_id) == (None, None)
        _late_writes(a, run_id, 0)
        record = a.run(run_id)
        assert record is not None and record.status == "running"
        assert a.events(run_id) == [] and a.list(run_id) == []


def test_a_restarted_process_under_the_same_replica_id_fences_the_old_one(postgres_url):
    """The same replica id restarted as a new process claims its runs; the old process (still
    alive, e.g. stopped with SIGSTOP) can no longer write, renew or end them."""
    with (
        PostgresCheckpointStore(postgres_url, replica_id="web-1") as old,
        PostgresCheckpointStore(postgres_url, replica_id="web-1") as new,
    ):
        run_id = uuid.uuid4().hex
        old.create_run(_record(run_id))
        old.put(_checkpoint(run_id, 0))
        assert new.claim(run_id) is True
        assert old.renew_leases() == [] and new.renew_leases() == [run_id]
        with pytest.raises(LeaseLostError, match="another process of replica 'web-1'"):
            old.put(_checkpoint(run_id, 1))
        _late_writes(old, run_id, 1)
        new.put(_checkpoint(run_id, 1))
        new.finish_run(run_id, "completed", result='"new"', end="{}")
        record = new.run(run_id)
        assert record is not None and (record.status, record.result) == ("completed", '"new"')
        assert [e.kind for e in new.events(run_id)] == ["end"]


def test_the_late_writes_message_says_the_run_ended(postgres_url):
    """The refusal of a write into an ended run says so, and what to do."""
    with (
        PostgresCheckpointStore(postgres_url, replica_id="a") as a,
        PostgresCheckpointStore(postgres_url, replica_id="b") as b,
    ):
        run_id = uuid.uuid4().hex
        a.create_run(_record(run_id))
        _expire(postgres_url, run_id)
        b.claim_expired()
        b.set_status(run_id, "failed", error="E: boom")
        with pytest.raises(LeaseLostError, match=r"no longer held .* \(it failed\).*Stop running"):
            a.put(_checkpoint(run_id, 0))


def test_an_ended_run_is_never_claimed_even_with_a_stale_lease(postgres_url):
    """An ended run whose lease columns are still set (written by an older version) is not
    handed out by claim or claim_expired, nor renewed into a live lease."""
    with (
        PostgresCheckpointStore(postgres_url, replica_id="a") as a,
        PostgresCheckpointStore(postgres_url, replica_id="b") as b,
    ):
        run_id = uuid.uuid4().hex
        a.create_run(_record(run_id))
        a.finish_run(run_id, "completed", result='"a"', end="{}")
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(
                "UPDATE checkpoint_runs SET lease_owner = 'a', lease_until = 0 WHERE run_id = %s",
                (run_id,),
            )
        assert b.claim(run_id) is False
        assert b.claim_expired() == []
        record = b.run(run_id)
        assert record is not None and (record.status, record.result) == ("completed", '"a"')


def test_a_store_without_replica_id_leaves_an_ended_run_alone(postgres_url):
    """Without fencing (library use), late status writes and end entries are ignored."""
    with PostgresCheckpointStore(postgres_url) as store:
        run_id = uuid.uuid4().hex
        store.create_run(_record(run_id))
        store.finish_run(run_id, "completed", result='"r"', end="{}")
        store.finish_run(run_id, "interrupted", error="late", end='{"late": 1}')
        store.set_status(run_id, "failed", error="late")
        record = store.run(run_id)
        assert record is not None and (record.status, record.result) == ("completed", '"r"')
        assert [e.body for e in store.events(run_id)] == ["{}"]


def test_a_version_3_database_is_migrated_to_fencing_tokens(postgres_url):
    """A version-3 database (no lease_token) gets the column; its leased runs are fenced by the
    new tokens: the replica that claims one writes, the old lease's holder does not."""
    run_id = uuid.uuid4().hex
    with PostgresCheckpointStore(postgres_url, replica_id="a") as a:
        a.create_run(_record(run_id))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE checkpoint_runs DROP COLUMN lease_token")
        conn.execute("UPDATE batonflow_schema SET version = 3")
    with (
        PostgresCheckpointStore(postgres_url, replica_id="a") as a,
        PostgresCheckpointStore(postgres_url, replica_id="b") as b,
    ):
        with psycopg.connect(postgres_url) as conn:
            assert conn.execute("SELECT version FROM batonflow_schema").fetchone() == (
                SCHEMA_VERSION,
            )
            assert conn.execute(
                "SELECT lease_owner, lease_token FROM checkpoint_runs WHERE run_id = %s",
                (run_id,),
            ).fetchone() == ("a", None)
        with pytest.raises(LeaseLostError):
            b.put(_checkpoint(run_id, 0))  # a's lease is alive: b may not write
        assert a.claim(run_id) is True  # a restarted replica a takes its run back
        a.put(_checkpoint(run_id, 0))
        assert a.renew_leases() == [run_id]


def test_a_store_stopped_inside_a_transaction_does_not_keep_its_runs_from_a_survivor(
    postgres_url,
):
    """A process stopped (SIGSTOP, a frozen VM) between two statements of a transaction holds
    its run's row lock; the server ends that transaction after a lease, so the survivor's
    claim, which skips locked rows, takes the run over."""
    lease = 1.0
    a = PostgresCheckpointStore(postgres_url, replica_id="a", lease_seconds=lease)
    b = PostgresCheckpointStore(postgres_url, replica_id="b", lease_seconds=lease)
    try:
        run_id = uuid.uuid4().hex
        a.create_run(_record(run_id))
        taken: list[str] = []
        # The stalled process's transaction is ended by the server: its next statement fails.
        with pytest.raises(CheckpointError, match="idle-in-transaction"):
            with a.connection() as conn:
                conn.execute("BEGIN")
                conn.execute(
                    "SELECT 1 FROM checkpoint_runs WHERE run_id = %s FOR UPDATE", (run_id,)
                )
                # ... and the process stops here, its transaction open.
                deadline = time.monotonic() + 30
                while not taken:
                    assert time.monotonic() < deadline, "the locked run was never taken over"
                    time.sleep(0.2)
                    taken = [r.run_id for r in b.claim_expired()]
                conn.execute("SELECT 1")
        assert taken == [run_id]
    finally:
        a.close()
        b.close()
