"""The run queue in every store: limits, priorities, keys, admission, cancelling, in-process."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from batonflow.core import (
    InMemoryCheckpointStore,
    QueueFullError,
    Retention,
    RunLimits,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowCheckpointer,
    step,
)
from batonflow.core.durable._queue import QueueEntry
from batonflow.core.durable._records import RunRecord
from batonflow.core.errors import DuplicateStartError, WorkflowCancelledByUser, WorkflowRuntimeError


class Slow(Workflow):
    """Holds a slot long enough for the limits to matter; records how many run at once."""

    running = 0
    most = 0

    @step
    async def work(self, ev: StartEvent) -> StopEvent:
        Slow.running += 1
        Slow.most = max(Slow.most, Slow.running)
        await asyncio.sleep(0.02)
        Slow.running -= 1
        return StopEvent(result=ev.get("n"))


def _queued(run_id: str, workflow: str = "wf", at: float | None = None) -> RunRecord:
    now = time.time() if at is None else at
    return RunRecord(run_id, workflow, "queued", now, now, start_event="{}")


def _live(store, workflow: str = "wf") -> int:
    return sum(1 for r in store.runs(workflow_name=workflow) if r.status in ("running", "waiting"))


def test_claims_never_exceed_concurrency_across_threads(store) -> None:
    """Stores claiming the same queue at once never run more than ``concurrency`` runs."""
    for i in range(40):
        store.enqueue(_queued(f"r{i:03}"), QueueEntry(), None)
    limits = RunLimits(concurrency=3)
    claimed: list[str] = []
    lock = threading.Lock()

    def claimer() -> None:
        for _ in range(20):
            got = store.claim_queued("wf", limits, 5)
            with lock:
                claimed.extend(r.run_id for r in got)
            assert _live(store) <= 3
            for r in got:
                store.finish_run(r.run_id, "completed")

    threads = [threading.Thread(target=claimer) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(claimed) == len(set(claimed))  # each run claimed once
    assert set(claimed) <= {f"r{i:03}" for i in range(40)}


def test_priority_then_age(store) -> None:
    """Higher priority leaves the queue first, then the oldest."""
    store.enqueue(_queued("old", at=1.0), QueueEntry(priority=0), None)
    store.enqueue(_queued("new", at=2.0), QueueEntry(priority=0), None)
    store.enqueue(_queued("urgent", at=3.0), QueueEntry(priority=5), None)
    order = [r.run_id for r in store.claim_queued("wf", RunLimits(concurrency=10), 10)]
    assert order == ["urgent", "old", "new"]


def test_key_concurrency(store) -> None:
    """At most ``key_concurrency`` runs of one key run; other keys pass it in the queue."""
    for i, tenant in enumerate(["a", "a", "a", "b"]):
        store.enqueue(_queued(f"r{i}", at=float(i + 1)), QueueEntry(key=tenant), None)
    limits = RunLimits(key_field="tenant", key_concurrency=1)
    first = [r.run_id for r in store.claim_queued("wf", limits, 10)]
    assert first == ["r0", "r3"]
    place = store.queue_place("r1", limits)
    assert place is not None and place.position == 1 and place.waiting_on == "key_concurrency"
    store.finish_run("r0", "completed")
    assert [r.run_id for r in store.claim_queued("wf", limits, 10)] == ["r1"]


def test_rate_limit(store) -> None:
    """At most ``rate`` runs leave the queue per period."""
    for i in range(5):
        store.enqueue(_queued(f"r{i}", at=float(i + 1)), QueueEntry(), None)
    limits = RunLimits(rate=2, per=3600)
    assert len(store.claim_queued("wf", limits, 10)) == 2
    assert store.claim_queued("wf", limits, 10) == []
    assert store.queue_place("r2", limits).waiting_on == "rate"


def test_max_queued_records_nothing(store) -> None:
    """A full queue refuses the start and records nothing."""
    store.enqueue(_queued("r1"), QueueEntry(), 1)
    with pytest.raises(QueueFullError, match="queue of workflow 'wf' is full"):
        store.enqueue(_queued("r2"), QueueEntry(), 1)
    assert store.run("r2") is None
    assert [r.run_id for r in store.runs()] == ["r1"]


def test_cancel_queued(store) -> None:
    """A queued run cancelled never leaves the queue; a running one is not cancelled so."""
    store.enqueue(_queued("r1"), QueueEntry(), None)
    store.enqueue(_queued("r2"), QueueEntry(), None)
    assert store.cancel_queued("r1", "cancelled while queued")
    assert store.run("r1").status == "cancelled"
    assert [r.run_id for r in store.claim_queued("wf", RunLimits(concurrency=5), 5)] == ["r2"]
    assert not store.cancel_queued("r2", "too late")
    assert store.run("r2").status == "running"


async def test_checkpointer_limits_in_process(store) -> None:
    """``WorkflowCheckpointer(limits=...)`` runs every run, never more than the limit at once."""
    Slow.running = Slow.most = 0
    cptr = WorkflowCheckpointer(Slow(), store, limits=RunLimits(concurrency=2))
    try:
        handlers = await asyncio.gather(*[cptr.astart(n=i) for i in range(8)])
        assert sorted([await h for h in handlers]) == list(range(8))
    finally:
        await cptr.close_queue()
    assert Slow.most == 2


async def test_checkpointer_queued_run_cancelled(store) -> None:
    """A queued run cancelled in-process never starts; its waiter gets the cancellation."""
    limits = RunLimits(concurrency=1, max_queued=5)
    cptr = WorkflowCheckpointer(Slow(), store, limits=limits)
    holder = cptr.enqueue(n=0, run_id="holder", priority=9)
    run_id = cptr.enqueue(n=1, run_id="blocked")
    # Another process holds the one slot (it claimed the first run and runs it).
    assert [r.run_id for r in store.claim_queued("Slow", limits, 1)] == [holder]
    try:
        waiter = asyncio.ensure_future(cptr.started(run_id))
        await asyncio.sleep(0.3)  # the dispatcher passes: nothing fits
        assert not waiter.done()
        assert cptr.queue_place(run_id).waiting_on == "concurrency"
        assert cptr.cancel_queued(run_id)
        with pytest.raises(WorkflowCancelledByUser):
            await waiter
    finally:
        await cptr.close_queue()
    assert store.run(run_id).status == "cancelled"
    assert store.latest(run_id) is None  # it never ran


async def test_checkpointer_idempotent_queued_start() -> None:
    """A queued start's idempotency key gets that run, not a second one."""
    cptr = WorkflowCheckpointer(
        Slow(), InMemoryCheckpointStore(), limits=RunLimits(max_queued=1, max_running=1)
    )
    run_id = cptr.enqueue(n=1, idempotency_key="k1")
    with pytest.raises(DuplicateStartError) as caught:
        cptr.enqueue(n=1, idempotency_key="k1")
    assert caught.value.run_id == run_id


