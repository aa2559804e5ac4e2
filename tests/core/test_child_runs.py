"""Child runs: ``await ctx.run_child(workflow, **fields)`` in and out of durable runs.

A durable parent's child is recorded with its parent before it starts, its result is
journaled in the parent, a re-run of the parent's step resumes an unfinished child (its
finished steps do not run again) and takes a finished child's result without running it.
The crashes here are a release and a resume in one process (the kill -9 trials are in
``test_child_kill.py``).
"""

from __future__ import annotations

import asyncio

import pytest
from batonflow.core import (
    ChildRunEvent,
    Context,
    Event,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowCancelledByUser,
    retry_policy,
    step,
    stop_after_attempt,
    wait_fixed,
)
from batonflow.core.checkpoints import WorkflowCheckpointer


class Half(Event):
    n: int


class Child(Workflow):
    """Two steps: ``first`` doubles ``n``, ``second`` waits for ``go`` and adds one."""

    def __init__(self, **kw) -> None:
        super().__init__(timeout=None, **kw)
        self.ran: list[str] = []
        self.go = asyncio.Event()
        self.go.set()
        self.seen: list = []

    @step
    async def first(self, ctx: Context, ev: StartEvent) -> Half:
        self.ran.append("first")
        self.seen.append(ctx.run_id)
        ctx.write_event_to_stream(Event(note="doubled"))
        return Half(n=int(ev.n) * 2)

    @step
    async def second(self, ctx: Context, ev: Half) -> StopEvent:
        self.ran.append("second")
        await self.go.wait()
        return StopEvent(result=ev.n + 1)


class Parent(Workflow):
    """One step that runs ``child`` with ``n=20``, then waits for ``go``."""

    def __init__(self, child: Child, **kw) -> None:
        super().__init__(timeout=None, **kw)
        self.child = child
        self.go = asyncio.Event()
        self.go.set()
        self.calls = 0

    @step
    async def delegate(self, ctx: Context, ev: StartEvent) -> StopEvent:
        self.calls += 1
        got = await ctx.run_child(self.child, n=20)
        await self.go.wait()
        return StopEvent(result={"child": got})


async def _until(check, what: str) -> None:
    async with asyncio.timeout(10):
        while not check():
            await asyncio.sleep(0.005)


async def test_without_a_store_the_child_runs_in_process_and_streams_tagged_events():
    """A run that is not durable runs its child in process; the child's events come tagged."""
    child = Child()
    handler = Parent(child).run()
    events = [ev async for ev in handler.stream_events()]
    assert await handler == {"child": 41}
    tagged = [ev for ev in events if isinstance(ev, ChildRunEvent)]
    assert [ev.event.note for ev in tagged] == ["doubled"]
    assert tagged[0].child_run_id == child.seen[0] != handler.run_id
    assert tagged[0].workflow_name == child.workflow_name


async def test_a_durable_child_is_recorded_with_its_parent_and_its_result_journaled(store):
    """The child's record names its parent and step; its result is a journaled call."""
    child = Child()
    cptr = WorkflowCheckpointer(Parent(child), store=store)
    handler = cptr.run()
    events = [ev async for ev in handler.stream_events()]
    assert await handler == {"child": 41}
    parent_id = str(handler.run_id)
    (record,) = store.children(parent_id)
    assert (record.parent_run_id, record.parent_step, record.parent_kind) == (
        parent_id,
        "delegate",
        "child",
    )
    assert record.status == "completed" and record.run_id == child.seen[0]
    assert [e.name for e in store.journal(parent_id)] == [f"child:{child.workflow_name}"]
    assert [ev.child_run_id for ev in events if isinstance(ev, ChildRunEvent)] == [record.run_id]
    assert [c.step_name for c in store.list(record.run_id) if c.step_name] == ["first", "second"]


async def test_the_child_is_recorded_before_its_first_step_runs(store):
    """Inside the child's first step, its record with the parent link is in the store."""
    seen = []

    class Looking(Child):
        @step
        async def first(self, ctx: Context, ev: StartEvent) -> Half:
            record = store.run(ctx.run_id)
            seen.append((record.parent_kind, record.status))
            return Half(n=int(ev.n))

    cptr = WorkflowCheckpointer(Parent(Looking()), store=store)
    assert await cptr.run() == {"child": 21}
    assert seen == [("child", "running")]


async def _stop(cptr: WorkflowCheckpointer, handler) -> str:
    """As a crash: the process lets go of the run (it stays ``running``), then it stops."""
    run_id = str(handler.run_id)
    cptr.release(run_id)
    await handler.cancel_run()
    cptr.detach()
    return run_id


async def test_a_finished_child_is_not_run_again_when_its_parent_resumes(store):
    """A re-run of the parent's step takes the journaled result: the child does not run."""
    child = Child()
    parent = Parent(child)
    parent.go.clear()
    cptr = WorkflowCheckpointer(parent, store=store)
    handler = cptr.run()
    await _until(lambda: len(store.journal(str(handler.run_id))) == 1, "the child's result")
    run_id = await _stop(cptr, handler)
    again = Parent(child)
    assert await WorkflowCheckpointer(again, store=store).resume(run_id) == {"child": 41}
    assert again.calls == 1 and child.ran == ["first", "second"]


