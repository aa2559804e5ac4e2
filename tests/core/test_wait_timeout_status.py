"""A ``wait_for_event`` that times out leaves its durable run ``running``, not ``waiting``.

The step asked a question and went on without an answer: on every backend the run's record is
``running`` again (so an answer is refused rather than taken and dropped), while a question
another step still waits for keeps the run ``waiting``.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from batonflow.core import (
    Context,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowCheckpointer,
    step,
)
from batonflow.core.errors import CheckpointError


class Impatient(Workflow):
    """Asks, waits ``patience`` seconds, then goes on; holds until ``gate`` opens."""

    gate: asyncio.Event

    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        try:
            answer = await ctx.wait_for_event(
                HumanResponseEvent,
                waiter_event=InputRequiredEvent(prefix="spend $10?"),
                timeout=ev.patience,
            )
        except TimeoutError:
            answer = None
        await self.gate.wait()
        return StopEvent(result="no answer" if answer is None else answer.response)


class TwoAsk(Impatient):
    """Also asks a second question, in another step, that waits for ever."""

    @step
    async def other(self, ctx: Context, ev: StartEvent) -> None:
        await ctx.wait_for_event(
            HumanResponseEvent,
            waiter_event=InputRequiredEvent(prefix="and the other?"),
            requirements={"topic": "other"},
            timeout=None,
        )


async def _until(store, run_id: str, status: str, deadline: float = 10.0) -> None:
    end = time.monotonic() + deadline
    while (record := store.run(run_id)) is None or record.status != status:
        assert time.monotonic() < end, f"run {run_id} stayed {record and record.status}"
        await asyncio.sleep(0.01)


async def test_a_wait_that_times_out_leaves_the_run_running(store) -> None:
    """Waiting while it asks; running once the wait has timed out and the step went on; an
    answer then is refused, and the run ends as its step decided."""
    flow = Impatient(timeout=None)
    flow.gate = asyncio.Event()
    cptr = WorkflowCheckpointer(flow, store=store)
    handler = cptr.start(patience=0.3)
    await _until(store, handler.run_id, "waiting")
    await _until(store, handler.run_id, "running")
    assert store.run(handler.run_id).waiting_seq is None
    with pytest.raises(CheckpointError, match="waits for no answer|is not waiting|running"):
        cptr.send_event(handler.run_id, HumanResponseEvent(response="yes"), answer=True)
    flow.gate.set()
    assert await handler == "no answer"


async def test_a_question_still_open_keeps_the_run_waiting(store) -> None:
    """Two steps ask; one's wait times out: the run is waiting for the other's question, and
    its answer is taken."""
    flow = TwoAsk(timeout=None)
    flow.gate = asyncio.Event()
    cptr = WorkflowCheckpointer(flow, store=store)
    handler = cptr.start(patience=0.3)
    await _until(store, handler.run_id, "waiting")
    await asyncio.sleep(1.0)  # the first wait has timed out by now
    record = store.run(handler.run_id)
    assert record.status == "waiting"
    (entry,) = store.events(handler.run_id, after=record.waiting_seq - 1, limit=1)
    assert "and the other?" in entry.body
    cptr.send_event(handler.run_id, HumanResponseEvent(response="done", topic="other"), answer=True)
    await _until(store, handler.run_id, "running")
    flow.gate.set()
    assert await handler == "no answer"
