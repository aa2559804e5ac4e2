"""Retention: ended runs past their period are deleted with everything they hold; nothing else.

Against every backend (in memory, SQLite, PostgreSQL), through real durable runs.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from batonflow.core import (
    Context,
    HumanResponseEvent,
    InputRequiredEvent,
    Retention,
    StartEvent,
    StopEvent,
    Workflow,
    step,
)
from batonflow.core.checkpoints import WorkflowCheckpointer
from batonflow.core.retention import parse_duration


class Done(Workflow):
    @step
    async def only(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=ev.get("n"))


class Report(Done):
    """The same, under another name, to be kept longer."""


class Broken(Workflow):
    @step
    async def only(self, ev: StartEvent) -> StopEvent:
        raise RuntimeError("broken")


class Journals(Workflow):
    """Journals one call (a run_journal row)."""

    @step
    async def only(self, ev: StartEvent, ctx: Context) -> StopEvent:
        return StopEvent(result=await ctx.journal("double", lambda n: 2 * n, ev.get("n")))


class Asks(Workflow):
    @step
    async def ask(self, ev: StartEvent) -> InputRequiredEvent:
        return InputRequiredEvent(prefix="ok?")

    @step
    async def answer(self, ev: HumanResponseEvent) -> StopEvent:
        return StopEvent(result=ev.response)


async def _run(store, workflow: Workflow, **start) -> str:
    handler = WorkflowCheckpointer(workflow, store=store).run(**start)
    try:
        await handler
    except RuntimeError:
        pass
    return str(handler.run_id)


async def test_ended_runs_past_their_period_go_with_all_they_hold(store) -> None:
    done = [await _run(store, Done(), n=n) for n in range(3)]
    failed = await _run(store, Broken())
    report = await _run(store, Report(), n=9)
    waiting = WorkflowCheckpointer(Asks(), store=store).run()
    async for ev in waiting.stream_events():
        if isinstance(ev, InputRequiredEvent):
            break
    waiting_id = str(waiting.run_id)
    assert store.list(done[0]) and store.events(done[0])

    later = time.time() + 3600  # an hour from now: everything ended is an hour old
    policy = Retention("30m", per_workflow={"Report": "2h"}, batch=2)
    assert policy.sweep(store, now=later) == 4  # three Done, one Broken; batches of two
    for run_id in [*done, failed]:
        assert store.run(run_id) is None
        assert store.list(run_id) == [] and store.events(run_id) == []
    assert store.run(report).status == "completed"  # kept two hours
    assert store.run(waiting_id).status == "waiting"  # still going on: never deleted
    assert policy.sweep(store, now=later) == 0
    assert Retention("30m").sweep(store, now=later) == 1  # without the override, Report goes
    waiting.ctx.send_event(HumanResponseEvent(response="yes"))
    assert await waiting == "yes"


async def test_a_recent_run_is_kept(store) -> None:
    run_id = await _run(store, Done(), n=1)
    assert Retention("1h").sweep(store) == 0
    assert store.run(run_id) is not None


async def test_run_forever_sweeps_until_cancelled(store) -> None:
    run_id = await _run(store, Done(), n=1)
    task = asyncio.create_task(Retention(0, every=0.05).run_forever(store))
    deadline = time.monotonic() + 30
    while store.run(run_id) is not None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert store.run(run_id) is None


async def test_a_deleted_run_takes_its_journal_and_frees_its_idempotency_key(store) -> None:
    """The run's journaled calls go with it, and its key may start a new run."""
    handler = WorkflowCheckpointer(Journals(), store=store).start(idempotency_key="order-7", n=4)
    assert await handler == 8
    run_id = str(handler.run_id)
    assert [e.name for e in store.journal(run_id)] == ["double"]
    assert Retention("30m").sweep(store, now=time.time() + 3600) == 1
    assert store.journal(run_id) == []
    assert store.run_for_key("order-7") is None
    again = WorkflowCheckpointer(Journals(), store=store).start(idempotency_key="order-7", n=5)
    assert await again == 10 and str(again.run_id) != run_id


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"keep_finished": "7x"}, "keep_finished expects a duration such as 30m, 12h, 7d or 2w"),
        ({"keep_finished": -1}, "keep_finished cannot be negative"),
        ({"keep_finished": "1d", "per_workflow": {"r": "soon"}}, "the period of workflow 'r'"),
        ({"keep_finished": "1d", "batch": 0}, "batch must be at least 1"),
        ({"keep_finished": "1d", "every": 0}, "every must be a positive number of seconds"),
    ],
)
def test_bad_policies_say_what_to_give(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        Retention(**kwargs)


def test_durations() -> None:
    assert [parse_duration(d) for d in ("90s", "30m", "12h", "7d", "2w", 5)] == [
        90,
        1800,
        43200,
        604800,
        1209600,
        5,
    ]
