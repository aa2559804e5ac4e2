"""How a budget counts and stops single LLM calls: a streamed call, a call that raised, a
model without a price under a cost budget, a sync call made on the event loop, and a run
cancelled while it waits for its budget (SQLite store, scripted LLM reporting usage)."""

from __future__ import annotations

import asyncio
from typing import Any

import batonflow.budgets  # noqa: F401  (counts the calls)
import pytest
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse
from batonflow.core import BudgetExceededError, StartEvent, StopEvent, Workflow, step
from batonflow.core.checkpoints import SqliteCheckpointStore, WorkflowCheckpointer
from batonflow.core.durable._budget import Usage
from batonflow.core.errors import WorkflowCancelledByUser
from budget_waits import until_status
from llama_index.core.llms import ChatMessage


class Calls(Workflow):
    """One step running ``self.body(llm)``."""

    def __init__(self, llm: Any, body: Any) -> None:
        super().__init__(timeout=None)
        self.llm, self.body = llm, body

    @step
    async def ask(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=await self.body(self.llm))


def _start(tmp_path: Any, llm: Any, body: Any, budget: Any) -> tuple[Any, Any, Any]:
    store = SqliteCheckpointStore(tmp_path / "runs.db")
    cptr = WorkflowCheckpointer(Calls(llm, body), store=store)
    return cptr, store, cptr.start(budget=budget)


async def test_a_streamed_call_is_counted_from_its_last_chunk(tmp_path):
    """astream_chat reports its usage on its last chunk: that is what is counted."""

    async def body(llm: Any) -> str:
        text = ""
        async for chunk in await llm.astream_chat([ChatMessage(content="hi")]):
            text = str(chunk.message.content)
        return text

    llm = ScriptedLLM([ScriptedResponse(text="one two three", usage=(7, 3))])
    _, store, handler = _start(tmp_path, llm, body, 1000)
    assert await handler == "one two three"
    assert store.usage(handler.run_id) == {"ask": Usage(7, 3, 10, None, 1)}


async def test_a_call_that_raised_is_counted_at_its_prompt_estimate(tmp_path):
    """A failed call counts its prompt estimate (characters / 4, rounded up), no completion."""

    async def body(llm: Any) -> str:
        try:
            await llm.achat([ChatMessage(content="x" * 40)])
        except RuntimeError:
            return "raised"
        return "answered"

    llm = ScriptedLLM([RuntimeError("provider down")])
    _, store, handler = _start(tmp_path, llm, body, 1000)
    assert await handler == "raised"
    assert store.usage(handler.run_id) == {"ask": Usage(10, 0, 10, None, 1)}


async def test_a_cost_budget_refuses_a_model_without_a_price(tmp_path):
    """No price, no cost to check: the call is refused, saying how to add the price."""

    async def body(llm: Any) -> str:
        return str((await llm.achat([ChatMessage(content="hi")])).message.content)

    llm = ScriptedLLM(["never"])
    _, _, handler = _start(tmp_path, llm, body, "$1")
    with pytest.raises(BudgetExceededError, match=r"price .* is not known.*set_price"):
        await handler
    assert llm.calls == []


async def test_a_sync_call_on_the_event_loop_fails_rather_than_wait(tmp_path):
    """llm.chat in an async step cannot wait (it would stop every run): it fails, not made."""

    async def body(llm: Any) -> str:
        llm.chat([ChatMessage(content="first")])
        llm.chat([ChatMessage(content="second")])
        return "both"

    llm = ScriptedLLM([ScriptedResponse(text="a", usage=(50, 50)), "b"])
    _, _, handler = _start(tmp_path, llm, body, 100)
    with pytest.raises(BudgetExceededError, match="would pass the run's budget"):
        await handler
    assert len(llm.calls) == 1


async def test_a_run_cancelled_while_it_waits_for_its_budget_makes_no_call(tmp_path):
    """Cancelling the waiting run ends it: cancelled, the waiting call never made."""

    async def body(llm: Any) -> str:
        await llm.achat([ChatMessage(content="first")])
        await llm.achat([ChatMessage(content="second")])
        return "both"

    llm = ScriptedLLM([ScriptedResponse(text="a", usage=(50, 50)), "b"])
    cptr, store, handler = _start(tmp_path, llm, body, 100)
    await until_status(store, handler.run_id, "waiting")
    cptr.request_cancel(handler.run_id)
    with pytest.raises(WorkflowCancelledByUser):
        await handler
    await asyncio.sleep(0.3)
    assert len(llm.calls) == 1
    assert store.run(handler.run_id).status == "cancelled"
