"""A durable run on a disk that really fills up (a tmpfs, or ``RLIMIT_FSIZE``: tests/full_disk.py).

The checkpoint a step cannot write stops the run with the store's clear error; what was
committed before stays intact; once there is space again, the run resumes from its last
checkpoint and finishes without running a completed step again.
"""

from __future__ import annotations

import asyncio

import pytest
from batonflow.core import (
    Context,
    Event,
    SqliteCheckpointStore,
    StartEvent,
    StopEvent,
    StoreFullError,
    Workflow,
    WorkflowCheckpointer,
    step,
)
from full_disk import Disk


class Half(Event):
    words: str


class Filling(Workflow):
    """Two steps; the second waits at a gate (the test fills the disk meanwhile)."""

    def __init__(self, gate: asyncio.Event, **kwargs: object) -> None:
        super().__init__(timeout=None, **kwargs)  # type: ignore[arg-type]
        self.gate = gate
        self.runs = {"first": 0, "second": 0}

    @step
    async def first(self, ctx: Context, ev: StartEvent) -> Half:
        self.runs["first"] += 1
        await ctx.store.set("first", "done")
        return Half(words="a checkpoint " * 2000)

    @step
    async def second(self, ctx: Context, ev: Half) -> StopEvent:
        self.runs["second"] += 1
        await self.gate.wait()
        # A big state value: its checkpoint needs pages the full disk cannot give.
        await ctx.store.set("second", ev.words * 4)
        return StopEvent(result=f"{await ctx.store.get('first')}, {len(ev.words)}")


async def test_a_full_disk_stops_the_run_clearly_and_it_resumes_once_space_is_back(
    full_disk: Disk,
) -> None:
    """The step whose checkpoint cannot be written fails the run with StoreFullError and the
    run is recorded interrupted or left running; after freeing space it resumes from the first
    step's checkpoint: the first step does not run again and the result is the right one."""
    db = full_disk.path / "runs.db"
    gate = asyncio.Event()
    flow = Filling(gate)
    with SqliteCheckpointStore(db) as store:
        cptr = WorkflowCheckpointer(flow, store=store)
        handler = cptr.run(run_id="r1")
        while not [c for c in store.list("r1") if c.step_name == "first"]:
            await asyncio.sleep(0.005)
        full_disk.fill()
        gate.set()
        fix = "Free space" if full_disk.mechanism == "tmpfs" else "file-size limit"
        with pytest.raises(StoreFullError, match=fix):
            await handler
        committed = [c.step_name for c in store.list("r1")]
        full_disk.free()
        assert "first" in committed and "second" not in committed
        assert store.run("r1").status in ("interrupted", "running")  # type: ignore[union-attr]
        assert store.latest("r1").ctx_data["state"] is not None  # type: ignore[union-attr]

        resumed = await cptr.resume("r1")

        assert resumed == f"done, {len('a checkpoint ' * 2000)}"
        assert flow.runs == {"first": 1, "second": 2}
        assert store.run("r1").status == "completed"  # type: ignore[union-attr]


async def test_a_run_started_on_a_full_disk_is_refused_and_nothing_runs(
    full_disk: Disk,
) -> None:
    """Recording a new run on a full disk raises StoreFullError before any step runs."""
    db = full_disk.path / "runs.db"
    gate = asyncio.Event()
    gate.set()
    flow = Filling(gate)
    with SqliteCheckpointStore(db) as store:
        cptr = WorkflowCheckpointer(flow, store=store)
        full_disk.fill()
        with pytest.raises(StoreFullError):
            await cptr.run(run_id="r2", pad="x" * 50_000)
        full_disk.free()
        assert flow.runs == {"first": 0, "second": 0}
        assert store.run("r2") is None
        assert await cptr.run(run_id="r3") == f"done, {len('a checkpoint ' * 2000)}"
