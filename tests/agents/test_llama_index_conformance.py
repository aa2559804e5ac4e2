"""What llama-index-core's own agent tests rely on, checked here without its test files.

``bench/agents_conformance.py`` runs llama-index-core's ``tests/agent/workflow/`` against
batonflow.agents (it needs a snapshot of llama_index, which CI has not); each behaviour it
showed missing and that batonflow now offers is tested here in the same shape.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Any

import pytest
from batonflow.agents import (
    AgentOutput,
    AgentStream,
    AgentWorkflow,
    AgentWorkflowStartEvent,
    BaseWorkflowAgent,
    ChatMemory,
    FunctionAgent,
    ReActAgent,
    ToolCall,
    ToolCallResult,
)
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from batonflow.core import Context
from batonflow.core.errors import WorkflowRuntimeError
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, LLMMetadata
from llama_index.core.llms import MockLLM
from llama_index.core.prompts import PromptTemplate
from llama_index.core.tools import ToolOutput, ToolSelection
from pydantic import BaseModel
from test_agent_parity import KINDS, answer, build, start, tool_call


class ToolsByMetadataLLM(MockLLM):
    """An LLM that is no ``FunctionCallingLLM`` but says it calls tools and has the methods.

    The shape of the mock LLMs of llama-index-core's agent tests (``TestLLM``,
    ``MockThinkingLLM``): a plain ``LLM`` with ``astream_chat_with_tools`` and
    ``get_tool_calls_from_response``, and metadata that says ``is_function_calling_model``.
    """

    def __init__(self, replies: Sequence[ChatMessage]) -> None:
        super().__init__()
        self._replies = list(replies)
        self._sent: list[list[ChatMessage]] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(is_function_calling_model=True)

    async def astream_chat_with_tools(  # type: ignore[no-untyped-def]
        self, tools: list[Any], chat_history: list[ChatMessage], **kwargs: Any
    ):
        self._sent.append(list(chat_history))
        reply = self._replies.pop(0)

        async def gen() -> AsyncGenerator[ChatResponse, None]:
            yield ChatResponse(message=reply, delta=reply.content)

        return gen()

    def get_tool_calls_from_response(
        self, response: ChatResponse, error_on_no_tool_call: bool = False, **kwargs: Any
    ) -> list[ToolSelection]:
        calls: list[ToolSelection] = response.message.additional_kwargs.get("tool_calls", [])
        return calls


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _replies() -> list[ChatMessage]:
    call = ToolSelection(tool_id="c1", tool_name="add", tool_kwargs={"a": 2, "b": 3})
    return [
        ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": [call]}),
        ChatMessage(role="assistant", content="It is 5."),
    ]


@pytest.mark.parametrize("streaming", [True, False])
async def test_function_agent_takes_an_llm_that_says_it_calls_tools(streaming: bool) -> None:
    """A plain LLM whose metadata says it calls tools runs FunctionAgent, as in llama-index.

    Streamed or not: with only ``astream_chat_with_tools`` the unstreamed call streams too.
    """
    llm = ToolsByMetadataLLM(_replies())
    agent = FunctionAgent(tools=[add], llm=llm, streaming=streaming)
    handler = agent.run(user_msg="2 + 3?")
    deltas = [e.delta async for e in handler.stream_events() if isinstance(e, AgentStream)]
    output = await handler
    assert str(output) == "It is 5."
    assert [c.tool_name for c in output.tool_calls] == ["add"]
    assert [m.role.value for m in llm._sent[1]][-3:] == ["user", "assistant", "tool"]
    assert ("It is 5." in deltas) is streaming


class Structure(BaseModel):
    """The structured output of the next test."""

    hello: str
    world: int


async def test_a_workflows_structured_output_fn_wins_over_its_agents_output_cls() -> None:
    """The workflow's option is used when it has one, whichever kind; else the agent's."""

    def by_fn(messages: list[ChatMessage]) -> dict[str, Any]:
        return {"hello": "bonjour", "world": 2}

    structured = ScriptedResponse(
        tool_calls=[ScriptedToolCall("Structure", {"hello": "hi", "world": 1})]
    )
    llm = ScriptedLLM(["Done.", "Done.", structured])
    agent = FunctionAgent(name="a", llm=llm, output_cls=Structure)
    workflow = AgentWorkflow(agents=[agent], root_agent="a", structured_output_fn=by_fn)
    output = await workflow.run(user_msg="test")
    assert output.get_pydantic_model(Structure) == Structure(hello="bonjour", world=2)
    alone = await AgentWorkflow(agents=[agent], root_agent="a").run(user_msg="test")
    assert alone.get_pydantic_model(Structure) == Structure(hello="hi", world=1)


@pytest.mark.parametrize("kind", KINDS)
async def test_max_iterations_error_says_what_llama_indexs_says(kind: str) -> None:
    """The error has llama-index's words (its tests match them) and still batonflow's fix."""

    def looping(i: int) -> Any:
        if kind == "codeact":
            return f"<execute>\nprint({i})\n</execute>"
        return tool_call(kind, "add", a=i, b=i)

    agent = build(kind, ScriptedLLM([looping(1), looping(2)]), tools=[add])
    with pytest.raises(WorkflowRuntimeError, match="Either something went wrong") as info:
        await start(kind, agent, "loop", max_iterations=2)
    assert "early_stopping_method='generate'" in str(info.value)
    assert "Max iterations of 2 reached!" in str(info.value)


def test_several_agents_without_a_root_say_what_llama_index_says() -> None:
    """llama-index's ``ValueError`` text first, then which names root_agent= may take."""
    agents = [FunctionAgent(name=n, description="test", llm=ScriptedLLM([])) for n in "ab"]
    with pytest.raises(ValueError, match="Exactly one root agent must be provided") as info:
        AgentWorkflow(agents=agents)
    assert "root_agent=" in str(info.value)


