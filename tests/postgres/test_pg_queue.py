"""The run queue on real PostgreSQL: ``batonflow serve`` replicas pulling under limits.

Three replicas (subprocesses) share one database and serve ``steps`` with
``--limit steps:concurrency=3 --max-running 2``: 200 starts spread over them are queued, the
database never counts more than 3 running at once, and each run runs once. A replica killed
with SIGKILL while it holds running runs and the queue holds more: every run still completes,
with exactly one ``end``. The schema of version 9 (before the queue) is migrated to 10.
"""

from __future__ import annotations

import time
import uuid

import psycopg
import pytest
from batonflow.core import RunLimits
from batonflow.core.durable._queue import QueueEntry
from batonflow.core.durable._records import RunRecord
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres._sql import SCHEMA_VERSION
from replicas import Replica
from replicas import executions as _executions

LIMITS = ("--limit", "steps:concurrency=3", "--max-running", "2")


def _counts(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT status, COUNT(*) FROM checkpoint_runs WHERE workflow_name = 'steps' "
            "GROUP BY status"
        ).fetchall()
    return {status: int(n) for status, n in rows}


def _wait_all_ended(url: str, total: int, timeout: float, watch=None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        counts = _counts(url)
        if watch is not None:
            watch(counts)
        if counts.get("completed", 0) + counts.get("failed", 0) == total:
            return
        assert time.monotonic() < deadline, f"runs did not end: {counts}"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_three_replicas_never_exceed_the_limit_with_200_queued(postgres_url, tmp_path):
    """200 queued runs, three replicas: at most 3 running in the database, each run once."""
    log = tmp_path / "steps.log"
    replicas = [Replica(f"q{i}", postgres_url, tmp_path, 5.0, extra=LIMITS) for i in range(3)]
    try:
        # Three slow runs take the three slots; the 200 started meanwhile all wait queued.
        ids = [
            replicas[i % 3].client.start("steps", log=str(log), n=i, pause=8.0).run_id
            for i in range(3)
        ]
        ids += [
            replicas[i % 3].client.start("steps", log=str(log), n=i, pause=0.02).run_id
            for i in range(200)
        ]
        most = 0
        seen_queued = 0

        def watch(counts: dict[str, int]) -> None:
            nonlocal most, seen_queued
            most = max(most, counts.get("running", 0) + counts.get("waiting", 0))
            seen_queued = max(seen_queued, counts.get("queued", 0))

        _wait_all_ended(postgres_url, 203, 420, watch)
        assert most <= 3, most
        assert seen_queued == 200  # counted while the 200 waited in the queue
        statuses = {replicas[0].client.get(run_id).status for run_id in ids}
        assert statuses == {"completed"}
        ran = _executions(log)
        assert all(len(ran[(run_id, "work")]) == 1 for run_id in ids)
        pids = {ran[(run_id, "work")][0] for run_id in ids}
        assert len(pids) >= 2  # the queue was pulled by more than one replica
    finally:
        for replica in replicas:
            replica.stop()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_replica_killed_with_queued_and_running_runs(postgres_url, tmp_path):
    """SIGKILL a replica holding running runs while more wait queued: each run ends once."""
    log = tmp_path / "steps.log"
    lease = 2.0
    replicas = [Replica(f"k{i}", postgres_url, tmp_path, lease, extra=LIMITS) for i in range(2)]
    try:
        ids = [
            replicas[i % 2].client.start("steps", log=str(log), n=i, pause=0.6).run_id
            for i in range(30)
        ]
        victim, survivor = replicas
        deadline = time.monotonic() + 60
        while not any(victim.pid in pids for pids in _executions(log).values()):
            assert time.monotonic() < deadline, "the victim never ran a step"
            time.sleep(0.05)
        assert _counts(postgres_url).get("queued", 0) > 0
        victim.kill()
        _wait_all_ended(postgres_url, 30, 400)
        for run_id in ids:
            run = survivor.client.get(run_id)
            assert run.status == "completed", (run_id, run.status, run.error)
            ends = [e for e in survivor.client.events(run_id) if e.is_end]
            assert len(ends) == 1
        ran = _executions(log)
        for run_id in ids:
            # A step runs again only when the kill interrupted it on the victim.
            pids = ran[(run_id, "finish")]
            assert len(pids) == 1 or pids[0] == victim.pid, (run_id, pids)
        assert any(victim.pid in ran[(r, "work")] for r in ids)
    finally:
        for replica in replicas:
            replica.stop()


def test_a_version_9_database_gets_the_queue(postgres_url):
    """A database of version 9 (before the queue) is migrated to 10 and queues runs."""
    with PostgresCheckpointStore(postgres_url) as store:
        now = time.time()
        store.create_run(RunRecord("old", "wf", "completed", now, now))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE run_queue")
        conn.execute("UPDATE batonflow_schema SET version = 9")
    with PostgresCheckpointStore(postgres_url) as store:
        record = RunRecord(uuid.uuid4().hex, "wf", "queued", now, now, start_event="{}")
        store.enqueue(record, QueueEntry(), None)
        assert [r.run_id for r in store.claim_queued("wf", RunLimits(concurrency=1), 1)] == [
            record.run_id
        ]
        assert store.run("old").status == "completed"
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM batonflow_schema").fetchone() == (SCHEMA_VERSION,)
