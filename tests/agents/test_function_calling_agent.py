"""FunctionCallingAgent: native tool calls, in parallel, over a mocked OpenAI API and scripted LLMs."""

from __future__ import annotations

import asyncio

import pytest
import respx
from batonflow.agents import (
    AgentConfigurationError,
    AgentOutput,
    AgentStream,
    FunctionCallingAgent,
    LLMCallError,
    MaxIterationsError,
    ToolCall,
    ToolCallResult,
)
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from batonflow.core import StopEvent
from llama_index.core.llms import MockLLM
from llama_index.llms.openai import OpenAI
from openai_mock import CHAT_URL, completion, error, sent_body, stream

WEATHER = {"Paris": "18C sunny", "Rome": "24C clear"}


async def get_weather(city: str) -> str:
    """Get the current weather of a city.

    Args:
        city: The city's name.
    """
    return WEATHER[city]


async def test_two_parallel_tool_calls_over_openai(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """Two tool calls in one reply both run; their results go back with matching tool_call_ids."""
    route = openai_api.post(CHAT_URL).mock(
        side_effect=[
            completion(
                None,
                [
                    ("call_p", "get_weather", {"city": "Paris"}),
                    ("call_r", "get_weather", {"city": "Rome"}),
                ],
            ),
            completion("Paris: 18C sunny; Rome: 24C clear."),
        ]
    )
    agent = FunctionCallingAgent(tools=[get_weather], llm=openai_llm, streaming=False)
    result = await agent.run(input="Weather in Paris and Rome?")

    assert result.response == "Paris: 18C sunny; Rome: 24C clear."
    assert [(c.tool_id, c.tool_kwargs, c.output) for c in result.tool_calls] == [
        ("call_p", {"city": "Paris"}, "18C sunny"),
        ("call_r", {"city": "Rome"}, "24C clear"),
    ]
    first, second = (sent_body(call.request) for call in route.calls)
    assert first["tools"][0]["function"]["name"] == "get_weather"
    assert (
        first["tools"][0]["function"]["parameters"]["properties"]["city"]["description"]
        == "The city's name."
    )
    assert first["parallel_tool_calls"] is True
    sent = second["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool"]
    assert [c["id"] for c in sent[2]["tool_calls"]] == ["call_p", "call_r"]
    assert [(m["tool_call_id"], m["content"]) for m in sent[3:]] == [
        ("call_p", "18C sunny"),
        ("call_r", "24C clear"),
    ]


async def test_streamed_reply_with_tool_calls_over_openai_sse(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """Streaming: tool calls arriving in SSE chunks are run, and the answer's deltas are streamed."""
    openai_api.post(CHAT_URL).mock(
        side_effect=[
            stream([], [("call_1", "get_weather", {"city": "Rome"})]),
            stream(["It is ", "24C ", "in Rome."]),
        ]
    )
    handler = FunctionCallingAgent(tools=[get_weather], llm=openai_llm).run(input="Rome?")
    events = [ev async for ev in handler.stream_events()]
    result = await handler
    assert result.response == "It is 24C in Rome."
    # Every chunk is an AgentStream, as in llama-index (the tool-call chunks have no text).
    assert [ev.delta for ev in events if isinstance(ev, AgentStream) and ev.delta] == [
        "It is ",
        "24C ",
        "in Rome.",
    ]
    results = [ev for ev in events if isinstance(ev, ToolCallResult)]
    assert [(r.tool_id, r.tool_output.content) for r in results] == [("call_1", "24C clear")]


async def test_parallel_calls_run_at_the_same_time() -> None:
    """The tool calls of one turn run concurrently (each waits for the other)."""
    barrier = asyncio.Barrier(3)

    async def ping(n: int) -> int:
        """Ping."""
        await asyncio.wait_for(barrier.wait(), timeout=5)
        return n

    llm = ScriptedLLM(
        [
            ScriptedResponse(tool_calls=[ScriptedToolCall("ping", {"n": i}) for i in range(3)]),
            "all back",
        ]
    )
    handler = FunctionCallingAgent(tools=[ping], llm=llm).run(input="go")
    events = [ev async for ev in handler.stream_events()]
    result = await handler
    assert [c.output for c in result.tool_calls] == ["0", "1", "2"]
    kinds = [type(ev).__name__ for ev in events if not isinstance(ev, AgentStream)]
    assert kinds[:2] == ["AgentInput", "AgentOutput"]
    assert sorted(kinds[2:8]) == ["ToolCall"] * 3 + ["ToolCallResult"] * 3
    assert kinds[8:] == ["AgentInput", "AgentOutput", "StopEvent"]
    assert [
        c.tool_name for c in next(ev for ev in events if isinstance(ev, AgentOutput)).tool_calls
    ] == ["ping"] * 3
    assert isinstance(events[-1], StopEvent)
    call_ids = sorted(ev.tool_id for ev in events if isinstance(ev, ToolCall))
    assert call_ids == sorted(ev.tool_id for ev in events if isinstance(ev, ToolCallResult))
    assert len(set(call_ids)) == 3


@pytest.mark.parametrize(
    ("call", "shown"),
    [
        pytest.param(
            ScriptedToolCall("nope", {}),
            "Error: there is no tool named 'nope'. Available tools: get_weather.",
            id="unknown-tool",
        ),
        pytest.param(
            ScriptedToolCall("get_weather", {}),
            "Error: bad arguments for tool 'get_weather': city: Field required.",
            id="bad-arguments",
        ),
        pytest.param(
            ScriptedToolCall("get_weather", {"city": "Oslo"}),
            "Error: tool 'get_weather' raised KeyError: 'Oslo'",
            id="tool-raises",
        ),
    ],
)
async def test_tool_mistakes_are_returned_to_the_llm(call: ScriptedToolCall, shown: str) -> None:
    """Unknown tool, bad arguments and a raising tool come back as the tool's result; the LLM then answers."""
    llm = ScriptedLLM([ScriptedResponse(tool_calls=[call]), "sorry"])
    result = await FunctionCallingAgent(tools=[get_weather], llm=llm, streaming=False).run(
        input="?"
    )
    assert result.response == "sorry"
    tool_message = llm.calls[1][-1]
    assert tool_message.role.value == "tool"
    assert tool_message.content.startswith(shown), tool_message.content
    assert result.tool_calls[0].is_error


async def test_max_iterations_stops_with_a_clear_error() -> None:
    """An LLM that keeps calling tools is stopped after max_iterations calls."""
    llm = ScriptedLLM(
        [ScriptedResponse(tool_calls=[ScriptedToolCall("get_weather", {"city": "Paris"})])] * 5
    )
    with pytest.raises(MaxIterationsError, match=r"made 2 LLM calls \(max_iterations=2\)") as info:
        await FunctionCallingAgent(tools=[get_weather], llm=llm, max_iterations=2).run(input="loop")
    assert len(info.value.result.tool_calls) == 2


async def test_memory_keeps_the_tool_exchange_across_runs() -> None:
    """With ctx=, the next run's messages hold the earlier tool call, its result and the answer."""
    llm = ScriptedLLM(
        [
            ScriptedResponse(
                tool_calls=[ScriptedToolCall("get_weather", {"city": "Paris"}, id="c1")]
            ),
            "18C",
            "Yes.",
        ]
    )
    agent = FunctionCallingAgent(tools=[get_weather], llm=llm)
    handler = agent.run(input="Paris?")
    await handler
    await agent.run(input="Warm?", ctx=handler.ctx)
    roles = [m.role.value for m in llm.calls[2]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert llm.calls[2][3].additional_kwargs["tool_call_id"] == "c1"


def test_llm_without_tool_calling_is_refused() -> None:
    """A plain LLM gets a clear error pointing at the ReActAgent."""
    with pytest.raises(
        AgentConfigurationError, match=r"needs an LLM with native tool calling.*ReActAgent"
    ):
        FunctionCallingAgent(tools=[get_weather], llm=MockLLM())


async def test_api_error_fails_the_run_clearly(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """A 429 from the API fails the run with LLMCallError."""
    openai_api.post(CHAT_URL).mock(return_value=error(429))
    with pytest.raises(LLMCallError, match="HTTP 429"):
        await FunctionCallingAgent(tools=[get_weather], llm=openai_llm).run(input="hi")


async def test_max_iterations_per_run_overrides_the_agent() -> None:
    """run(max_iterations=1) bounds that run only; a bad value is a clear input error."""
    from batonflow.agents import AgentInputError

    llm = ScriptedLLM(
        [ScriptedResponse(tool_calls=[ScriptedToolCall("get_weather", {"city": "Paris"})])] * 2
    )
    agent = FunctionCallingAgent(tools=[get_weather], llm=llm, max_iterations=5)
    with pytest.raises(MaxIterationsError, match=r"made 1 LLM calls \(max_iterations=1\)"):
        await agent.run(input="loop", max_iterations=1)
    with pytest.raises(
        AgentInputError, match=r"run\(max_iterations=\.\.\.\) must be a positive int, got 0"
    ):
        await agent.run(input="loop", max_iterations=0)
