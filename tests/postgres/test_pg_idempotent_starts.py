"""Idempotent starts on PostgreSQL: retries racing on two ``batonflow serve`` replicas.

A client that lost the answer to a start retries it, maybe on another replica behind the
load balancer, maybe while its first attempt is still being taken: every attempt with the
same ``Idempotency-Key`` gets the one run the key started (``202`` for the attempt that started
it, ``200`` for the others), and the run's first step runs once. Also: a database of schema
version 6 gets the key's column and unique index.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid

import httpx
import psycopg
import pytest
from batonflow.core import (
    DuplicateStartError,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowCheckpointer,
    step,
)
from batonflow.core.durable._records import RunRecord
from batonflow.core.errors import RunConflictError
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres._sql import SCHEMA_VERSION
from replicas import Replica, executions


@pytest.mark.slow
def test_retries_racing_on_two_replicas_start_one_run(postgres_url, tmp_path):
    """Sixteen attempts of one start, sent at once to two replica processes, make one run."""
    replicas = [Replica(f"r{i}", postgres_url, tmp_path, lease=5) for i in range(2)]
    log = tmp_path / "steps.log"
    body = {"log": str(log), "pause": 0.2}
    key = str(uuid.uuid4())
    barrier = threading.Barrier(16)
    answers: list[tuple[int, str, str | None]] = []

    def attempt(i: int) -> None:
        replica = replicas[i % 2]
        with httpx.Client(base_url=replica.url, timeout=30) as http:
            barrier.wait()
            response = http.post(
                "/workflows/steps/runs", json=body, headers={"Idempotency-Key": key}
            )
        answers.append(
            (
                response.status_code,
                response.json()["run_id"],
                response.headers.get("idempotent-replayed"),
            )
        )

    try:
        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert len(answers) == 16
        (run_id,) = {run for _, run, _ in answers}
        codes = sorted((code, replayed) for code, _, replayed in answers)
        assert codes == [(200, "true")] * 15 + [(202, None)]
        assert replicas[1].client.wait(run_id, timeout=60).status == "completed"
        # The run's steps ran once each, on whichever replica took the winning attempt.
        assert {step: len(pids) for (run, step), pids in executions(log).items()} == {
            "work": 1,
            "check": 1,
            "finish": 1,
        }
        assert {run for run, _ in executions(log)} == {run_id}
        # A later retry, on either replica, still gets the run (it is kept).
        for replica in replicas:
            again = httpx.post(
                f"{replica.url}/workflows/steps/runs",
                json=body,
                headers={"Idempotency-Key": key},
                timeout=30,
            )
            assert (again.status_code, again.json()["run_id"]) == (200, run_id)
            assert again.json()["status"] == "completed"
    finally:
        for replica in replicas:
            replica.stop()


def test_a_version_6_database_gets_the_key(postgres_url):
    """A database of schema version 6 (no key or parent columns) is migrated to 7: the columns,
    and one run per key."""
    with PostgresCheckpointStore(postgres_url) as store:
        pass
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP INDEX checkpoint_runs_by_idempotency_key")
        conn.execute("DROP INDEX checkpoint_runs_by_parent")
        for column in ("idempotency_key", "parent_run_id", "parent_seq"):
            conn.execute(f"ALTER TABLE checkpoint_runs DROP COLUMN {column}")
        conn.execute("UPDATE batonflow_schema SET version = 6")
    now = time.time()
    with PostgresCheckpointStore(postgres_url) as store:
        store.create_run(RunRecord("a", "Flow", "running", now, now, idempotency_key="k"))
        with pytest.raises(RunConflictError, match="idempotency key 'k' exists already"):
            store.create_run(RunRecord("b", "Flow", "running", now, now, idempotency_key="k"))
        assert store.run_for_key("k").run_id == "a"
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM batonflow_schema").fetchone() == (SCHEMA_VERSION,)


async def test_a_start_with_a_key_reads_nothing_on_the_event_loop(postgres_url) -> None:
    """astart with a fresh key makes no look-up on the loop (the insert decides); a retry with
    the key still gets the run the first start made."""
    with PostgresCheckpointStore(postgres_url) as store:
        looked_up: list[bool] = []
        real = store.run_for_key

        def watched(key: str):
            looked_up.append(threading.current_thread() is threading.main_thread())
            return real(key)

        store.run_for_key = watched  # type: ignore[method-assign]
        cptr = WorkflowCheckpointer(_Echo(), store=store)
        handler = await cptr.astart(text="hi", idempotency_key="order-19")
        assert looked_up == []
        try:
            await cptr.astart(text="hi", idempotency_key="order-19")
        except DuplicateStartError as exc:
            assert exc.run_id == handler.run_id
        else:
            raise AssertionError("a retry with the key started another run")
        assert await asyncio.wait_for(handler, 30) == "hi"


class _Echo(Workflow):
    """Returns its start field ``text``."""

    @step
    async def echo(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=ev.text)
