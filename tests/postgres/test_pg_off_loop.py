"""The PostgreSQL store's writes off the event loop, and its one-statement writes.

A durable run's checkpoint waiting for the database leaves the loop free for everything else
while the run itself waits; a run's writes made off the loop keep their order; a run is
recorded and ended in one statement each (one round trip, where a transaction took three and
six).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import psycopg
import pytest
from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
from batonflow.core.checkpoints import WorkflowCheckpointer
from batonflow.core.durable._records import RunRecord
from batonflow.core.errors import LeaseLostError
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres._offloop import Writers


class Middle(Event):
    n: int


class Gated(Workflow):
    """Two steps; the first waits for ``self.go`` and writes a stream event."""

    def __init__(self, go: asyncio.Event, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.go = go
        self.ran: list[str] = []

    @step
    async def first(self, ctx: Context, ev: StartEvent) -> Middle:
        self.ran.append("first")
        await self.go.wait()
        ctx.write_event_to_stream(Middle(n=0))
        return Middle(n=1)

    @step
    async def second(self, ev: Middle) -> StopEvent:
        self.ran.append("second")
        return StopEvent(result=ev.n + 1)


async def _until(condition, seconds: float = 20) -> None:  # type: ignore[no-untyped-def]
    async with asyncio.timeout(seconds):
        while not condition():
            await asyncio.sleep(0.01)


def _lock_waiters(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND datname = current_database()"
        ).fetchone()
    return int(row[0]) if row else 0


async def test_a_checkpoint_waiting_for_the_database_leaves_the_loop_free(postgres_url):
    """While a step's checkpoint waits for a row lock, the loop runs and the run waits."""
    store = PostgresCheckpointStore(postgres_url)
    go = asyncio.Event()
    flow = Gated(go, timeout=60)
    handler = WorkflowCheckpointer(flow, store=store).run()
    run_id = str(handler.run_id)
    await _until(lambda: flow.ran == ["first"])
    blocker = psycopg.connect(postgres_url)  # its transaction holds the run's row
    blocker.execute("SELECT 1 FROM checkpoint_runs WHERE run_id = %s FOR UPDATE", (run_id,))
    # Without writes off the loop only this timer could free it (the loop is blocked).
    freed = threading.Timer(15, blocker.commit)
    freed.start()
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.005)

    ticker = asyncio.create_task(tick())
    try:
        go.set()
        await _until(lambda: _lock_waiters(postgres_url) > 0, seconds=10)
        locked_at = ticks
        await _until(lambda: ticks >= locked_at + 20)
        assert flow.ran == ["first"]  # the run waits for its checkpoint
        assert not handler.done()
        assert freed.is_alive()  # the lock is still held: the loop turned while it was
    finally:
        freed.cancel()
        blocker.commit()
        blocker.close()
        ticker.cancel()
    assert await handler == 2
    assert [c.step_name for c in store.list(run_id)] == ["first", "second"]
    store.close()


async def test_a_stream_event_refused_off_the_loop_fails_the_run(postgres_url):
    """A stream event whose run another store took meanwhile fails the run (LeaseLostError)."""
    store = PostgresCheckpointStore(postgres_url, replica_id="a")
    go = asyncio.Event()
    flow = Gated(go, timeout=60)
    handler = WorkflowCheckpointer(flow, store=store).run()
    await _until(lambda: flow.ran == ["first"])
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE checkpoint_runs SET lease_owner = 'b', lease_token = 'other' WHERE run_id = %s",
            (str(handler.run_id),),
        )
    go.set()
    with pytest.raises(LeaseLostError):
        await handler
    assert flow.ran == ["first"]
    assert store.events(str(handler.run_id)) == []
    store.close()


async def test_a_runs_writes_off_the_loop_are_made_in_order():
    """A run's second write waits for its first; another run's does not; drain waits too."""
    writers = Writers(4)
    first_may_go = threading.Event()
    done: list[str] = []

    def first() -> None:
        first_may_go.wait(30)
        done.append("first")

    a = writers.start("r", first)
    b = writers.start("r", done.append, "second")
    drained = asyncio.ensure_future(asyncio.to_thread(writers.drain, "r"))
    await writers.start("other", done.append, "other")
    assert done == ["other"]
    assert not drained.done()
    first_may_go.set()
    await asyncio.gather(a, b, drained)
    assert done == ["other", "first", "second"]
    writers.close()


async def test_writer_threads_are_started_as_writes_need_them():
    """Writes one at a time take one thread; writes at once take more, up to the size."""
    writers = Writers(3)
    for i in range(5):
        await writers.start(f"r{i}", time.sleep, 0)
    assert len(writers._threads) == 1
    gate = threading.Event()
    held = [writers.start(f"s{i}", gate.wait, 30) for i in range(5)]
    gate.set()
    await asyncio.gather(*held)
    assert len(writers._threads) == 3
    writers.close()


def _counts(args: tuple, kwargs: dict) -> bool:
    """Whether a statement is the store's own: not the wake-up its announcer thread may send
    meanwhile, nor the set-up of a connection the pool opens meanwhile."""
    query = str(args[0] if args else kwargs.get("query", ""))
    return "pg_notify" not in query and not query.startswith("SET ")


@pytest.mark.parametrize("replica_id", [None, "a"], ids=["plain", "replica"])
def test_a_run_is_recorded_and_ended_in_one_statement_each(postgres_url, monkeypatch, replica_id):
    """create_run and finish_run (with its end entry) each send one statement, no BEGIN."""
    store = PostgresCheckpointStore(postgres_url, replica_id=replica_id)
    sent: list[str] = []
    execute, transaction = psycopg.Connection.execute, psycopg.Connection.transaction

    def counted_execute(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if _counts(args, kwargs):
            sent.append("statement")
        return execute(self, *args, **kwargs)

    def counted_transaction(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        sent.append("transaction")
        return transaction(self, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", counted_execute)
    monkeypatch.setattr(psycopg.Connection, "transaction", counted_transaction)
    now = time.time()
    store.create_run(RunRecord("r1", "Flow", "running", now, now, owner="server"))
    assert sent == ["statement"]
    sent.clear()
    store.finish_run("r1", "completed", result="2", end='{"status": "completed"}')
    assert sent == ["statement"]
    monkeypatch.undo()
    record = store.run("r1")
    assert record is not None
    assert (record.status, record.result) == ("completed", "2")
    assert [(e.seq, e.kind) for e in store.events("r1")] == [(1, "end")]
    store.close()


async def test_the_record_a_completed_run_just_wrote_is_read_without_a_statement(
    postgres_url, monkeypatch
):
    """arun after afinish_run of a completed run answers from the end's own statement, once."""
    store = PostgresCheckpointStore(postgres_url, replica_id="a")
    now = time.time()
    await store.acreate_run(RunRecord("r1", "Flow", "running", now, now, owner="server"))
    await store.afinish_run("r1", "completed", result="2", end='{"status": "completed"}')
    fresh = store.run("r1")
    sent: list[str] = []
    execute = psycopg.Connection.execute

    def counted_execute(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if _counts(args, kwargs):
            sent.append("statement")
        return execute(self, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", counted_execute)
    assert await store.arun("r1") == fresh
    assert sent == []
    assert await store.arun("r1") == fresh  # read from the database the second time
    assert sent == ["statement"]
    store.close()
