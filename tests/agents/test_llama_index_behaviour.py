"""Issue 27's "what differs from llama-index", agent items: each checked on every agent class.

The ways of calling ``run()`` (positional arguments), the tool calls on the streamed
``AgentOutput``, the texts a handoff and the shared state show the LLM, the tool messages sent
to the LLM, ``ToolCallResult``'s fields, and the history a run on one ``Context`` sends. Where
llama-index-core (installed with batonflow's agents extra) has the thing compared, the test
compares with it directly.
"""

from __future__ import annotations

from typing import Any

import llama_index.core.agent.workflow as li
import pytest
from batonflow.agents import (
    AgentOutput,
    AgentWorkflow,
    ChatMemory,
    FunctionAgent,
    ToolCallResult,
)
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from batonflow.core import Context
from llama_index.core.agent.workflow import prompts as li_prompts
from llama_index.core.llms import ChatMessage
from test_agent_parity import KINDS, TOOL_KINDS, answer, build, tool_call


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def contents(messages: list[ChatMessage]) -> list[str | None]:
    return [m.content for m in messages]


# -- 1. run()'s positional arguments, as llama-index takes them ------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_positional_message_with_ctx_keyword(kind: str) -> None:
    """``agent.run("question", ctx=ctx)`` (the ReAct notebooks' form) continues the context."""
    llm = ScriptedLLM([answer(kind, "Hello Ada."), answer(kind, "You are Ada.")])
    agent = build(kind, llm)
    handler = agent.run("I am Ada.")
    await handler
    result = await agent.run("Who am I?", ctx=handler.ctx)
    assert str(result) == "You are Ada."
    assert "I am Ada." in contents(llm.calls[1])
    assert llm.calls[1][-1].content == "Who am I?"


@pytest.mark.parametrize("kind", KINDS)
async def test_positional_message_history_memory_ctx(kind: str) -> None:
    """``run(user_msg, chat_history, memory, ctx)`` by position, llama-index's order."""
    llm = ScriptedLLM([answer(kind, "one"), answer(kind, "two"), answer(kind, "three")])
    agent = build(kind, llm)
    history = [
        ChatMessage(role="user", content="Earlier question"),
        ChatMessage(role="assistant", content="Earlier answer"),
    ]
    await agent.run("First", history)
    assert contents(llm.calls[0])[-3:] == ["Earlier question", "Earlier answer", "First"]
    memory = ChatMemory.from_defaults()
    await agent.run("Second", None, memory)
    assert contents(memory.get_all()) == ["Second", "two"]
    ctx = Context(agent)
    await agent.run("Third", None, None, ctx)
    assert contents((await ctx.store.get("memory")).get_all()) == ["Third", "three"]


@pytest.mark.parametrize("kind", ["react", "function", "workflow"])
def test_positional_argument_given_twice_is_refused(kind: str) -> None:
    """A message both by position and by keyword is a TypeError naming the argument."""
    agent = build(kind, ScriptedLLM())
    with pytest.raises(TypeError, match="user_msg both by position and by keyword"):
        agent.run("a", user_msg="b")
    with pytest.raises(TypeError, match="at most 4 positional"):
        agent.run("a", None, None, None, None)


# -- 2. the streamed AgentOutput of the answer carries that turn's tool calls only ----------


@pytest.mark.parametrize("kind", TOOL_KINDS)
async def test_last_streamed_output_has_only_its_turns_tool_calls(kind: str) -> None:
    """The answering turn's AgentOutput has ``tool_calls == []``; the run's result has all."""
    llm = ScriptedLLM([tool_call(kind, "add", a=1, b=2), answer(kind, "3")])
    handler = build(kind, llm, tools=[add]).run("1 + 2?")
    outputs = [ev async for ev in handler.stream_events() if isinstance(ev, AgentOutput)]
    result = await handler
    # Read after the run ended: nothing written later changed what was streamed.
    assert [[c.tool_name for c in o.tool_calls] for o in outputs] == [["add"], []]
    assert [o.is_final for o in outputs] == [False, True]
    assert [c.tool_name for c in result.tool_calls] == ["add"]


# -- 3. the texts the LLM is shown: handoff, its tool, the state, early stopping -----------


def _handoff_workflow(llm: ScriptedLLM) -> AgentWorkflow:
    first = FunctionAgent(name="first", description="Starts.", llm=llm, can_handoff_to=["second"])
    second = FunctionAgent(name="second", description="Finishes.", llm=llm)
    third = FunctionAgent(name="third", description="Never used.", llm=llm)
    return AgentWorkflow(agents=[first, second, third], root_agent="first", initial_state={"n": 1})


