"""return_direct tools and per-run tool_choice on ReActAgent and FunctionCallingAgent too."""

from __future__ import annotations

import respx
from batonflow.agents import FunctionCallingAgent, ReActAgent
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from llama_index.core.tools import FunctionTool
from llama_index.llms.openai import OpenAI
from openai_mock import CHAT_URL, completion, sent_body


def order_status(order_id: int) -> str:
    """The status of an order."""
    return f"order {order_id!r}: shipped"


DIRECT = FunctionTool.from_defaults(order_status, return_direct=True)


async def test_function_calling_agent_return_direct_over_openai(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """A return_direct tool's output is the answer: one request to the API, not two."""
    route = openai_api.post(CHAT_URL).mock(
        return_value=completion(tool_calls=[("c1", "order_status", {"order_id": 42})])
    )
    agent = FunctionCallingAgent(tools=[DIRECT], llm=openai_llm, streaming=False)
    result = await agent.run(input="Where is order 42?", tool_choice="required")
    assert result.response == "order 42: shipped"
    assert route.call_count == 1
    assert sent_body(route.calls[0].request)["tool_choice"] == "required"


async def test_react_agent_return_direct_with_a_scripted_llm() -> None:
    """The ReAct agent stops on a return_direct tool too; a failed call does not count."""
    llm = ScriptedLLM(
        [
            'Thought: look\nAction: order_status\nAction Input: {"order_id": "x"}',
            'Thought: again\nAction: order_status\nAction Input: {"order_id": 7}',
        ],
        function_calling=False,
    )
    result = await ReActAgent(tools=[DIRECT], llm=llm).run(input="order 7?")
    assert result.response == "order 7: shipped"
    assert [c.is_error for c in result.tool_calls] == [True, False]
    assert llm.remaining == 0


async def test_tool_choice_only_on_the_first_call() -> None:
    """tool_choice= applies to the run's first LLM call; the next ones choose freely."""
    llm = ScriptedLLM(
        [ScriptedResponse(tool_calls=[ScriptedToolCall("order_status", {"order_id": 1})]), "ok"]
    )
    agent = FunctionCallingAgent(tools=[order_status], llm=llm)
    assert (await agent.run(input="?", tool_choice="order_status")).response == "ok"
    assert [o.get("tool_choice") for o in llm.options] == ["order_status", None]
