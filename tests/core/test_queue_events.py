"""Events sent to a queued run (every store): kept in its inbox, delivered once it starts.

A run started and at once sent its input may still wait in the queue: the events are committed
to its inbox and given to it, in order, when a dispatcher starts it. An answer cannot apply to
a run that asked nothing yet (refused, saying so); a queued run cancelled never gets its events.
"""

from __future__ import annotations

import asyncio

import pytest
from batonflow.core import HumanResponseEvent, RunLimits, WorkflowCheckpointer
from batonflow.core.durable._store import OffLoopWrites
from batonflow.core.errors import RunConflictError
from loop_threads import on_a_loop
from push_flow import Push, PushFlow

LIMITS = RunLimits(concurrency=1)


async def test_events_sent_while_queued_are_delivered_in_order(store) -> None:
    """Three pushes to a run waiting in the queue reach it, in order, once it starts."""
    cptr = WorkflowCheckpointer(PushFlow(), store, limits=LIMITS)
    holder = cptr.enqueue(run_id="holder", priority=9)
    fed = cptr.enqueue(run_id="fed")
    # Another process holds the one slot: "fed" stays queued while it is sent its input.
    assert [r.run_id for r in store.claim_queued("PushFlow", LIMITS, 1)] == [holder]
    try:
        seqs = [cptr.send_event(fed, Push(item=item)) for item in "abc"]
        assert seqs == [1, 2, 3]
        assert store.run(fed).status == "queued"
        with pytest.raises(RunConflictError, match=r"is queued: it has not started.*'waiting'"):
            cptr.send_event(fed, HumanResponseEvent(response="yes"), answer=True)
        store.finish_run(holder, "completed")  # the slot frees: a dispatcher pass starts "fed"
        handler = await asyncio.wait_for(cptr.started(fed), 30)
        assert await asyncio.wait_for(handler, 30) == ["a", "b", "c"]
        with pytest.raises(RunConflictError, match="completed"):
            cptr.send_event(fed, Push(item="late"))
    finally:
        await cptr.close_queue()
    assert [item.seq for item in store.inbox(fed)] == [1, 2, 3]  # the refused answer: not kept


async def test_a_cancelled_queued_run_drops_its_events(store) -> None:
    """A queued run sent an event, then cancelled, never starts: the event goes nowhere."""
    cptr = WorkflowCheckpointer(PushFlow(), store, limits=LIMITS)
    holder = cptr.enqueue(run_id="holder", priority=9)
    fed = cptr.enqueue(run_id="fed")
    assert [r.run_id for r in store.claim_queued("PushFlow", LIMITS, 1)] == [holder]
    try:
        cptr.send_event(fed, Push(item="a"))
        assert cptr.cancel_queued(fed)
        with pytest.raises(RunConflictError, match="cancelled"):
            cptr.send_event(fed, Push(item="b"))
        store.finish_run(holder, "completed")
        await asyncio.sleep(0.5)  # a dispatcher pass or two: nothing is left to start
    finally:
        await cptr.close_queue()
    assert store.run(fed).status == "cancelled"
    assert store.latest(fed) is None  # no step ran


async def test_a_store_over_the_network_is_read_off_the_loop_when_a_queued_run_starts(
    store,
) -> None:
    """The inbox of a run taken out of the queue is read in a thread where the store writes off
    the loop (PostgreSQL): the dispatcher's loop does not wait for that round trip."""
    if not isinstance(store, OffLoopWrites):
        pytest.skip("a local store is read in place")
    reads: list[bool] = []
    real = store.inbox

    def watched(*args, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(on_a_loop())
        return real(*args, **kwargs)

    store.inbox = watched  # type: ignore[method-assign]
    cptr = WorkflowCheckpointer(PushFlow(), store, limits=LIMITS)
    holder = cptr.enqueue(run_id="holder", priority=9)
    fed = cptr.enqueue(run_id="fed")
    assert [r.run_id for r in store.claim_queued("PushFlow", LIMITS, 1)] == [holder]
    try:
        for item in "abc":
            cptr.send_event(fed, Push(item=item))
        store.finish_run(holder, "completed")
        handler = await asyncio.wait_for(cptr.started(fed), 30)
        assert await asyncio.wait_for(handler, 30) == ["a", "b", "c"]
    finally:
        await cptr.close_queue()
    assert reads and not any(reads)
