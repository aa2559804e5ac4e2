"""What a checkpoint's payload holds: every event encoded once, the final StopEvent too.

The step that ends a run leaves its StopEvent in the snapshot (``ctx_data["stop_event"]``);
the checkpoint's ``final_event`` is that same text, not a second encoding, and a SQL store
writes it once. Rows of older versions (which hold both copies) read and resume the same.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections import Counter
from typing import Any

import pytest
from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
from batonflow.core.checkpoints import InMemoryCheckpointStore, WorkflowCheckpointer
from batonflow.core.durable._records import Checkpoint, RunRecord
from batonflow.core.serialization import BaseSerializer, JsonSerializer
from batonflow.core.stores import open_store

MARK = "the-final-answer-8d1f"


class Fanned(Event):
    x: int


class Part(Event):
    y: int


class FanFlow(Workflow):
    """One event goes to two steps; their results are collected; the run ends with MARK."""

    @step
    async def start(self, ctx: Context, ev: StartEvent) -> Fanned:
        await ctx.store.set("seen", 1)
        return Fanned(x=7)

    @step
    async def left(self, ev: Fanned) -> Part:
        return Part(y=ev.x)

    @step
    async def right(self, ev: Fanned) -> Part:
        return Part(y=ev.x + 1)

    @step
    async def gather(self, ctx: Context, ev: Part) -> StopEvent | None:
        got = ctx.collect_events(ev, [Part, Part])
        if got is None:
            return None
        return StopEvent(result={"mark": MARK, "sum": sum(p.y for p in got)})


class CountingSerializer(BaseSerializer):
    """JSON, counting how many times each class of value is encoded."""

    def __init__(self) -> None:
        self.inner = JsonSerializer()
        self.calls: Counter[str] = Counter()

    def serialize(self, value: Any) -> str:
        self.calls[type(value).__name__] += 1
        return self.inner.serialize(value)

    def deserialize(self, value: str) -> Any:
        return self.inner.deserialize(value)


@pytest.fixture(params=["sqlite", "postgres"])
def where(request, tmp_path) -> str:
    """Where a durable store lives: a SQLite file or a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    return str(request.getfixturevalue("postgres_url"))


def _raw_rows(where: str, run_id: str) -> list[tuple[int, str, str | None]]:
    """The checkpoint rows of a run as written: (seq, ctx_data text, final_event column)."""
    query = "SELECT seq, ctx_data, final_event FROM checkpoints WHERE run_id = {} ORDER BY seq"
    if "://" not in where:
        with sqlite3.connect(where) as conn:
            return list(conn.execute(query.format("?"), (run_id,)))
    import psycopg

    with psycopg.connect(where, autocommit=True) as conn:
        return list(conn.execute(query.format("%s"), (run_id,)))


def _to_old_format(where: str, run_id: str) -> None:
    """Rewrite the run's rows as versions before this one wrote them: the StopEvent twice."""
    for seq, ctx, final in _raw_rows(where, run_id):
        import json

        held = json.loads(ctx).get("stop_event")
        if held is None or final is not None:
            continue
        update = "UPDATE checkpoints SET final_event = {0} WHERE run_id = {0} AND seq = {0}"
        if "://" not in where:
            with sqlite3.connect(where) as conn:
                conn.execute(update.format("?"), (held, run_id, seq))
        else:
            import psycopg

            with psycopg.connect(where, autocommit=True) as conn:
                conn.execute(update.format("%s"), (held, run_id, seq))


async def _run(where: str) -> tuple[str, Any]:
    store = open_store(where)
    try:
        handler = WorkflowCheckpointer(FanFlow(), store=store).run()
        return str(handler.run_id), await handler
    finally:
        store.close()


async def _resume(where: str, run_id: str) -> Any:
    store = open_store(where)
    try:
        return await WorkflowCheckpointer(FanFlow(), store=store).resume(run_id)
    finally:
        store.close()


