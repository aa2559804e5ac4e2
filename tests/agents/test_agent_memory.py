"""chat_history= arguments, old contexts, and the memory restored in another process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


SNAPSHOT_SCRIPT = r"""
import asyncio, json, sys
from batonflow.agents import FunctionAgent, FunctionCallingAgent, ReActAgent
from batonflow.agents.testing import ScriptedLLM
from batonflow.core import Context

cls = {"react": ReActAgent, "fc": FunctionCallingAgent, "fa": FunctionAgent}[sys.argv[2]]


async def main():
    if sys.argv[1] == "save":
        handler = cls(llm=ScriptedLLM(["Answer: Hi Ada."])).run(user_msg="I am Ada.")
        await handler
        json.dump(handler.ctx.to_dict(), open(sys.argv[3], "w"))
    else:
        llm = ScriptedLLM(["Answer: You are Ada."])
        agent = cls(llm=llm)
        ctx = Context.from_dict(agent, json.load(open(sys.argv[3])))
        print(await agent.run(user_msg="Who am I?", ctx=ctx))
        print(json.dumps([m.content for m in llm.calls[0] if m.role.value != "system"]))


asyncio.run(main())
"""


@pytest.mark.parametrize("kind", ["react", "fc", "fa"])
def test_a_snapshot_continues_the_conversation_in_another_process(
    kind: str, tmp_path: Path
) -> None:
    """The default memory is restored by a process that did not write it (a trusted type)."""
    script = tmp_path / "snapshot.py"
    script.write_text(SNAPSHOT_SCRIPT)
    data = tmp_path / "ctx.json"
    for phase in ("save", "load"):
        done = subprocess.run(
            [sys.executable, str(script), phase, kind, str(data)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    answer, sent = done.stdout.strip().splitlines()
    assert answer.endswith("You are Ada.")
    assert json.loads(sent)[0] == "I am Ada."
    assert json.loads(sent)[-1] == "Who am I?"