def test_sync_start_with_limits_says_what_to_do() -> None:
    """``cptr.run()`` cannot start a queued run at once: the error says what to call."""
    cptr = WorkflowCheckpointer(Slow(), limits=RunLimits(concurrency=1))
    with pytest.raises(WorkflowRuntimeError, match=r"await cptr.astart"):
        cptr.run(n=1)


def test_bad_limits() -> None:
    """Limits that are not counts, or a key limit without its key, are refused clearly."""
    with pytest.raises(ValueError, match="concurrency=0 is not a count"):
        RunLimits(concurrency=0)
    with pytest.raises(ValueError, match="key_field='tenant'"):
        RunLimits(key_concurrency=1)


def test_claims_under_max_running_alone_give_each_run_once(store) -> None:
    """Without a store-wide limit (PostgreSQL's one-statement claim), racing claims never
    hand one run to two claimers, and take the highest priority first."""
    for i in range(60):
        store.enqueue(_queued(f"r{i:03}", at=float(i + 1)), QueueEntry(priority=i % 2), None)
    limits = RunLimits(max_running=4)
    first = store.claim_queued("wf", limits, 4)
    assert {r.run_id for r in first} == {"r001", "r003", "r005", "r007"}
    claimed: list[str] = [r.run_id for r in first]
    lock = threading.Lock()

    def claimer() -> None:
        for _ in range(30):
            got = store.claim_queued("wf", limits, 3)
            with lock:
                claimed.extend(r.run_id for r in got)

    threads = [threading.Thread(target=claimer) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(claimed) == [f"r{i:03}" for i in range(60)]
    assert all(store.run(run_id).status == "running" for run_id in claimed)


def test_retention_takes_a_cancelled_queued_run_with_its_place(store) -> None:
    """A queued run cancelled, then swept by retention, leaves nothing: its id queues again."""
    store.enqueue(_queued("gone"), QueueEntry(key="t"), None)
    assert store.cancel_queued("gone", "cancelled while queued")
    assert Retention("0s").sweep(store) == 1
    assert store.run("gone") is None
    store.enqueue(_queued("gone"), QueueEntry(), None)  # its run_queue row went too
    assert store.queue_place("gone", None).position == 1


def test_admission_wait_is_estimated_from_the_rate() -> None:
    """A full queue's wait: ``per / rate`` within 1 s and 60 s, else 1 s, else as set."""
    assert RunLimits(rate=1, per=10).admission_wait() == 10.0
    assert RunLimits(rate=100, per=60).admission_wait() == 1.0
    assert RunLimits(rate=1, per=86400).admission_wait() == 60.0
    assert RunLimits(concurrency=2).admission_wait() == 1.0
    assert RunLimits(rate=1, per=10, retry_after=0.5).admission_wait() == 0.5
    with pytest.raises(ValueError, match="retry_after=0"):
        RunLimits(retry_after=0)


def test_in_process_queue_full_error_carries_the_estimate() -> None:
    """``cptr.enqueue`` on a full queue raises QueueFullError with the estimated wait."""
    cptr = WorkflowCheckpointer(
        Slow(), InMemoryCheckpointStore(), limits=RunLimits(rate=1, per=20, max_queued=0)
    )
    with pytest.raises(QueueFullError) as refused:
        cptr.enqueue(n=1)
    assert refused.value.retry_after == 20.0


async def test_a_claimed_run_that_cannot_start_is_interrupted_and_its_waiter_told(store) -> None:
    """A queued run whose start event this code cannot rebuild: its record says why it did not
    start (``interrupted``, resumable by code that can) and ``started()`` raises, not hangs."""
    now = time.time()
    record = RunRecord("unreadable", "Slow", "queued", now, now, start_event="not an event")
    store.enqueue(record, QueueEntry(), None)
    cptr = WorkflowCheckpointer(Slow(), store, limits=RunLimits(concurrency=1))
    try:
        with pytest.raises(Exception) as caught:
            await asyncio.wait_for(cptr.started("unreadable"), 30)
        assert not isinstance(caught.value, TimeoutError)
    finally:
        await cptr.close_queue()
    after = store.run("unreadable")
    assert after.status == "interrupted"
    assert "could not start" in (after.error or "")
