"""Budgets stop a durable run's LLM calls before they would pass it (SQLite store).

A scripted agent (its LLM reporting usage), a step's own ``llm.achat`` calls, and llama-index's
OpenAI LLM against respx: the call that would pass the budget is not made (counted at the LLM
or at the mock) while the run waits with its budget blocked; a raise lets it finish. With
``on_exceed="fail"`` the run fails with ``BudgetExceededError`` instead.
"""

from __future__ import annotations

import asyncio
from typing import Any

import batonflow.budgets
import pytest
import respx
from batonflow.agents import FunctionAgent
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from batonflow.core import (
    Budget,
    BudgetExceededError,
    Context,
    Event,
    StartEvent,
    StopEvent,
    Workflow,
)
from batonflow.core import step as step_
from batonflow.core.checkpoints import SqliteCheckpointStore, WorkflowCheckpointer
from batonflow.core.durable._budget import Usage
from budget_waits import until_status
from llama_index.core.llms import ChatMessage
from llama_index.llms.openai import OpenAI
from openai_mock import completion


def lookup(q: str) -> str:
    """Look ``q`` up."""
    return "42"


def scripted_agent() -> tuple[FunctionAgent, ScriptedLLM]:
    """An agent whose first call asks for a tool (120 tokens), its second answers (180)."""
    llm = ScriptedLLM(
        [
            ScriptedResponse(tool_calls=[ScriptedToolCall("lookup", {"q": "x"})], usage=(100, 20)),
            ScriptedResponse(text="The answer is 42.", usage=(150, 30)),
        ]
    )
    return FunctionAgent(tools=[lookup], llm=llm, timeout=None), llm


async def test_a_budget_stops_an_agent_before_the_call_that_would_pass_it(tmp_path):
    """Budget 120: the first call uses 120, the second is not made; a raise lets it finish."""
    agent, llm = scripted_agent()
    store = SqliteCheckpointStore(tmp_path / "runs.db")
    cptr = WorkflowCheckpointer(agent, store=store)
    handler = cptr.start(user_msg="What is the answer?", budget=Budget(tokens=120))
    await until_status(store, handler.run_id, "waiting")
    await asyncio.sleep(0.3)  # a call made past the budget would show in the meantime
    assert len(llm.calls) == 1
    state = store.budget(handler.run_id)
    assert state is not None and state.blocked is not None
    assert state.blocked["used"] == 120 and state.blocked["tokens"] == 120
    cptr.raise_budget(handler.run_id, tokens=1000)
    assert "42" in str(await handler)
    assert len(llm.calls) == 2
    assert store.run(handler.run_id).status == "completed"
    assert store.budget(handler.run_id).blocked is None
    (usage,) = store.usage(handler.run_id).values()
    assert usage == Usage(250, 50, 300, None, 2)  # the scripted model has no price


async def test_a_fail_budget_fails_the_run_without_making_the_call(tmp_path):
    """on_exceed='fail': BudgetExceededError names the budget and the fix; one call made."""
    agent, llm = scripted_agent()
    store = SqliteCheckpointStore(tmp_path / "runs.db")
    cptr = WorkflowCheckpointer(agent, store=store, budget=Budget(tokens=120, on_exceed="fail"))
    handler = cptr.start(user_msg="What is the answer?")
    with pytest.raises(BudgetExceededError, match=r"would pass the run's budget .*Raise the"):
        await handler
    assert len(llm.calls) == 1
    assert store.run(handler.run_id).status == "failed"


class Planned(Event):
    """The plan."""

    text: str


class TwoSteps(Workflow):
    """Two steps, each asking its own LLM in its code (``await llm.achat``)."""

    def __init__(self, llm: Any, **kwargs: Any) -> None:
        super().__init__(timeout=None, **kwargs)
        self.llm = llm

    @step_
    async def plan(self, ev: StartEvent) -> Planned:
        response = await self.llm.achat([ChatMessage(content="plan it")])
        return Planned(text=str(response.message.content))

    @step_
    async def write(self, ctx: Context, ev: Planned) -> StopEvent:
        first = await self.llm.achat([ChatMessage(content=ev.text)])
        second = self.llm.complete("and again")  # a sync call from a step counts too
        return StopEvent(result=[first.message.content, second.text])


async def test_a_steps_own_calls_are_counted_per_step(tmp_path):
    """Each step's calls add to its own usage; the run's budget sees them all."""
    llm = ScriptedLLM([ScriptedResponse(text=f"r{i}", usage=(10 * (i + 1), 1)) for i in range(3)])
    store = SqliteCheckpointStore(tmp_path / "runs.db")
    cptr = WorkflowCheckpointer(TwoSteps(llm), store=store, budget="1000 tokens")
    handler = cptr.start()
    assert await handler == ["r1", "r2"]
    assert store.usage(handler.run_id) == {
        "plan": Usage(10, 1, 11, None, 1),
        "write": Usage(50, 2, 52, None, 2),
    }


@respx.mock(base_url="https://api.openai.com/v1", assert_all_called=False)
async def test_an_openai_call_past_the_budget_never_reaches_the_api(respx_mock, tmp_path):
    """Each completion reports 15 tokens: budget 15 lets one request through, the next waits
    (one request at the mock) until the raise; cost from the gpt-4o-mini price."""
    route = respx_mock.post("/chat/completions").mock(
        side_effect=[completion("first"), completion("second")]
    )
    llm = OpenAI(model="gpt-4o-mini", max_retries=0, api_key="test")
    store = SqliteCheckpointStore(tmp_path / "runs.db")
    cptr = WorkflowCheckpointer(OneCall(llm), store=store)
    handler = cptr.start(budget=15)
    assert await _first_then_wait(handler, store, route, cptr) == ["first", "second"]
    assert route.call_count == 2
    (usage,) = store.usage(handler.run_id).values()
    rates = batonflow.budgets.PRICES["gpt-4o-mini"]
    assert usage.total_tokens == 30
    assert usage.cost == pytest.approx(2 * (10 * rates[0] + 5 * rates[1]) / 1e6)


async def _first_then_wait(handler: Any, store: Any, route: Any, cptr: Any) -> Any:
    await until_status(store, handler.run_id, "waiting")
    await asyncio.sleep(0.3)
    assert route.call_count == 1
    cptr.raise_budget(handler.run_id, tokens=100)
    return await handler


class OneCall(Workflow):
    """One step asking its LLM twice."""

    def __init__(self, llm: Any) -> None:
        super().__init__(timeout=None)
        self.llm = llm

    @step_
    async def ask(self, ev: StartEvent) -> StopEvent:
        answers = []
        for question in ("one", "two"):
            response = await self.llm.achat([ChatMessage(content=question)])
            answers.append(response.message.content)
        return StopEvent(result=answers)


async def test_a_queued_run_keeps_its_workflows_budget(tmp_path):
    """A checkpointer with limits and a budget: the queued run starts with the budget, waits
    before the call that would pass it, and a raise lets it finish."""
    from batonflow.core import RunLimits

    agent, llm = scripted_agent()
    store = SqliteCheckpointStore(tmp_path / "runs.db")
    cptr = WorkflowCheckpointer(agent, store=store, limits=RunLimits(max_running=1), budget=120)
    handler = await cptr.astart(user_msg="What is the answer?")
    await until_status(store, handler.run_id, "waiting")
    assert len(llm.calls) == 1
    cptr.raise_budget(handler.run_id, tokens=1000)
    assert "42" in str(await handler)
    assert len(llm.calls) == 2
