"""Inbox entries committed by another process reach the live run once, however often they are
delivered (a server delivers on a notification, again after a reconnect, again on a heartbeat)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from batonflow.core import (
    Context,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    step,
)
from batonflow.core.checkpoints import SqliteCheckpointStore, WorkflowCheckpointer


class Ping(Event):
    """One event sent from outside; ``last`` ends the run."""

    last: bool = False


class Counts(Workflow):
    """Counts the pings it takes in until the last one."""

    @step
    async def start(self, ev: StartEvent) -> InputRequiredEvent:
        return InputRequiredEvent(prefix="ping me")

    @step(skip_graph_checks=["reachability"])  # pings come from outside
    async def ping(self, ctx: Context, ev: Ping) -> StopEvent | None:
        count = await ctx.store.get("count", default=0) + 1
        await ctx.store.set("count", count)
        return StopEvent(result=count) if ev.last else None


async def test_an_entry_delivered_many_times_is_taken_in_once(tmp_path: Path) -> None:
    """Three pings posted by another checkpointer, deliver() called after each and twice more:
    the run counts three, and taken_in says how far it got."""
    with SqliteCheckpointStore(tmp_path / "runs.db") as store:
        runner = WorkflowCheckpointer(Counts(timeout=None), store=store)
        poster = WorkflowCheckpointer(Counts(timeout=None), store=store)  # another process
        handler = runner.run(run_id="r")
        while store.run("r").status != "waiting":
            await asyncio.sleep(0.005)
        assert runner.taken_in("r") == 0 and poster.taken_in("r") is None
        for n, last in enumerate((False, False, True), start=1):
            poster.send_event("r", Ping(last=last))
            for _ in range(3):
                runner.deliver("r")
            assert runner.taken_in("r") == n
        assert await handler == 3
        assert runner.taken_in("r") is None  # it ended: it runs here no more


class Approves(Workflow):
    """Waits for an answer about ticket 7 (its question asked with requirements)."""

    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        answer = await ctx.wait_for_event(
            HumanResponseEvent,
            waiter_event=InputRequiredEvent(prefix="ok?"),
            requirements={"ticket": 7},
            timeout=None,
        )
        return StopEvent(result=answer.response)


async def test_an_entry_no_waiting_step_takes_is_logged_not_raised(tmp_path: Path, caplog) -> None:
    """An inbox entry that no step takes when it arrives (its wait wants other values) is
    committed, skipped with a warning, and the run keeps waiting for the right one."""
    with SqliteCheckpointStore(tmp_path / "runs.db") as store:
        cptr = WorkflowCheckpointer(Approves(timeout=None), store=store)
        handler = cptr.run(run_id="r")
        while store.run("r").status != "waiting":
            await asyncio.sleep(0.005)
        cptr.send_event("r", HumanResponseEvent(response="no", ticket=8))
        assert "inbox event 1 is taken by no step" in caplog.text
        assert [w.requirements for w in handler.ctx.waiting_for()] == [{"ticket": 7}]
        cptr.send_event("r", HumanResponseEvent(response="yes", ticket=7), answer=True)
        assert await handler == "yes"
