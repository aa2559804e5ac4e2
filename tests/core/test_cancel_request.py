"""A cancel committed to a run's inbox (``request_cancel``): whichever process runs the run,
now or after resuming it, cancels it, so an accepted cancel is never lost."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from batonflow.core import (
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowCancelledByUser,
    step,
)
from batonflow.core.checkpoints import SqliteCheckpointStore, WorkflowCheckpointer
from batonflow.core.errors import RunConflictError


class Asks(Workflow):
    """Asks a question, then returns the answer."""

    @step
    async def ask(self, ev: StartEvent) -> InputRequiredEvent:
        return InputRequiredEvent(prefix="go?")

    @step
    async def answer(self, ev: HumanResponseEvent) -> StopEvent:
        return StopEvent(result=ev.response)


async def _asked(cptr: WorkflowCheckpointer, run_id: str) -> None:
    while cptr.store.run(run_id).status != "waiting":
        await asyncio.sleep(0.005)


async def test_a_cancel_request_cancels_a_run_that_runs_here(tmp_path: Path) -> None:
    with SqliteCheckpointStore(tmp_path / "runs.db") as store:
        cptr = WorkflowCheckpointer(Asks(timeout=None), store=store)
        handler = cptr.run(run_id="r")
        await _asked(cptr, "r")
        cptr.request_cancel("r")
        with pytest.raises(WorkflowCancelledByUser):
            await handler
        assert store.run("r").status == "cancelled"


async def test_a_cancel_request_nobody_took_in_cancels_the_run_when_it_resumes(
    tmp_path: Path,
) -> None:
    """Requested while no process runs it (its server died): the process that resumes the
    run takes the request in and cancels it; the question is never answered."""
    path = tmp_path / "runs.db"
    with SqliteCheckpointStore(path) as store:
        first = WorkflowCheckpointer(Asks(timeout=None), store=store)
        handler = first.run(run_id="r")
        await _asked(first, "r")
        first.release("r")  # as a server shutting down: the record stays "waiting"
        await handler.cancel_run()
        assert store.run("r").status == "waiting"
    with SqliteCheckpointStore(path) as store:
        other = WorkflowCheckpointer(Asks(timeout=None), store=store)
        other.request_cancel("r")  # "r" runs nowhere
        assert store.run("r").status == "waiting"
        with pytest.raises(WorkflowCancelledByUser):
            await other.resume("r")
        assert store.run("r").status == "cancelled"


async def test_a_cancel_request_for_an_ended_run_is_a_conflict(tmp_path: Path) -> None:
    with SqliteCheckpointStore(tmp_path / "runs.db") as store:
        cptr = WorkflowCheckpointer(Asks(timeout=None), store=store)
        handler = cptr.run(run_id="r")
        await _asked(cptr, "r")
        cptr.send_event("r", HumanResponseEvent(response="yes"), answer=True)
        assert await handler == "yes"
        with pytest.raises(RunConflictError, match="r"):
            cptr.request_cancel("r")
