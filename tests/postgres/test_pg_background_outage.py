"""The server's background loops ride out a PostgreSQL restart: the scheduler fires each time
once and goes on firing after the server is back; the retention sweeper deletes the runs that
ended before the outage, and those that ended after, once it is back."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import psycopg
import pytest
from batonflow.apps.schedules import Scheduler
from batonflow.core import (
    DuplicateStartError,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowCheckpointer,
    step,
)
from batonflow.core.durable._records import RunRecord
from batonflow.core.durable._schedules import ScheduleRecord
from batonflow.core.errors import StoreUnreachableError
from batonflow.core.retention import Retention
from batonflow.postgres import PostgresCheckpointStore
from pg_server import PostgresServer, restart_fast, running_server

pytestmark = pytest.mark.slow


class Tick(Workflow):
    """Ends at once with its start field ``n``."""

    @step
    async def tick(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=ev.get("n"))


@pytest.fixture(scope="module")
def own_server():
    """A server these tests restart (the session's is shared)."""
    with running_server() as server:
        yield server


def _store(server: PostgresServer, db: str) -> PostgresCheckpointStore:
    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {db}")
    return PostgresCheckpointStore(server.url(db), outage_seconds=60)


async def _until(check: Any, what: str, deadline: float = 60.0) -> None:
    end = time.monotonic() + deadline
    while not await asyncio.to_thread(check):
        assert time.monotonic() < end, what
        await asyncio.sleep(0.1)


async def test_the_scheduler_fires_once_per_time_across_a_restart(own_server) -> None:
    store = _store(own_server, "sched")
    store.add_schedule(
        ScheduleRecord("every-second", "tick", "* * * * * *", {"n": 1}, "skip", time.time())
    )
    cptr = WorkflowCheckpointer(Tick(), store=store)

    async def start(name: str, event: Any, fields: dict[str, Any], key: str) -> str:
        try:
            return str((await cptr.astart(start_event=event, idempotency_key=key)).run_id)
        except DuplicateStartError as exc:
            return exc.run_id

    scheduler = Scheduler(store, {"tick": Tick()}, start, poll=0.5)
    loop = asyncio.create_task(scheduler.run())
    try:
        linked = lambda: [f for f in store.firings(schedule="every-second") if f.run_id]  # noqa: E731
        await _until(lambda: len(linked()) >= 2, "no firing before the restart")
        await asyncio.to_thread(restart_fast, own_server)
        after = len(linked())
        await _until(lambda: len(linked()) >= after + 3, "no firing after the restart")
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
    firings = store.firings(schedule="every-second")
    runs = {r.run_id for r in store.runs()}
    ids = [f.run_id for f in firings if f.run_id is not None]
    assert len(ids) == len(set(ids)), "two firings share a run"
    assert set(ids) <= runs and len(runs) == len(ids), "a run without a firing, or twice"
    assert len({f.fire_at for f in firings}) == len(firings)
    store.close()


async def test_retention_sweeps_on_after_a_restart(own_server) -> None:
    store = _store(own_server, "retained")
    ended = time.time() - 3600

    def add(run_id: str) -> None:
        while True:  # a write while the server is away says when to try again
            try:
                return store.create_run(RunRecord(run_id, "wf", "completed", ended, ended))
            except StoreUnreachableError as exc:
                time.sleep(exc.retry_after or 0.1)

    for i in range(20):
        add(f"old-{i}")
    sweeper = asyncio.create_task(Retention(keep_finished="1m", every=0.2).run_forever(store))
    try:
        await _until(lambda: not store.runs(), "the runs that ended before were not deleted")
        await asyncio.to_thread(restart_fast, own_server)
        for i in range(20):
            await asyncio.to_thread(add, f"late-{i}")
        await _until(lambda: not store.runs(), "the runs that ended after were not deleted")
        assert not sweeper.done(), "the sweeper stopped"
    finally:
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper
    store.close()
