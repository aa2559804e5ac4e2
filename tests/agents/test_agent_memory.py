"""Chat messages round-trip through plain dicts (the agents' memory in ctx.store)."""

from __future__ import annotations

import json

import pytest
from batonflow.agents import AgentInputError
from batonflow.agents.memory import coerce_history, message_from_dict, message_to_dict
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage, TextBlock


def test_plain_text_messages_are_compact() -> None:
    """A text message is stored as {'role', 'content'} and read back equal."""
    msg = ChatMessage(role="user", content="hi")
    data = message_to_dict(msg)
    assert data == {"role": "user", "content": "hi"}
    assert message_from_dict(json.loads(json.dumps(data))) == msg


def test_tool_call_messages_round_trip_through_json() -> None:
    """An assistant message with tool calls and a tool result survive JSON."""
    call = ChatMessage(
        role="assistant",
        blocks=[
            TextBlock(text="let me see"),
            ToolCallBlock(tool_call_id="c1", tool_name="add", tool_kwargs={"a": 1}),
        ],
    )
    result = ChatMessage(role="tool", content="2", additional_kwargs={"tool_call_id": "c1"})
    for msg in (call, result):
        assert message_from_dict(json.loads(json.dumps(message_to_dict(msg)))) == msg


def test_coerce_history_accepts_messages_and_dicts() -> None:
    """chat_history= may mix ChatMessage and dicts."""
    out = coerce_history(
        [ChatMessage(role="user", content="a"), {"role": "assistant", "content": "b"}], "ReActAgent"
    )
    assert out == [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]


@pytest.mark.parametrize("bad", [pytest.param("text", id="str"), pytest.param([42], id="int-item")])
def test_coerce_history_refuses_other_values(bad: object) -> None:
    """Anything else is a clear input error."""
    with pytest.raises(AgentInputError, match=r"ReActAgent\.run\(chat_history=\.\.\.\)"):
        coerce_history(bad, "ReActAgent")


def test_message_cache_builds_each_message_once_and_stays_bounded() -> None:
    """The same history dict gives the same ChatMessage; a copy is converted anew; LRU bound."""
    from batonflow.agents.memory import MessageCache

    cache = MessageCache(size=2)
    a, b, c = ({"role": "user", "content": x} for x in "abc")
    first = cache.messages([a, b])
    assert [m.content for m in first] == ["a", "b"]
    again = cache.messages([a, b])
    assert again[0] is first[0] and again[1] is first[1]
    assert cache.messages([dict(a)])[0] is not first[0]  # a copy is another dict
    cache.messages([c])
    assert cache.messages([b])[0] is not first[1]  # b was evicted (size 2)
    passthrough = ChatMessage(role="user", content="z")
    assert cache.messages([passthrough])[0] is passthrough