async def test_the_last_checkpoint_holds_the_stop_event_once(where) -> None:
    """The ended run's last row carries the StopEvent's encoding once, and reads it back."""
    run_id, result = await _run(where)
    assert result == {"mark": MARK, "sum": 15}
    rows = _raw_rows(where, run_id)
    seq, ctx, final = rows[-1]
    assert (ctx + (final or "")).count(MARK) == 1
    assert all(MARK not in ctx for _, ctx, _ in rows[:-1])
    store = open_store(where)
    try:
        last = store.latest(run_id)
        assert last is not None and last.seq == seq
        assert last.final_event is not None and MARK in last.final_event
        assert last.final_event == last.ctx_data["stop_event"]
        assert [c.final_event for c in store.list(run_id)][:-1] == [None] * (len(rows) - 1)
    finally:
        store.close()
    assert await _resume(where, run_id) == result  # an ended run gives its result again


async def test_an_old_row_with_two_copies_still_loads_and_resumes(where) -> None:
    """Rows written before (the StopEvent in ctx_data and in final_event) read the same."""
    run_id, result = await _run(where)
    store = open_store(where)
    try:
        new = store.latest(run_id)
    finally:
        store.close()
    _to_old_format(where, run_id)
    _, ctx, final = _raw_rows(where, run_id)[-1]
    assert (ctx + (final or "")).count(MARK) == 2  # really the old layout
    store = open_store(where)
    try:
        old = store.latest(run_id)
        assert old == new  # the same Checkpoint, final_event included
        handler = WorkflowCheckpointer(FanFlow(), store=store).run_from(checkpoint=old)
        assert await handler == result
    finally:
        store.close()
    assert await _resume(where, run_id) == result


@pytest.mark.parametrize(
    ("final", "stop"),
    [("F", None), (None, "S"), ("F", "S"), (None, None), ("S", "S")],
    ids=["final-only", "snapshot-only", "different", "neither", "same"],
)
def test_a_hand_built_checkpoint_comes_back_as_it_was_put(where, final, stop) -> None:
    """Whatever the final_event and the snapshot's stop_event, a store returns both as given."""
    store = open_store(where)
    run_id = uuid.uuid4().hex
    try:
        now = time.time()
        store.create_run(RunRecord(run_id, "Flow", "running", now, now))
        checkpoint = Checkpoint(
            id=f"{run_id}:1",
            run_id=run_id,
            workflow_name="Flow",
            step_name="s",
            input_event_type="m:In",
            output_event_types=(),
            created_at=now,
            ctx_data={"queue": [], "stop_event": stop},
            seq=1,
            final_event=final,
        )
        store.put(checkpoint)
        got = store.latest(run_id)
        assert got is not None
        assert (got.final_event, got.ctx_data["stop_event"]) == (final, stop)
    finally:
        store.close()


async def test_each_event_is_encoded_once_per_checkpoint() -> None:
    """An event queued for two steps, and the final StopEvent, are encoded once each."""
    ser = CountingSerializer()
    store = InMemoryCheckpointStore()
    cptr = WorkflowCheckpointer(FanFlow(), store=store, serializer=ser)
    handler = cptr.run()
    assert (await handler)["sum"] == 15
    checkpoints = store.list(handler.run_id)
    assert [item["step"] for item in checkpoints[0].ctx_data["queue"]] == ["left", "right"]
    holding = [
        c for c in checkpoints if "Fanned" in str(c.ctx_data["queue"] + c.ctx_data["in_progress"])
    ]
    # Fanned: one encoding per checkpoint that holds it (the first one queues it twice). The
    # StopEvent: one, for the last checkpoint's snapshot and its final_event.
    assert ser.calls["Fanned"] == len(holding)
    assert ser.calls["StopEvent"] == 1
    assert checkpoints[-1].final_event is checkpoints[-1].ctx_data["stop_event"]
