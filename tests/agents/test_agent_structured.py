"""Structured output (output_cls=, structured_output_fn=) and memory of agent runs."""

from __future__ import annotations

import json

import pytest
import respx
from batonflow.agents import (
    AgentStreamStructuredOutput,
    AgentWorkflow,
    FunctionAgent,
    PydanticConversionWarning,
    StructuredOutputWarning,
)
from batonflow.agents.chat_memory import ChatMemory
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer, Memory
from llama_index.llms.openai import OpenAI
from memories import dispose
from openai_mock import CHAT_URL, completion, sent_body
from pydantic import BaseModel


class Weather(BaseModel):
    city: str
    celsius: int


def weather_call(**fields: object) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedToolCall("Weather", dict(fields))])


async def test_output_cls_on_the_agent_gives_structured_response() -> None:
    """FunctionAgent(output_cls=...) fills structured_response after the answer."""
    llm = ScriptedLLM(["Paris is 18 degrees.", weather_call(city="Paris", celsius=18)])
    agent = FunctionAgent(llm=llm, output_cls=Weather)
    handler = agent.run(user_msg="Weather in Paris?")
    streamed = [
        e async for e in handler.stream_events() if isinstance(e, AgentStreamStructuredOutput)
    ]
    output = await handler
    assert str(output) == "Paris is 18 degrees."
    assert output.structured_response == {"city": "Paris", "celsius": 18}
    assert output.get_pydantic_model(Weather) == Weather(city="Paris", celsius=18)
    assert streamed[0].get_pydantic_model(Weather) == Weather(city="Paris", celsius=18)
    assert "Paris is 18 degrees." in (llm.calls[1][-1].content or "")


async def test_output_cls_per_run_and_on_the_workflow() -> None:
    """run(output_cls=) wins over the workflow's; the workflow's over the agent's."""

    class City(BaseModel):
        name: str

    llm = ScriptedLLM(
        ["Rome.", ScriptedResponse(tool_calls=[ScriptedToolCall("City", {"name": "Rome"})])]
    )
    agent = FunctionAgent(llm=llm, output_cls=Weather)
    output = await agent.run(user_msg="A city?", output_cls=City)
    assert output.structured_response == {"name": "Rome"}

    llm2 = ScriptedLLM(
        ["Oslo.", ScriptedResponse(tool_calls=[ScriptedToolCall("City", {"name": "Oslo"})])]
    )
    flow = AgentWorkflow(agents=[FunctionAgent(llm=llm2, output_cls=Weather)], output_cls=City)
    assert (await flow.run(user_msg="?")).structured_response == {"name": "Oslo"}


async def test_output_cls_over_openai(openai_llm: OpenAI, openai_api: respx.MockRouter) -> None:
    """Against OpenAI the structured call asks for the model's JSON schema."""
    route = openai_api.post(CHAT_URL).mock(
        side_effect=[
            completion("It is 24C in Rome."),
            completion('{"city": "Rome", "celsius": 24}'),
        ]
    )
    agent = FunctionAgent(llm=openai_llm, streaming=False, output_cls=Weather)
    output = await agent.run(user_msg="Rome?")
    assert output.structured_response == {"city": "Rome", "celsius": 24}
    body = sent_body(route.calls[1].request)
    assert body["response_format"]["json_schema"]["name"] == "Weather"


async def test_structured_output_fn_sync_and_async() -> None:
    """structured_output_fn receives the final messages; it may be async or return a model."""

    def count(messages: list[ChatMessage]) -> dict:
        return {"messages": len(messages)}

    async def as_model(messages: list[ChatMessage]) -> Weather:
        return Weather(city=messages[-1].content or "", celsius=1)

    out = await FunctionAgent(llm=ScriptedLLM(["a"]), structured_output_fn=count).run(user_msg="q")
    assert out.structured_response == {"messages": 2}
    out = await FunctionAgent(llm=ScriptedLLM(["Oslo"]), structured_output_fn=as_model).run(
        user_msg="q"
    )
    assert out.structured_response == {"city": "Oslo", "celsius": 1}


async def test_failed_structured_output_warns_and_keeps_the_answer() -> None:
    """When the model's output does not fit, the run still answers, with a warning."""
    llm = ScriptedLLM(["Hot.", weather_call(city="Nowhere")])
    agent = FunctionAgent(llm=llm, output_cls=Weather)
    with pytest.warns(StructuredOutputWarning, match=r"Weather\) could not be made"):
        output = await agent.run(user_msg="?")
    assert str(output) == "Hot."
    assert output.structured_response is None


def test_get_pydantic_model_warns_on_a_mismatch() -> None:
    """get_pydantic_model returns None with a PydanticConversionWarning when it cannot fit."""
    from batonflow.agents import AgentOutput

    output = AgentOutput(response="x", structured_response={"city": 3})
    with pytest.warns(PydanticConversionWarning, match=r"does not fit Weather"):
        assert output.get_pydantic_model(Weather) is None


async def test_default_memory_trims_to_its_token_limit() -> None:
    """The default memory has a token limit, so a long conversation is trimmed."""
    llm = ScriptedLLM()
    agent = FunctionAgent(llm=llm)
    ctx = None
    for turn in range(30):
        llm.add(f"answer {turn} " + "word " * 100)
        handler = agent.run(user_msg=f"question {turn} " + "word " * 100, ctx=ctx)
        await handler
        ctx = handler.ctx
    memory = await ctx.store.get("memory")
    assert isinstance(memory, ChatMemory)
    assert memory.token_limit == int(llm.metadata.context_window * 0.75)
    sent = llm.calls[-1]
    assert len(sent) < 59  # 30 turns would be 59 messages untrimmed
    assert memory.window_tokens <= memory.token_limit
    assert sent[0].role == "user"
    assert len(memory.get_all()) == 60


async def test_llama_index_memories_are_accepted_as_they_are() -> None:
    """run(memory=...) takes llama-index's Memory and ChatMemoryBuffer, token limits included."""
    for memory in (
        Memory.from_defaults(session_id="s", token_limit=60),
        ChatMemoryBuffer.from_defaults(token_limit=60),
    ):
        llm = ScriptedLLM(["first answer " * 40, "second"])
        agent = FunctionAgent(llm=llm)
        try:
            await agent.run(user_msg="first question " * 40, memory=memory)
            await agent.run(user_msg="second question", memory=memory)
            sent = [m.content for m in llm.calls[1]]
            assert sent[-1] == "second question"
            assert "first question " * 40 not in sent  # trimmed by the memory's own limit
            assert len(await memory.aget_all()) == 4
        finally:
            await dispose(memory)


def test_chat_memory_keeps_a_window_that_starts_at_a_user_message() -> None:
    """Trimming never starts the window at a tool result or an assistant message."""
    memory = ChatMemory.from_defaults(token_limit=30)
    memory.put_messages(
        [
            ChatMessage(role="user", content="a " * 10),
            ChatMessage(role="assistant", content="b " * 10),
            ChatMessage(role="tool", content="c " * 5),
            ChatMessage(role="user", content="d"),
            ChatMessage(role="assistant", content="e"),
        ]
    )
    assert [m.content for m in memory.get()] == ["d", "e"]
    restored = ChatMemory.model_validate(json.loads(memory.model_dump_json()))
    assert [m.content for m in restored.get()] == ["d", "e"]
    memory.set([ChatMessage(role="user", content="z")])
    assert [m.content for m in memory.get_all()] == ["z"]