async def test_handoff_texts_are_llama_indexs() -> None:
    """The handoff result, the handoff tool's description and the state are llama-index's."""
    handoff = ScriptedToolCall("handoff", {"to_agent": "second", "reason": "it knows"}, id="h1")
    llm = ScriptedLLM([ScriptedResponse(tool_calls=[handoff]), "done"])
    await _handoff_workflow(llm).run(user_msg="Go")
    tool_message = llm.calls[1][-1]
    assert tool_message.role.value == "tool"
    assert tool_message.content == li_prompts.DEFAULT_HANDOFF_OUTPUT_PROMPT.format(
        to_agent="second", reason="it knows"
    )
    assert llm.calls[0][-1].content == li_prompts.DEFAULT_STATE_PROMPT.format(
        state={"n": 1}, msg="Go"
    )
    described = _handoff_workflow(llm).get_tools(_handoff_workflow(llm).agents["first"])[-1]
    assert described.metadata.description == li_prompts.DEFAULT_HANDOFF_PROMPT.format(
        agent_info=str({"second": "Finishes."})
    )


@pytest.mark.parametrize("kind", TOOL_KINDS)
async def test_early_stopping_prompt_is_llama_indexs(kind: str) -> None:
    """``early_stopping_method="generate"`` shows the LLM llama-index's instruction."""
    llm = ScriptedLLM([tool_call(kind, "add", a=1, b=1), "2, as far as I got."])
    handler = build(kind, llm, tools=[add]).run(
        "loop", max_iterations=1, early_stopping_method="generate"
    )
    await handler
    assert llm.calls[-1][-1].content == li_prompts.DEFAULT_EARLY_STOPPING_PROMPT.format(
        max_iterations=1
    )


# -- 4. the tool messages sent to the LLM ---------------------------------------------------


@pytest.mark.parametrize("kind", ["function_calling", "function", "workflow"])
async def test_tool_message_carries_only_the_call_id(kind: str) -> None:
    """A tool result goes to the LLM with ``additional_kwargs == {"tool_call_id": ...}``."""
    call = ScriptedToolCall("add", {"a": 2, "b": 3}, id="call-7")
    llm = ScriptedLLM([ScriptedResponse(tool_calls=[call]), "5"])
    await build(kind, llm, tools=[add]).run("2 + 3?")
    tool_message = llm.calls[1][-1]
    assert tool_message.role.value == "tool"
    assert tool_message.content == "5"
    assert tool_message.additional_kwargs == {"tool_call_id": "call-7"}


# -- 5. ToolCallResult has llama-index's fields --------------------------------------------


def test_tool_call_result_fields_are_llama_indexs() -> None:
    """Its fields are llama-index's plus the documented ``current_agent_name``."""
    ours = set(ToolCallResult.model_fields)
    assert ours == set(li.ToolCallResult.model_fields) | {"current_agent_name"}
    result = ToolCallResult(
        tool_name="add", tool_kwargs={}, tool_id="1", tool_output="boom", is_error=True
    )
    assert "is_error=True, return_direct" not in repr(result)
    assert result.is_error is True and result.tool_output.is_error is True
    assert "is_error" not in result.model_dump()


# -- 10. the history a run on one Context sends the LLM -------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", ["ctx", "handler.ctx", "to_dict", "memory", "chat_history"])
async def test_each_way_of_continuing_sends_the_conversation(kind: str, how: str) -> None:
    """Every documented way of continuing sends the earlier turns (llama-index's docs' promise).

    llama-index-core 0.14.25 drops the conversation between runs on one ``Context`` (its
    memory is not kept by the context's state); docs/compat.md says why batonflow keeps it.
    """
    llm = ScriptedLLM([answer(kind, "a1"), answer(kind, "a2")])
    agent = build(kind, llm)
    memory = ChatMemory.from_defaults()
    options: dict[str, Any] = {"memory": memory} if how == "memory" else {}
    ctx = Context(agent)
    if how == "ctx":
        options["ctx"] = ctx
    handler = agent.run("q1", **options)
    await handler
    if how == "handler.ctx":
        options["ctx"] = handler.ctx
    elif how == "to_dict":
        options["ctx"] = Context.from_dict(agent, handler.ctx.to_dict())
    elif how == "chat_history":
        options["chat_history"] = [
            ChatMessage(role="user", content="q1"),
            ChatMessage(role="assistant", content="a1"),
        ]
    await agent.run("q2", **options)
    sent = [m for m in llm.calls[1] if m.role.value != "system"]
    assert [m.role.value for m in sent] == ["user", "assistant", "user"]
    assert [m.content for m in sent][-1] == "q2"
