"""chat_history= arguments, and contexts saved before the conversation moved into memory."""

from __future__ import annotations

import pytest
from batonflow.agents import AgentInputError, ReActAgent
from batonflow.agents.events import history_messages
from batonflow.agents.testing import ScriptedLLM
from batonflow.core import Context
from llama_index.core.llms import ChatMessage


def test_history_messages_accepts_messages_and_dicts() -> None:
    """chat_history= may mix ChatMessage and role/content dicts."""
    out = history_messages(
        [ChatMessage(role="user", content="a"), {"role": "assistant", "content": "b"}], "ReActAgent"
    )
    assert [(m.role.value, m.content) for m in out] == [("user", "a"), ("assistant", "b")]


@pytest.mark.parametrize("bad", [pytest.param("text", id="str"), pytest.param([42], id="int-item")])
def test_history_messages_refuses_other_values(bad: object) -> None:
    """Anything else is a clear input error naming the argument."""
    with pytest.raises(AgentInputError, match=r"ReActAgent\.run\(chat_history=\.\.\.\)"):
        history_messages(bad, "ReActAgent")


async def test_a_context_with_the_old_chat_history_key_continues_the_conversation() -> None:
    """A context saved by an older version (history as dicts under chat_history) is read."""
    llm = ScriptedLLM(["Answer: You are Ada."])
    agent = ReActAgent(llm=llm)
    ctx = Context(agent)
    await ctx.store.set(
        "chat_history",
        [{"role": "user", "content": "I am Ada."}, {"role": "assistant", "content": "Hi Ada."}],
    )
    result = await agent.run(input="Who am I?", ctx=ctx)
    assert result.response == "You are Ada."
    assert [m.content for m in llm.calls[0][1:]] == ["I am Ada.", "Hi Ada.", "Who am I?"]
    assert await ctx.store.get("chat_history") is None
    assert len((await ctx.store.get("memory")).get_all()) == 4
