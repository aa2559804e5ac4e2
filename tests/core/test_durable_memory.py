"""Bounded memory of durable runs, and snapshot dicts that are garbage."""

from __future__ import annotations

import asyncio
import logging

import pytest
from batonflow.core import (
    Context,
    ContextSerdeError,
    Event,
    InMemoryCheckpointStore,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowCheckpointer,
    step,
)
from batonflow.core.engine._stream import EventStream


class Note(Event):
    n: int


class Chatty(Workflow):
    @step
    async def talk(self, ctx: Context, ev: StartEvent) -> StopEvent:
        for n in range(int(ev.count)):
            ctx.write_event_to_stream(Note(n=n))
        return StopEvent(result="done")


async def test_an_unread_stream_keeps_only_its_newest_events(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Past the bound the oldest unread events are dropped, counted, and one warning says so."""
    stream = EventStream(asyncio.get_running_loop(), limit=3)
    with caplog.at_level(logging.WARNING, logger="batonflow.core"):
        for n in range(10):
            stream.put(n)
    assert stream.pending() == [7, 8, 9] and stream.dropped == 7
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "store.events(run_id)" in caplog.records[0].message


async def test_a_durable_run_keeps_every_event_in_its_log_when_nobody_reads() -> None:
    """The in-memory buffer drops, the store's event log keeps all, numbered once."""
    store = InMemoryCheckpointStore()
    cptr = WorkflowCheckpointer(Chatty(), store=store)
    handler = cptr.run(count=12_000)
    assert await handler == "done"
    assert handler._run.stream.dropped > 0
    seqs = [e.seq for e in store.events(handler.run_id)]
    assert seqs == list(range(1, 12_002))  # 12,000 notes and the StopEvent


async def test_the_checkpointer_keeps_nothing_per_finished_run() -> None:
    """After runs end, the checkpointer holds no per-run entries."""
    cptr = WorkflowCheckpointer(Chatty(), store=InMemoryCheckpointStore(max_finished=5))
    for _ in range(20):
        await cptr.run(count=1)
    assert (cptr._seq, cptr._live, cptr._inbox, cptr._released) == ({}, {}, {}, set())
    assert len(cptr.store.runs()) == 5


@pytest.mark.parametrize(
    "steps",
    [pytest.param([{}], id="dict"), pytest.param("abc", id="string"), pytest.param(3, id="int")],
)
async def test_garbage_step_names_in_a_snapshot_are_a_serde_error(steps: object) -> None:
    """``Context.from_dict`` with a bad 'steps' entry raises ContextSerdeError, not TypeError."""
    w = Chatty()
    handler = w.run(count=0)
    await handler
    data = handler.ctx.to_dict()
    data["steps"] = steps
    with pytest.raises(ContextSerdeError, match=r"'steps' is not a list of step names"):
        Context.from_dict(w, data)


class Tick(Event):
    i: int


class Big(Workflow):
    """500 keys set once, then steps that each change two of them."""

    @step
    async def fill(self, ctx: Context, ev: StartEvent) -> Tick:
        for k in range(500):
            await ctx.store.set(f"k{k}", k)
        return Tick(i=0)

    @step
    async def bump(self, ctx: Context, ev: Tick) -> Tick | StopEvent:
        async with ctx.store.edit_state() as state:
            state["count"] = state.get("count", 0) + 1
        await ctx.store.set("last", ev.i)
        if ev.i == 3:
            return StopEvent(result=[await ctx.store.get("count"), await ctx.store.get("k499")])
        return Tick(i=ev.i + 1)


async def test_a_checkpoint_writes_only_the_keys_its_step_changed(tmp_path) -> None:
    """After the first checkpoint a row holds the two keys its step changed; reading any
    checkpoint back gives the whole state, and continuing from one gives the same result."""
    import json
    import sqlite3

    from batonflow.core import SqliteCheckpointStore

    path = tmp_path / "runs.db"
    with SqliteCheckpointStore(path) as store:
        cptr = WorkflowCheckpointer(Big(), store=store)
        assert await cptr.run(run_id="big") == [4, 499]
        conn = sqlite3.connect(path)
        rows = conn.execute(
            "SELECT json_extract(ctx_data, '$.state.state_data._data') FROM checkpoints "
            "WHERE run_id = 'big' ORDER BY seq"
        ).fetchall()
        conn.close()
        written = [set(json.loads(r[0])) for r in rows]
        assert len(written[0]) == 500 and written[1:] == [{"count", "last"}] * 4
        listed = store.list("big")
        assert [len(c.ctx_data["state"]["state_data"]["_data"]) for c in listed] == [
            500,
            502,
            502,
            502,
            502,
        ]
        fresh = WorkflowCheckpointer(Big(), store=store)
        assert await fresh.run_from(checkpoint=listed[2]) == [4, 499]
