"""The scripted LLM replays its script for chat, completion, streaming and tool calls."""

from __future__ import annotations

import pytest
from batonflow.agents.testing import (
    ScriptedLLM,
    ScriptedResponse,
    ScriptedToolCall,
    ScriptOutOfResponsesError,
)
from llama_index.core.llms import ChatMessage
from llama_index.core.tools import FunctionTool


def add(a: int, b: int) -> int:
    """Add."""
    return a + b


async def test_entries_are_consumed_in_order_and_calls_recorded() -> None:
    """Each call takes the next entry; the messages of each call are recorded."""
    llm = ScriptedLLM(["one", "two"])
    assert (await llm.achat([ChatMessage(role="user", content="a")])).message.content == "one"
    assert str(await llm.acomplete("b")) == "two"
    assert [[m.content for m in call] for call in llm.calls] == [["a"], ["b"]]
    assert llm.remaining == 0


async def test_running_out_of_script_is_a_clear_error() -> None:
    """A call past the end of the script says so and how to fix it."""
    llm = ScriptedLLM(["only"])
    await llm.acomplete("x")
    with pytest.raises(
        ScriptOutOfResponsesError, match=r"ran out of responses at call 2; add more entries"
    ):
        await llm.acomplete("y")


async def test_exception_entries_are_raised() -> None:
    """An exception in the script is raised by that call (to test failures and retries)."""
    llm = ScriptedLLM([TimeoutError("slow"), "fine"])
    with pytest.raises(TimeoutError, match="slow"):
        await llm.achat([])
    assert (await llm.achat([])).message.content == "fine"


async def test_callable_entries_see_the_messages() -> None:
    """A callable entry answers from the messages it is given."""
    llm = ScriptedLLM([lambda messages: messages[-1].content.upper()])
    assert (await llm.achat([ChatMessage(role="user", content="echo")])).message.content == "ECHO"


async def test_streaming_splits_text_into_deltas() -> None:
    """Streaming yields word-sized deltas whose concatenation is the text."""
    llm = ScriptedLLM(["The answer is 42."])
    gen = await llm.astream_chat([])
    chunks = [c async for c in gen]
    assert [c.delta for c in chunks] == ["The ", "answer ", "is ", "42."]
    assert chunks[-1].message.content == "The answer is 42."
    completion = await (ScriptedLLM(["a b"])).astream_complete("x")
    assert [c.delta async for c in completion] == ["a ", "b"]


async def test_tool_calls_round_trip_through_chat_with_tools() -> None:
    """Scripted tool calls come back from get_tool_calls_from_response, with stable ids."""
    llm = ScriptedLLM(
        [
            ScriptedResponse(
                "calling",
                [
                    ScriptedToolCall("add", {"a": 1, "b": 2}),
                    ScriptedToolCall("add", {"a": 3, "b": 4}, id="mine"),
                ],
            )
        ]
    )
    tool = FunctionTool.from_defaults(add)
    response = await llm.achat_with_tools(
        [tool], chat_history=[ChatMessage(role="user", content="go")]
    )
    calls = llm.get_tool_calls_from_response(response)
    assert [(c.tool_id, c.tool_name, c.tool_kwargs) for c in calls] == [
        ("call_1_0", "add", {"a": 1, "b": 2}),
        ("mine", "add", {"a": 3, "b": 4}),
    ]
    assert response.message.content == "calling"
    assert llm.tools_offered == [["add"]]
    assert llm.metadata.is_function_calling_model


async def test_streamed_tool_calls_arrive_with_the_last_chunk() -> None:
    """When streaming, the tool calls are in the final chunk."""
    llm = ScriptedLLM([ScriptedResponse("one two", [ScriptedToolCall("add", {"a": 1, "b": 1})])])
    gen = await llm.astream_chat_with_tools([FunctionTool.from_defaults(add)], chat_history=[])
    chunks = [c async for c in gen]
    assert llm.get_tool_calls_from_response(chunks[0], error_on_no_tool_call=False) == []
    assert [c.tool_name for c in llm.get_tool_calls_from_response(chunks[-1])] == ["add"]


def test_no_tool_call_raises_when_required() -> None:
    """get_tool_calls_from_response(error_on_no_tool_call=True) raises on a text reply."""
    llm = ScriptedLLM(["text"])
    response = llm.chat([])
    with pytest.raises(ValueError, match="at least one tool call"):
        llm.get_tool_calls_from_response(response)


async def test_agent_out_of_script_error_has_no_network_advice() -> None:
    """An agent whose scripted LLM ran out: one clean sentence, no retry/network advice."""
    from batonflow.agents import FunctionCallingAgent, LLMCallError

    agent = FunctionCallingAgent(tools=[add], llm=ScriptedLLM([]))
    with pytest.raises(LLMCallError) as caught:
        await agent.run(input="hi")
    message = str(caught.value)
    assert "ScriptOutOfResponsesError: " in message and "ran out of responses" in message
    assert message.endswith("llm.add(...)).")  # the script's own fix, one period
    assert "network" not in message and "retry_policy" not in message


async def test_agent_network_failure_keeps_its_advice() -> None:
    """Other failed calls still end with what to check, after exactly one period."""
    from batonflow.agents import FunctionCallingAgent, LLMCallError

    agent = FunctionCallingAgent(tools=[add], llm=ScriptedLLM([ConnectionError("no route")]))
    with pytest.raises(LLMCallError) as caught:
        await agent.run(input="hi")
    assert "ConnectionError: no route. Check the network and the LLM's settings" in str(
        caught.value
    )