@pytest.mark.parametrize("kind", ["react", "function_calling"])
async def test_a_standalone_agents_tool_calls_have_llama_indexs_tool_output(kind: str) -> None:
    """``response.tool_calls[i].tool_output`` works as on llama-index's ``ToolCallResult``.

    llama-index's ReAct notebook prints each call's ``tool_output``; the standalone agents'
    records give the same ``ToolOutput`` (content, name, input, error flag).
    """
    llm = ScriptedLLM([tool_call(kind, "add", a=2, b=3), answer(kind, "It is 5.")])
    result = await start(kind, build(kind, llm, tools=[add]), "2 + 3?")
    (record,) = result.tool_calls
    assert str(record.tool_output) == "5"
    assert record.tool_output.tool_name == "add"
    assert record.tool_output.raw_input == {"args": (), "kwargs": {"a": 2, "b": 3}}
    assert record.tool_output.is_error is False


@pytest.mark.parametrize("kind", ["function", "workflow"])
async def test_a_runs_result_lists_its_tool_calls_as_results(kind: str) -> None:
    """``(await agent.run(...)).tool_calls`` are ``ToolCallResult`` objects, as in llama-index.

    Its guides print ``response.tool_calls`` (each with ``tool_output``); the streamed
    ``AgentOutput`` of a turn keeps ``ToolSelection`` objects. The result survives a round trip
    through JSON with its types.
    """
    llm = ScriptedLLM([tool_call(kind, "add", a=2, b=3), answer(kind, "It is 5.")])
    output = await start(kind, build(kind, llm, tools=[add]), "2 + 3?")
    (result,) = output.tool_calls
    assert isinstance(result, ToolCallResult)
    assert (result.tool_name, result.tool_kwargs, str(result.tool_output)) == (
        "add",
        {"a": 2, "b": 3},
        "5",
    )
    again = AgentOutput.model_validate(output.model_dump(mode="json"))
    assert isinstance(again.tool_calls[0], ToolCallResult)
    assert str(again.tool_calls[0].tool_output) == "5"


