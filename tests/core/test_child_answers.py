"""Answers to child runs: a person's answer sent to the parent reaches the child that waits.

The rule is in ``core/durable/_child_answers.py``: an event the parent neither waits for nor
takes goes to the one child run that waits for it, into the child's inbox (once); several
waiting children refuse it, naming them; the child's own run id always works.
"""

from __future__ import annotations

import asyncio

import pytest
from batonflow.core import ChildRunEvent, HumanResponseEvent, InputRequiredEvent
from batonflow.core.checkpoints import WorkflowCheckpointer
from batonflow.core.errors import RunConflictError, WorkflowRuntimeError
from child_questions import Desk, Nest, Pair, Release


async def _asked(handler, count: int = 1) -> list[str]:
    """The child run ids of the first ``count`` questions in ``handler``'s stream."""
    asked: list[str] = []
    async for ev in handler.stream_events():
        if isinstance(ev, ChildRunEvent) and isinstance(ev.event, InputRequiredEvent):
            asked.append(ev.child_run_id)
            if len(asked) == count:
                return asked
    raise AssertionError(f"the run ended after {len(asked)} question(s)")


async def _recorded_waiting(store, run_id: str) -> None:
    """Wait until the store says run ``run_id`` waits (its question is written)."""
    async with asyncio.timeout(10):
        while (record := store.run(run_id)) is None or record.status != "waiting":
            await asyncio.sleep(0.01)


async def test_ctx_send_event_on_the_parent_answers_its_in_process_child():
    """Without a store, ``handler.ctx.send_event`` on the parent reaches the waiting child."""
    handler = Release().run(topic="tides")
    await _asked(handler)
    handler.ctx.send_event(HumanResponseEvent(response="yes"))
    assert await asyncio.wait_for(handler, 10) == "tides: yes"


async def test_ctx_send_event_on_a_durable_parent_goes_to_the_childs_inbox(store):
    """A durable child takes the parent's ``ctx.send_event`` through its inbox, once."""
    cptr = WorkflowCheckpointer(Release(), store=store)
    handler = cptr.run(topic="tides")
    (child,) = await _asked(handler)
    await _recorded_waiting(store, child)
    handler.ctx.send_event(HumanResponseEvent(response="yes"))
    assert await asyncio.wait_for(handler, 10) == "tides: yes"
    assert [item.key for item in store.inbox(child)] == ["answer:1"]
    assert store.inbox(handler.run_id) == []


async def test_cptr_send_event_to_the_parent_answers_the_child_once(store):
    """``cptr.send_event(parent, answer=True)`` commits to the child's inbox; a second answer
    is refused as for a plain run."""
    cptr = WorkflowCheckpointer(Release(), store=store)
    handler = cptr.run(topic="tides")
    (child,) = await _asked(handler)
    await _recorded_waiting(store, child)
    cptr.send_event(handler.run_id, HumanResponseEvent(response="yes"), answer=True)
    with pytest.raises(RunConflictError, match="not waiting for an answer"):
        cptr.send_event(handler.run_id, HumanResponseEvent(response="no"), answer=True)
    assert await asyncio.wait_for(handler, 10) == "tides: yes"
    assert len(store.inbox(child)) == 1


async def test_an_answer_to_the_childs_run_id_reaches_it(store):
    """The child's own run id takes its answer through the parent's checkpointer."""
    cptr = WorkflowCheckpointer(Release(), store=store)
    handler = cptr.run(topic="tides")
    (child,) = await _asked(handler)
    await _recorded_waiting(store, child)
    cptr.send_event(child, HumanResponseEvent(response="sure"), answer=True)
    assert await asyncio.wait_for(handler, 10) == "tides: sure"


async def test_two_waiting_children_refuse_an_answer_to_the_parent_and_name_them(store):
    """With two children waiting, an answer to the parent is refused (nothing stored) and
    names both; each answered by its own run id goes on."""
    cptr = WorkflowCheckpointer(Pair(), store=store)
    handler = cptr.run()
    children = await _asked(handler, 2)
    for child in children:
        await _recorded_waiting(store, child)
    with pytest.raises(RunConflictError, match=f"2 of its child runs do: {children[0]}|"):
        cptr.send_event(handler.run_id, HumanResponseEvent(response="yes"), answer=True)
    with pytest.raises(WorkflowRuntimeError, match="2 child runs of this run wait"):
        handler.ctx.send_event(HumanResponseEvent(response="yes"))
    assert [store.inbox(c) for c in children] == [[], []]
    for child, word in zip(children, ["one", "two"], strict=True):
        cptr.send_event(child, HumanResponseEvent(response=word), answer=True)
    assert await asyncio.wait_for(handler, 10) in ("left: one, right: two", "left: two, right: one")
    assert [store.run(c).status for c in children] == ["completed", "completed"]


