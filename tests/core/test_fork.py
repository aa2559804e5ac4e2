"""Forks (time travel) through WorkflowCheckpointer.fork, on every backend.

A fork continues a run from any of its checkpoints as a new run: the steps before the fork
point never run again (counted by the side effects the steps note), the state may be changed
and another event made pending, and the new run's record names its parent and fork point.
"""

from __future__ import annotations

import pytest
from batonflow.core import (
    CheckpointError,
    Context,
    Event,
    InMemoryCheckpointStore,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowCheckpointer,
    step,
)
from batonflow.core.errors import StateValidationError
from batonflow.core.stores import open_store
from pydantic import BaseModel


class Drafted(Event):
    """The first step's output."""

    words: int


class Reviewed(Event):
    """The second step's output."""

    verdict: str


class Essay(Workflow):
    """draft -> review -> publish; every step notes that it ran in ``self.ran``."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.ran: list[str] = []

    @step
    async def draft(self, ctx: Context, ev: StartEvent) -> Drafted:
        self.ran.append("draft")
        await ctx.store.set("tone", "dry")
        return Drafted(words=100)

    @step
    async def review(self, ctx: Context, ev: Drafted) -> Reviewed:
        self.ran.append("review")
        return Reviewed(verdict=f"{ev.words} words, {await ctx.store.get('tone')}")

    @step
    async def publish(self, ctx: Context, ev: Reviewed) -> StopEvent:
        self.ran.append("publish")
        return StopEvent(result=ev.verdict)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request, tmp_path):
    """A fresh store of each backend."""
    if request.param == "memory":
        s = InMemoryCheckpointStore()
    elif request.param == "sqlite":
        s = open_store(tmp_path / "runs.db")
    else:
        s = open_store(request.getfixturevalue("postgres_url"))
    yield s
    s.close()


async def _finished_run(store) -> tuple[WorkflowCheckpointer, Essay, str]:
    flow = Essay()
    cptr = WorkflowCheckpointer(flow, store=store)
    handler = cptr.run()
    assert await handler == "100 words, dry"
    flow.ran.clear()
    return cptr, flow, str(handler.run_id)


def _seq_after(store, run_id: str, step_name: str) -> int:
    return next(c.seq for c in store.list(run_id) if c.step_name == step_name)


async def test_a_fork_runs_only_the_steps_after_its_checkpoint(store):
    """Forking at draft's checkpoint runs review and publish, not draft; the new run names its
    parent and fork point, and the parent lists it as a child."""
    cptr, flow, parent = await _finished_run(store)
    at = _seq_after(store, parent, "draft")
    fork = cptr.fork(parent, at=at)
    assert await fork == "100 words, dry"
    assert flow.ran == ["review", "publish"]
    record = store.run(fork.run_id)
    assert (record.parent_run_id, record.parent_seq) == (parent, at)
    assert record.workflow_name == "Essay" and record.status == "completed"
    assert [r.run_id for r in store.children(parent)] == [fork.run_id]
    assert store.run(parent).status == "completed"  # the parent is left as it was


async def test_a_fork_with_its_state_changed(store):
    """state= sets paths before the fork goes on: the steps after the fork point see them."""
    cptr, flow, parent = await _finished_run(store)
    fork = cptr.fork(parent, at=_seq_after(store, parent, "draft"), state={"tone": "warm"})
    assert await fork == "100 words, warm"
    assert flow.ran == ["review", "publish"]
    assert await cptr.fork(parent, at=_seq_after(store, parent, "review")) == "100 words, dry"


async def test_a_fork_with_another_pending_event(store):
    """event= replaces the events queued at the checkpoint: review runs on the new draft."""
    cptr, flow, parent = await _finished_run(store)
    fork = cptr.fork(parent, at=_seq_after(store, parent, "draft"), event=Drafted(words=7))
    assert await fork == "7 words, dry"
    assert flow.ran == ["review", "publish"]
    # Even from the checkpoint where the run ended, a new event goes on from there.
    last = store.latest(parent).seq
    assert await cptr.fork(parent, at=last, event=Reviewed(verdict="redo")) == "redo"


async def test_a_fork_of_a_fork(store):
    """A fork's own checkpoints can be forked: lineage is a tree."""
    cptr, flow, parent = await _finished_run(store)
    child = cptr.fork(parent, at=_seq_after(store, parent, "draft"), state={"tone": "odd"})
    await child
    grandchild = cptr.fork(child.run_id, at=_seq_after(store, child.run_id, "review"))
    assert await grandchild == "100 words, odd"
    assert store.run(grandchild.run_id).parent_run_id == child.run_id
    assert [r.run_id for r in store.children(child.run_id)] == [grandchild.run_id]


async def test_a_fork_at_a_checkpoint_that_is_not_there_names_those_that_are(store):
    """A wrong seq, or a run without checkpoints, is a CheckpointError with the fix."""
    cptr, _, parent = await _finished_run(store)
    seqs = ", ".join(str(c.seq) for c in store.list(parent))
    with pytest.raises(CheckpointError, match=rf"has no checkpoint 99; its checkpoints are {seqs}"):
        cptr.fork(parent, at=99)
    with pytest.raises(CheckpointError, match=r"'nope' has no checkpoint .* to fork from"):
        cptr.fork("nope")


class Typed(BaseModel):
    """A typed state."""

    count: int = 0


class Counting(Workflow):
    """Counts once per step."""

    @step
    async def first(self, ctx: Context[Typed], ev: StartEvent) -> Drafted:
        await ctx.store.set("count", 1)
        return Drafted(words=1)

    @step
    async def second(self, ctx: Context[Typed], ev: Drafted) -> StopEvent:
        return StopEvent(result=await ctx.store.get("count"))


async def test_a_typed_state_value_that_does_not_fit_is_refused_before_anything_runs():
    """A fork's state is validated as ctx.store.set would; a refused fork records nothing."""
    cptr = WorkflowCheckpointer(Counting())
    handler = cptr.run()
    assert await handler == 1
    at = cptr.store.list(handler.run_id)[0].seq
    with pytest.raises(StateValidationError):
        cptr.fork(handler.run_id, at=at, state={"count": "many"})
    assert len(cptr.store.runs()) == 1
    assert await cptr.fork(handler.run_id, at=at, state={"count": 5}) == 5