def test_the_start_events_dict_messages_become_chat_messages() -> None:
    """``AgentWorkflowStartEvent(chat_history=[{...}])`` holds ChatMessages, as llama-index's."""
    event = AgentWorkflowStartEvent(
        user_msg="Hello, world!",
        chat_history=[{"role": "user", "content": "Hello, world!"}],
        max_iterations=10,
    )
    (message,) = event.chat_history or []
    assert isinstance(message, ChatMessage)
    assert (message.role.value, message.content) == ("user", "Hello, world!")
    again = AgentWorkflowStartEvent.model_validate(event.model_dump(mode="json"))
    assert again.chat_history == event.chat_history


async def test_a_react_agents_header_is_read_and_replaced_as_in_llama_index() -> None:
    """``get_prompts()`` / ``update_prompts()`` on ``react_header``, as llama-index's tests do.

    A header written for llama-index (``{tool_desc}``, ``{tool_names}``, ``{{`` escapes) is
    what the next run's LLM is shown; other agents have no prompts; a wrong name is refused.
    """
    llm = ScriptedLLM(["Thought: I can answer.\nAnswer: 5"])
    agent = ReActAgent(llm=llm, tools=[add])
    (name,) = agent.get_prompts()
    assert name == "react_header"
    assert isinstance(agent.get_prompts()["react_header"], PromptTemplate)
    agent.update_prompts({"react_header": "New prompt"})
    assert "New prompt" in str(agent.get_prompts()["react_header"])
    header = PromptTemplate('Tools:\n{tool_desc}\nOne of {tool_names}, e.g. {{"a": 1}}')
    agent.update_prompts({"react_header": header})
    assert agent.get_prompts()["react_header"] == header
    await agent.run(input="2 + 3?")
    system = llm.calls[0][0].content or ""
    assert system.startswith("Tools:\n") and 'One of add, e.g. {"a": 1}' in system
    assert "add" in system.split("\n")[1]
    assert FunctionAgent(llm=ScriptedLLM([])).get_prompts() == {}
    with pytest.raises(ValueError, match=r"no prompt named 'header' \(its prompts: react_header\)"):
        agent.update_prompts({"header": "x"})


@pytest.mark.parametrize("kind", ["function", "react", "codeact"])
async def test_a_turn_is_driven_by_hand_with_llama_indexs_memory_argument(kind: str) -> None:
    """``take_step(..., memory=)``, ``handle_tool_call_results(ctx, results, memory)`` and
    ``finalize(ctx, output, memory)`` called by hand, as llama-index's agent tests do."""
    first = (
        "Let me.\n<execute>\nprint(2 + 2)\n</execute>"
        if kind == "codeact"
        else tool_call(kind, "add", a=2, b=2)
    )
    agent = build(kind, ScriptedLLM([first]), tools=[add])
    ctx = Context(agent)
    events: list[Any] = []
    ctx.write_event_to_stream = events.append  # type: ignore[method-assign]  # as llama-index's tests
    memory = ChatMemory()
    output = await agent.take_step(
        ctx=ctx,
        llm_input=[ChatMessage(role="user", content="2 + 2?")],
        tools=list(agent.tools.values()),
        memory=memory,
    )
    (call,) = output.tool_calls
    result = ToolCallResult(
        tool_id=call.tool_id,
        tool_name=call.tool_name,
        tool_kwargs=call.tool_kwargs,
        tool_output=ToolOutput(content="4", tool_name=call.tool_name, raw_input={}, raw_output=4),
        return_direct=False,
    )
    await agent.handle_tool_call_results(ctx, [result], memory)
    scratchpad = await ctx.store.get("scratchpad")
    assert len(scratchpad) == 2 and "4" in (scratchpad[1].content or "")
    await agent.finalize(ctx, output, memory)
    assert len(await memory.aget_all()) == 2