async def test_an_answer_while_no_process_runs_the_child_waits_in_its_inbox(store):
    """Answered while the parent and child are released (a server stopped), the answer is in
    the child's inbox; resuming the parent resumes the child, which takes it."""
    if type(store).__name__ == "InMemoryCheckpointStore":
        pytest.skip("a released run resumes from a store that outlives the process")
    cptr = WorkflowCheckpointer(Release(), store=store)
    handler = cptr.run(topic="tides")
    (child,) = await _asked(handler)
    await _recorded_waiting(store, child)
    cptr.release(handler.run_id)  # as a server that stops: the run stays in the store
    await handler.cancel_run()
    cptr.detach()
    assert store.run(child).status == "waiting"
    other = WorkflowCheckpointer(Release(), store=store)
    other.send_event(handler.run_id, HumanResponseEvent(response="later"), answer=True)
    assert [i.key for i in store.inbox(child)] == ["answer:1"]
    resumed = other.resume(handler.run_id)
    assert await asyncio.wait_for(resumed, 10) == "tides: later"


@pytest.mark.parametrize("how", ["cptr", "ctx"])
async def test_an_answer_to_the_grandparent_reaches_the_grandchild(store, how):
    """Two levels down: the answer sent to the top run reaches the asking grandchild."""
    cptr = WorkflowCheckpointer(Nest(), store=store)
    handler = cptr.run(topic="tides")
    async for ev in handler.stream_events():
        if isinstance(ev, ChildRunEvent) and isinstance(ev.event, ChildRunEvent):
            grandchild = ev.event.child_run_id
            break
    await _recorded_waiting(store, grandchild)
    if how == "cptr":
        cptr.send_event(handler.run_id, HumanResponseEvent(response="deep"), answer=True)
    else:
        handler.ctx.send_event(HumanResponseEvent(response="deep"))
    assert await asyncio.wait_for(handler, 10) == "tides: deep"
    assert [item.key for item in store.inbox(grandchild)] == ["answer:1"]


@pytest.mark.parametrize("how", ["cptr", "ctx"])
async def test_the_values_a_childs_wait_requires_pick_the_child(store, how):
    """Two children wait for HumanResponseEvent with tool a and b: the answer's tool picks."""
    cptr = WorkflowCheckpointer(Desk(), store=store)
    handler = cptr.run()
    for child in await _asked(handler, 2):
        await _recorded_waiting(store, child)
    for tool in ("b", "a"):
        answer = HumanResponseEvent(response=f"go {tool}", tool=tool)
        if how == "cptr":
            cptr.send_event(handler.run_id, answer, answer=True)
        else:
            handler.ctx.send_event(answer)
    assert await asyncio.wait_for(handler, 10) == "a: go a, b: go b"


async def test_waiting_child_ids_reads_one_level_of_all_runs_at_once(store):
    """Several running parents (one's asking child two levels down): their waiting children,
    the same as ``waiting_children`` finds run by run, with one ``children_of`` per level."""
    from batonflow.core.durable._child_answers import waiting_child_ids, waiting_children

    started = {
        flow: WorkflowCheckpointer(flow(), store=store).run(topic="tides")
        for flow in (Nest, Release, Pair)
    }
    ids = {flow: str(h.run_id) for flow, h in started.items()}
    async with asyncio.timeout(10):
        for flow, count in ((Nest, 1), (Release, 1), (Pair, 2)):
            while len(waiting_children(store, ids[flow])) < count:
                await asyncio.sleep(0.01)

    class Counted:
        """The store, counting its ``children_of`` reads."""

        reads: list[list[str]] = []

        def children_of(self, run_ids):
            self.reads.append(list(run_ids))
            return store.children_of(run_ids)

    found = waiting_child_ids(Counted(), list(ids.values()))
    assert found == {
        run_id: [c.record.run_id for c in waiting_children(store, run_id)]
        for run_id in ids.values()
    }
    (grandchild,) = found[ids[Nest]]
    assert store.run(grandchild).workflow_name == "Approve"
    assert len(Counted.reads) == 2  # the children, then the Nest child's children
    assert {c.run_id for c in store.children_of(ids.values())} == {
        c.run_id for run_id in ids.values() for c in store.children(run_id)
    }
    for handler in started.values():
        await handler.cancel_run()
