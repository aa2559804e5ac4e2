"""``Workflow(checkpoint_store=...)``: durable runs without using the checkpointer class."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from batonflow.core import (
    Context,
    Event,
    InMemoryCheckpointStore,
    SqliteCheckpointStore,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowCheckpointer,
    WorkflowConfigurationError,
    step,
)
from batonflow.core.errors import CheckpointError


class Counted(Event):
    n: int


class Steps(Workflow):
    """Three steps; ``finish`` blocks on ``gate`` when one is set (a run 'dying' mid-step)."""

    def __init__(self, log: list[str], gate: asyncio.Event | None = None, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.log = log
        self.gate = gate

    @step
    async def begin(self, ctx: Context, ev: StartEvent) -> Counted:
        self.log.append("begin")
        await ctx.store.set("topic", ev.topic)
        return Counted(n=1)

    @step
    async def middle(self, ev: Counted) -> Counted | None:
        self.log.append("middle")
        return Counted(n=ev.n + 1) if ev.n < 2 else None

    @step
    async def finish(self, ctx: Context, ev: Counted) -> StopEvent | None:
        if ev.n < 2:
            return None
        self.log.append("finish")
        if self.gate is not None:
            await self.gate.wait()
        return StopEvent(result=f"{await ctx.store.get('topic')}:{ev.n}")


async def test_every_step_boundary_is_checkpointed(tmp_path: Path) -> None:
    """A plain ``w.run()`` records the run first, then one checkpoint per completed step."""
    with SqliteCheckpointStore(tmp_path / "runs.db") as store:
        w = Steps([], checkpoint_store=store)
        assert w.checkpoint_store is store
        handler = w.run(topic="t", run_id="job-1")
        assert await handler == "t:2"
        steps = [c.step_name for c in store.list("job-1")]
        assert sorted(steps) == sorted(["begin", "middle", "middle", "finish", "finish"])
        assert [c.seq for c in store.list("job-1")] == list(range(1, len(steps) + 1))
        record = store.run("job-1")
        assert record is not None and record.status == "completed"


async def test_resume_continues_a_dead_run_without_rerunning_completed_steps() -> None:
    """A run whose process 'died' (cancelled mid-step here) resumes from its latest checkpoint
    in a fresh workflow instance sharing the store; completed steps do not run again."""
    store = InMemoryCheckpointStore()
    log: list[str] = []
    gate = asyncio.Event()  # never set: `finish` hangs
    handler = Steps(log, gate, checkpoint_store=store).run(topic="x", run_id="r")
    while "finish" not in log:
        await asyncio.sleep(0)
    await handler.cancel_run()
    assert log == ["begin", "middle", "middle", "finish"]

    log2: list[str] = []
    resumed = Steps(log2, checkpoint_store=store).resume("r")
    assert resumed.run_id == "r"
    assert await resumed == "x:2"
    assert log2 == ["finish"]  # only the interrupted step ran again


async def test_resume_of_a_finished_run_returns_its_result() -> None:
    """Resuming a completed run hands its result back and runs nothing."""
    store = InMemoryCheckpointStore()
    log: list[str] = []
    w = Steps(log, checkpoint_store=store)
    first = w.run(topic="y")
    assert await first == "y:2"
    log.clear()
    assert await w.resume(first.run_id) == "y:2"
    assert log == []


async def test_restored_context_is_recorded_under_its_run_id() -> None:
    """``w.run(ctx=Context.from_dict(...))`` continues the run and keeps checkpointing it."""
    store = InMemoryCheckpointStore()
    log: list[str] = []
    w = Steps(log, checkpoint_store=store)
    done = w.run(topic="z", run_id="r2")
    assert await done == "z:2"
    after_begin = next(c for c in store.list("r2") if c.step_name == "begin")
    before = len(store.list("r2"))
    ctx = Context.from_dict(w, after_begin.ctx_data)
    store.delete("r2")  # as if only the snapshot survived
    again = w.run(ctx=ctx)
    assert again.run_id == "r2"
    assert await again == "z:2"
    steps = [c.step_name for c in store.list("r2")]
    assert steps[0] is None and "begin" not in steps and "finish" in steps
    assert len(steps) == before  # the restored snapshot stands in for "begin"


async def test_a_checkpointer_on_a_durable_workflow_records_its_runs_once() -> None:
    """A WorkflowCheckpointer around a workflow with its own store records into its store only."""
    own, other = InMemoryCheckpointStore(), InMemoryCheckpointStore()
    w = Steps([], checkpoint_store=own)
    cptr = WorkflowCheckpointer(workflow=w, store=other)
    handler = cptr.run(topic="c")
    assert await handler == "c:2"
    assert own.list(handler.run_id) == []
    assert len(other.list(handler.run_id)) == 5


async def test_resume_needs_a_checkpoint_store() -> None:
    """``resume()`` on a workflow created without a store says how to make it durable."""
    with pytest.raises(
        WorkflowConfigurationError,
        match=r"^Steps\.resume\(\) needs a checkpoint store; create the workflow with "
        r"checkpoint_store=SqliteCheckpointStore\(path\) \(or use a WorkflowCheckpointer\)\.$",
    ):
        Steps([]).resume("r")


async def test_resume_of_an_unknown_run() -> None:
    """A run id the store does not know is a CheckpointError."""
    with pytest.raises(CheckpointError, match=r"^No checkpoint for run 'nope'"):
        Steps([], checkpoint_store=InMemoryCheckpointStore()).resume("nope")


async def test_checkpoint_store_must_be_a_store() -> None:
    """Anything but a store, a path or a URL is refused when the workflow is created."""
    with pytest.raises(
        WorkflowConfigurationError,
        match=r"^checkpoint_store=42 is not a checkpoint store; pass a path or URL "
        r"\(runs\.db, postgresql://\.\.\.\), SqliteCheckpointStore\(path\)",
    ):
        Steps([], checkpoint_store=42)  # type: ignore[arg-type]


async def test_a_path_opens_a_sqlite_store(tmp_path) -> None:
    """checkpoint_store='file.db' opens (and creates) a SQLite store there."""
    from batonflow.core import SqliteCheckpointStore

    w = Steps([], checkpoint_store=str(tmp_path / "runs.db"))
    assert isinstance(w.checkpoint_store, SqliteCheckpointStore)
    assert (tmp_path / "runs.db").exists()