class EchoAgent(BaseWorkflowAgent):
    """A custom agent written for llama-index: it calls ``add`` once, then answers."""

    async def take_step(self, ctx, llm_input, tools, memory):  # type: ignore[no-untyped-def]
        seen = await ctx.store.get("seen", default=[])
        if not seen:
            call = ToolSelection(tool_id="e1", tool_name="add", tool_kwargs={"a": 1, "b": 2})
            return AgentOutput(
                response=ChatMessage(role="assistant", content=""),
                tool_calls=[call],
                current_agent_name=self.name,
            )
        text = f"{llm_input[-1].content} -> {seen[0]}; memory {len(await memory.aget())}"
        return AgentOutput(
            response=ChatMessage(role="assistant", content=text), current_agent_name=self.name
        )

    async def handle_tool_call_results(self, ctx, results, memory):  # type: ignore[no-untyped-def]
        await ctx.store.set("seen", [str(r.tool_output) for r in results])

    async def finalize(self, ctx, output, memory):  # type: ignore[no-untyped-def]
        await memory.aput(ChatMessage(role="assistant", content=str(output)))
        return output


@pytest.mark.parametrize("where", ["alone", "workflow"])
async def test_a_custom_agent_written_for_llama_index_runs_the_same(where: str) -> None:
    """A ``BaseWorkflowAgent`` subclass with llama-index's signatures answers as there.

    The class is llama-index's shape, imports changed; on llama-index-core 0.14.25 it answers
    ``"hi -> 3; memory 1"`` with one ``add`` call too (checked by hand: its run warns of a
    pydantic deprecation, which this suite turns into an error).
    """
    agent = EchoAgent(name="echo", description="Echoes.", tools=[add], llm=ScriptedLLM([]))
    runner = agent if where == "alone" else AgentWorkflow(agents=[agent])
    output = await runner.run(user_msg="hi")
    assert str(output) == "hi -> 3; memory 1"
    assert [c.tool_name for c in output.tool_calls] == ["add"]


class ThinkingLLM(ToolsByMetadataLLM):
    """Streams two chunks, each with a ``thinking_delta`` (as Ollama's do), with tools or not."""

    async def astream_chat_with_tools(  # type: ignore[no-untyped-def]
        self, tools: list[Any], chat_history: list[ChatMessage], **kwargs: Any
    ):
        return self._thinking()

    async def astream_chat(self, messages: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._thinking()

    async def _thinking(self) -> AsyncGenerator[ChatResponse, None]:
        for i, piece in enumerate(["Hello", " there"]):
            yield ChatResponse(
                message=ChatMessage(role="assistant", content=piece),
                delta=piece,
                additional_kwargs={"thinking_delta": f"step {i}" if i else None},
            )


@pytest.mark.parametrize("tools", [[], [add]], ids=["no-tools", "tools"])
async def test_the_streamed_chunks_carry_the_thinking_delta(tools: list[Any]) -> None:
    """What ``test_thinking_delta.py`` checks through a private method, through the stream."""
    agent = FunctionAgent(llm=ThinkingLLM([]), tools=tools)
    handler = agent.run(user_msg="hi")
    streams = [e async for e in handler.stream_events() if isinstance(e, AgentStream)]
    await handler
    assert [(e.delta, e.thinking_delta) for e in streams] == [("Hello", None), (" there", "step 1")]


def test_printed_tool_events_read_as_llama_indexs() -> None:
    """``print(event)`` of a ToolCall / ToolCallResult prints llama-index's text.

    ``current_agent_name`` is still there (a field, serialized), but not in the repr.
    """
    import llama_index.core.agent.workflow as li

    fields: dict[str, Any] = {"tool_name": "add", "tool_kwargs": {"a": 1}, "tool_id": "c1"}
    output = ToolOutput(content="2", tool_name="add", raw_input={}, raw_output=2)
    ours = ToolCall(**fields, current_agent_name="calc")
    theirs = li.ToolCall(**fields)
    assert (str(ours), repr(ours)) == (str(theirs), repr(theirs))
    result = ToolCallResult(**fields, tool_output=output, return_direct=False)
    li_result = li.ToolCallResult(**fields, tool_output=output, return_direct=False)
    assert (str(result), repr(result)) == (str(li_result), repr(li_result))
    assert ours.current_agent_name == "calc"
    assert ours.model_dump()["current_agent_name"] == "calc"
