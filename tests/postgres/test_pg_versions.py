"""Versions on PostgreSQL: a database of schema 8 gets the version column, ``batonflow runs
check --store postgresql://...`` (a real CLI process), and a replica running new code leaves a
run it cannot continue to a replica whose code can (real ``batonflow serve`` replicas)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import psycopg
import pytest
from batonflow.core import IncompatibleRunError, WorkflowCheckpointer
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres._sql import SCHEMA_VERSION
from replicas import Replica
from versioned_apps import HOLD_REASONS, V1, V2, batonflow, park, write
from versioned_flows import answer, make_flow
from versioned_flows import park as park_here


async def test_a_version_8_database_gets_the_version_column(postgres_url: str) -> None:
    """Schema 8 (no workflow_version) migrates to the current one: a run recorded before is
    checked by its checkpoint, a new run records its version."""
    with PostgresCheckpointStore(postgres_url) as store:
        old = WorkflowCheckpointer(make_flow()(), store=store)
        fits, breaks = await park_here(old), await park_here(old)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE checkpoint_runs DROP COLUMN workflow_version")
        conn.execute("UPDATE batonflow_schema SET version = 8")
    with PostgresCheckpointStore(postgres_url) as store:
        record = store.run(fits)
        assert record is not None and record.workflow_version is None
        same = WorkflowCheckpointer(make_flow()(), store=store)
        assert await answer(same, fits, "ok") == "ok"
        renamed = WorkflowCheckpointer(make_flow(second="dispatch")(), store=store)
        with pytest.raises(IncompatibleRunError, match="step 'ship'"):
            renamed.resume(breaks)
        record = store.run(await park_here(renamed))
        assert record is not None and record.workflow_version == renamed.workflow.version
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM batonflow_schema").fetchone() == (SCHEMA_VERSION,)


def test_runs_check_reads_a_postgresql_store(postgres_url: str, tmp_path: Path) -> None:
    """The deploy check on PostgreSQL: the run in hold is listed, exit status 1."""
    shipping, holding = park(write(tmp_path / "v1", V1).parent, postgres_url)
    new = write(tmp_path / "v2", V2).parent
    done = batonflow(new, "runs", "check", "--app", "orders:Orders", "--store", postgres_url)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith(holding) and shipping not in done.stdout
    assert all(reason in done.stdout for reason in HOLD_REASONS)
    report = json.loads(
        batonflow(
            new, "runs", "check", "--app", "orders:Orders", "--store", postgres_url, "--json"
        ).stdout
    )
    assert [r["run_id"] for r in report["incompatible"]] == [holding]


def _wait(replica: Replica, run_id: str, statuses: set[str], timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while (status := replica.client.get(run_id).status) not in statuses:
        assert time.monotonic() < deadline, f"run {run_id} stayed {status}:\n{replica.tail()}"
        time.sleep(0.1)
    return status


def _wait_log(replica: Replica, text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while text not in replica.log.read_text():
        assert time.monotonic() < deadline, f"no {text!r} in:\n{replica.tail()}"
        time.sleep(0.1)


@pytest.mark.slow
def test_a_replica_leaves_a_run_its_code_cannot_continue_to_one_that_can(
    postgres_url: str, tmp_path: Path
) -> None:
    """A (V1) dies with two runs waiting; B (V2) takes over the one it can continue and
    leaves the other, unmarked, to C (V1), which takes it and finishes it."""
    flows = ("orders=orders:Orders",)
    old, new = write(tmp_path / "v1", V1).parent, write(tmp_path / "v2", V2).parent
    a = Replica("a", postgres_url, old, lease=2, flows=flows)
    shipping = a.client.start("orders", {"item": "tea"}).run_id
    holding = a.client.start("orders", {"item": "tea", "hold": True}).run_id
    for run_id in (shipping, holding):
        _wait(a, run_id, {"waiting"})
    a.kill()
    b = Replica("b", postgres_url, new, lease=2, flows=flows)
    c = None
    try:
        _wait_log(b, f"replica b leaves run {holding} to a replica whose code can continue it")
        assert b.client.answer(shipping, "go").run_id == shipping
        assert b.client.wait(shipping, timeout=60).result == "shipped tea (v2): go"
        refused = b.client.get(holding)
        assert refused.status == "waiting" and not refused.error  # not marked: left as it was
        c = Replica("c", postgres_url, old, lease=2, flows=flows, log_name="c.log")
        _wait_log(c, "resumed 1 run(s)")  # c claims the run nobody holds when it starts
        _wait(c, holding, {"waiting"})
        c.client.answer(holding, "later")
        assert c.client.wait(holding, timeout=60).result == "held tea: later"
        assert f"resumes run {holding}" not in b.log.read_text()  # b never said it ran it
    finally:
        b.stop()
        if c is not None:
            c.stop()