async def test_an_unfinished_child_resumes_with_its_parent_without_rerunning_its_steps(store):
    """The child stopped in its second step: resumed with its parent, ``first`` stays done."""
    child = Child()
    child.go.clear()
    cptr = WorkflowCheckpointer(Parent(child), store=store)
    handler = cptr.run()
    await _until(lambda: child.ran == ["first", "second"], "the child's second step")
    run_id = await _stop(cptr, handler)
    (record,) = store.children(run_id)
    assert record.status == "running"  # released with its parent, not cancelled
    child.go.set()
    resumed = WorkflowCheckpointer(Parent(child), store=store).resume(run_id)
    assert await resumed == {"child": 41}
    assert child.ran == ["first", "second", "second"]
    assert [r.run_id for r in store.children(run_id)] == [record.run_id]
    assert store.run(record.run_id).status == "completed"


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "in-process"])
async def test_cancelling_the_parent_cancels_its_child(store, durable):
    """The parent's cancel reaches the child run, which ends cancelled."""
    child = Child()
    child.go.clear()
    parent = Parent(child)
    handler = WorkflowCheckpointer(parent, store=store).run() if durable else parent.run()
    await _until(lambda: child.ran == ["first", "second"], "the child's second step")
    await handler.cancel_run()
    with pytest.raises(WorkflowCancelledByUser):
        await handler
    if durable:
        (record,) = store.children(str(handler.run_id))
        await _until(lambda: store.run(record.run_id).status == "cancelled", "the child's end")


async def test_a_child_that_fails_fails_the_parent_step_and_is_not_run_again(store):
    """The child's exception reaches the step; it is journaled like a result."""

    class Failing(Child):
        @step
        async def first(self, ctx: Context, ev: StartEvent) -> Half:
            self.ran.append("first")
            raise ValueError("no half for you")

    child = Failing()
    cptr = WorkflowCheckpointer(Parent(child), store=store)
    handler = cptr.run()
    with pytest.raises(ValueError, match="no half for you"):
        await handler
    (entry,) = store.journal(str(handler.run_id))
    assert entry.error and child.ran == ["first"]


async def test_a_workflow_class_is_refused_with_what_to_pass():
    """Passing the class instead of an instance names the fix."""

    class Wrong(Workflow):
        @step
        async def go(self, ctx: Context, ev: StartEvent) -> StopEvent:
            return StopEvent(result=await ctx.run_child(Child, n=1))

    with pytest.raises(TypeError, match=r"takes a workflow instance, got the class Child"):
        await Wrong().run()


async def test_a_fork_is_recorded_as_a_fork(store):
    """A fork's record says ``parent_kind="fork"``, a child's ``"child"``."""
    cptr = WorkflowCheckpointer(Parent(Child()), store=store)
    handler = cptr.run()
    await handler
    forked = cptr.fork(str(handler.run_id))
    await forked
    record = store.run(str(forked.run_id))
    assert (record.parent_kind, record.parent_step) == ("fork", None)


async def test_a_grandchilds_events_come_wrapped_twice(store):
    """A child's child: its event reaches the top run inside two ChildRunEvents."""

    class Top(Workflow):
        @step
        async def top(self, ctx: Context, ev: StartEvent) -> StopEvent:
            return StopEvent(result=await ctx.run_child(Parent(Child())))

    handler = WorkflowCheckpointer(Top(timeout=None), store=store).run()
    events = [ev async for ev in handler.stream_events()]
    assert await handler == {"child": 41}
    (outer,) = [ev for ev in events if isinstance(ev, ChildRunEvent)]
    assert outer.event_type == "ChildRunEvent" and outer.event.event.note == "doubled"
    (middle,) = store.children(str(handler.run_id))
    (inner,) = store.children(middle.run_id)
    assert (outer.child_run_id, outer.event.child_run_id) == (middle.run_id, inner.run_id)


async def test_two_children_of_a_step_and_a_retry_each_get_their_own_run(store):
    """Two run_child calls in a step are two child runs; a retry of the step after a child
    failed runs a new child, while the child that completed keeps its journaled result."""

    class Flaky(Child):
        failures = 1

        @step
        async def first(self, ctx: Context, ev: StartEvent) -> Half:
            self.ran.append("first")
            if int(ev.n) == 2 and self.failures:
                self.failures -= 1
                raise ValueError("flaky")
            return Half(n=int(ev.n))

    child = Flaky()

    class Twice(Workflow):
        @step(retry_policy=retry_policy(wait=wait_fixed(0), stop=stop_after_attempt(2)))
        async def both(self, ctx: Context, ev: StartEvent) -> StopEvent:
            a = await ctx.run_child(child, n=1)
            b = await ctx.run_child(child, n=2)
            return StopEvent(result=[a, b])

    handler = WorkflowCheckpointer(Twice(timeout=None), store=store).run()
    assert await handler == [2, 3]
    kids = store.children(str(handler.run_id))
    assert sorted(r.status for r in kids) == ["completed", "completed", "failed"]
    assert child.ran.count("first") == 3  # n=1 once (replayed on the retry), n=2 twice
