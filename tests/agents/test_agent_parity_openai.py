"""The parity items of issue 16 against the OpenAI wire format (respx), over every class."""

from __future__ import annotations

from typing import Any

import pytest
import respx
from batonflow.agents import (
    AgentStream,
)
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.tools import FunctionTool
from llama_index.llms.openai import OpenAI
from openai_mock import CHAT_URL, completion, sent_body, sent_messages
from parity_agents import (
    Weather,
    answer,
    build,
    events_and_result,
    order_status,
    start,
    tool_call,
)

# -- the same items against the OpenAI wire format (respx) ---------------------------------

OPENAI_KINDS = ["function_calling", "react", "function", "codeact"]


def openai_answer(kind: str, text: str) -> Any:
    return completion(answer(kind, text))


@pytest.mark.parametrize("kind", OPENAI_KINDS)
async def test_output_cls_over_openai(
    kind: str, openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """The structured call asks OpenAI for the model's JSON schema; the dict is the response."""
    route = openai_api.post(CHAT_URL).mock(
        side_effect=[
            openai_answer(kind, "24C in Rome."),
            completion('{"city": "Rome", "celsius": 24}'),
        ]
    )
    agent = build(kind, openai_llm, output_cls=Weather, streaming=False)
    result = await start(kind, agent, "Rome?")
    assert str(result) == "24C in Rome."
    assert result.structured_response == {"city": "Rome", "celsius": 24}
    assert sent_body(route.calls[1].request)["response_format"]["json_schema"]["name"] == "Weather"


@pytest.mark.parametrize("kind", OPENAI_KINDS)
async def test_memory_token_limit_trims_what_openai_is_sent(
    kind: str, openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """With a ChatMemoryBuffer of 60 tokens, the second request carries only the new question."""
    route = openai_api.post(CHAT_URL).mock(
        side_effect=[openai_answer(kind, "long " * 60), openai_answer(kind, "short")]
    )
    memory = ChatMemoryBuffer.from_defaults(token_limit=60)
    agent = build(kind, openai_llm, streaming=False)
    await start(kind, agent, "question " * 60, memory=memory)
    result = await start(kind, agent, "again?", memory=memory)
    assert str(result) == "short"
    sent = [m["content"] for m in sent_messages(route.calls[1].request) if m["role"] != "system"]
    assert sent == ["again?"]


@pytest.mark.parametrize("kind", ["function_calling", "react", "function"])
async def test_return_direct_over_openai_is_one_request(
    kind: str, openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """A return_direct tool answers after one OpenAI request."""
    if kind == "react":
        reply = completion(tool_call(kind, "order_status", order_id=5))
    else:
        reply = completion(None, [("call_1", "order_status", {"order_id": 5})])
    route = openai_api.post(CHAT_URL).mock(side_effect=[reply])
    tool = FunctionTool.from_defaults(order_status, return_direct=True)
    result = await start(kind, build(kind, openai_llm, tools=[tool], streaming=False), "5?")
    assert str(result) == "order 5: shipped"
    assert route.call_count == 1


@pytest.mark.parametrize("kind", ["function_calling", "function"])
async def test_tool_choice_over_openai_goes_to_the_first_request_only(
    kind: str, openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """run(tool_choice="required") is in the first request's body, not in the next."""
    route = openai_api.post(CHAT_URL).mock(
        side_effect=[
            completion(None, [("call_1", "order_status", {"order_id": 3})]),
            completion("shipped"),
        ]
    )
    agent = build(kind, openai_llm, tools=[order_status], streaming=False)
    assert str(await start(kind, agent, "3?", tool_choice="required")) == "shipped"
    bodies = [sent_body(c.request) for c in route.calls]
    assert bodies[0]["tool_choice"] == "required"
    assert bodies[1].get("tool_choice", "auto") == "auto"


@pytest.mark.parametrize("kind", ["function_calling", "function"])
async def test_early_answer_over_openai_sends_no_unanswered_tool_call(
    kind: str, openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """'generate' at the bound: every tool call OpenAI is sent has its tool message after it."""
    route = openai_api.post(CHAT_URL).mock(
        side_effect=[
            completion(None, [("call_1", "order_status", {"order_id": 1})]),
            completion(None, [("call_2", "order_status", {"order_id": 2})]),
            completion("order 1 shipped; 2 unknown."),
        ]
    )
    agent = build(kind, openai_llm, tools=[order_status], streaming=False)
    result = await start(
        kind, agent, "1 and 2?", max_iterations=2, early_stopping_method="generate"
    )
    assert str(result) == "order 1 shipped; 2 unknown."
    last = sent_messages(route.calls[2].request)
    assert "maximum number of iterations (2)" in last[-1]["content"]
    for i, message in enumerate(last):
        for call in message.get("tool_calls") or []:
            assert last[i + 1]["role"] == "tool"
            assert last[i + 1]["tool_call_id"] == call["id"]


@pytest.mark.parametrize("kind", ["function_calling", "react", "function"])
async def test_arguments_keep_their_types_over_openai(
    kind: str, openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """The JSON arguments OpenAI sends reach the tool with the model's types, or converted."""
    got: list[tuple[Any, Any]] = []

    def record(x: float, n: int) -> str:
        """Record the arguments."""
        got.append((x, n))
        return "ok"

    if kind == "react":
        first = completion(tool_call(kind, "record", x=42, n="3"))
    else:
        first = completion(None, [("call_1", "record", {"x": 42, "n": "3"})])
    openai_api.post(CHAT_URL).mock(side_effect=[first, openai_answer(kind, "done")])
    await start(kind, build(kind, openai_llm, tools=[record], streaming=False), "go")
    assert got == [(42, 3)] and type(got[0][0]) is int


@pytest.mark.parametrize("kind", ["function_calling", "react", "function", "codeact"])
async def test_streamed_openai_events_carry_the_raw_chunks(
    kind: str, openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """Over OpenAI's SSE stream, each AgentStream has the text so far and the provider's chunk."""
    from openai_mock import stream

    openai_api.post(CHAT_URL).mock(
        return_value=stream(["Par", "is"]) if kind != "react" else stream(["Answer: ", "Par", "is"])
    )
    events, result = await events_and_result(start(kind, build(kind, openai_llm), "Capital?"))
    assert str(result) == "Paris"
    streams = [e for e in events if isinstance(e, AgentStream)]
    assert [e.delta for e in streams if e.delta][-2:] == ["Par", "is"]
    assert streams[-1].response.endswith("Paris")
    assert all(e.current_agent_name == "solo" for e in streams)
    assert all(isinstance(e.raw, dict) and "choices" in e.raw for e in streams)
