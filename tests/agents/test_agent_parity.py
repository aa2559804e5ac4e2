"""Every agent class against every item of issue 16: one test per item, over every class.

The classes: the standalone ``FunctionCallingAgent`` and ``ReActAgent`` (they return an
``AgentResult``), ``FunctionAgent``, ``AgentWorkflow`` and ``CodeActAgent`` (an
``AgentOutput``). Where an item does not apply to a class, the test checks the documented
divergence instead (docs/agents.md, "What each agent class supports").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from batonflow.agents import (
    AgentConfigurationError,
    AgentInput,
    AgentInputError,
    AgentOutput,
    AgentStream,
    AgentStreamStructuredOutput,
    AgentWorkflow,
    ChatMemory,
    CodeActAgent,
    FunctionAgent,
    FunctionCallingAgent,
    MaxIterationsError,
    ReActAgent,
    StructuredOutputWarning,
    ToolCall,
    ToolCallResult,
)
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from batonflow.core import StopEvent
from batonflow.observability import TracingHandle, configure_tracing
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer, Memory
from llama_index.core.tools import FunctionTool, ToolOutput
from memories import dispose
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from parity_agents import (
    KINDS,
    TOOL_KINDS,
    Weather,
    answer,
    build,
    events_and_result,
    order_status,
    run_code,
    start,
    tool_call,
    weather_reply,
)
from pydantic import BaseModel

# -- 2. structured output ------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_output_cls_on_the_agent(kind: str) -> None:
    """output_cls= on the agent (the workflow for AgentWorkflow) fills structured_response."""
    llm = ScriptedLLM(
        [answer(kind, "18 degrees in Paris."), weather_reply(city="Paris", celsius=18)]
    )
    agent = build(kind, llm, output_cls=Weather)
    events, result = await events_and_result(start(kind, agent, "Weather in Paris?"))
    assert str(result) == "18 degrees in Paris."
    assert result.structured_response == {"city": "Paris", "celsius": 18}
    assert result.get_pydantic_model(Weather) == Weather(city="Paris", celsius=18)
    streamed = [e for e in events if isinstance(e, AgentStreamStructuredOutput)]
    assert [e.output for e in streamed] == [{"city": "Paris", "celsius": 18}]
    # The structured call is made from the conversation, the answer included.
    assert "18 degrees in Paris." in (llm.calls[1][-1].content or "")


@pytest.mark.parametrize("kind", KINDS)
async def test_output_cls_per_run(kind: str) -> None:
    """run(output_cls=...) asks for one run's structured output (and wins over the agent's)."""

    class City(BaseModel):
        name: str

    llm = ScriptedLLM(
        [
            answer(kind, "Rome."),
            ScriptedResponse(tool_calls=[ScriptedToolCall("City", {"name": "Rome"})]),
            answer(kind, "Oslo."),
        ]
    )
    agent = build(kind, llm, output_cls=None if kind == "workflow" else Weather)
    result = await start(kind, agent, "A city?", output_cls=City)
    assert result.structured_response == {"name": "Rome"}
    if kind == "workflow":  # no output_cls of its own: the next run has none
        assert (await start(kind, agent, "Another?")).structured_response is None


@pytest.mark.parametrize("kind", KINDS)
async def test_structured_output_fn(kind: str) -> None:
    """structured_output_fn= gets the final messages; its dict (or model) is the response."""
    seen: list[list[ChatMessage]] = []

    async def summary(messages: list[ChatMessage]) -> dict[str, Any]:
        seen.append(messages)
        return {"last": messages[-1].content, "count": len(messages)}

    agent = build(kind, ScriptedLLM([answer(kind, "done")]), structured_output_fn=summary)
    result = await start(kind, agent, "go")
    assert result.structured_response == {"last": "done", "count": 2}
    assert [m.role.value for m in seen[0]] == ["user", "assistant"]


@pytest.mark.parametrize("kind", KINDS)
def test_output_cls_that_is_not_a_model_is_refused(kind: str) -> None:
    """A class or value that is not a pydantic model is refused when the agent is built."""
    owner = "AgentWorkflow" if kind == "workflow" else None
    with pytest.raises(
        AgentConfigurationError,
        match=rf"{owner or ''}.*\(output_cls=\.\.\.\) must be a pydantic BaseModel subclass, "
        r"got <class 'dict'>; define class Answer\(BaseModel\)",
    ):
        build(kind, ScriptedLLM(), output_cls=dict)
    with pytest.raises(AgentConfigurationError, match=r"structured_output_fn=\.\.\.\) must be"):
        build(kind, ScriptedLLM(), structured_output_fn="summary")


@pytest.mark.parametrize("kind", KINDS)
async def test_run_output_cls_that_is_not_a_model_is_refused(kind: str) -> None:
    """run(output_cls=...) with a non-model fails the run with the fix in the message."""
    agent = build(kind, ScriptedLLM([answer(kind, "x")]))
    with pytest.raises(
        AgentInputError, match=r"\.run\(output_cls=\.\.\.\) must be a pydantic BaseModel subclass"
    ):
        await start(kind, agent, "go", output_cls=42)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_reply_that_does_not_validate_warns_and_keeps_the_answer(kind: str) -> None:
    """As in llama-index: the answer stands, structured_response is None, a warning says why."""
    llm = ScriptedLLM([answer(kind, "Hot."), weather_reply(city="Nowhere")])
    agent = build(kind, llm, output_cls=Weather)
    with pytest.warns(
        StructuredOutputWarning,
        match=r"(?s)structured output \(Weather\) could not be made: .*celsius.*"
        r"to fix it, make the model's fields",
    ):
        result = await start(kind, agent, "?")
    assert str(result) == "Hot."
    assert result.structured_response is None
    assert result.get_pydantic_model(Weather) is None


# -- 3. memory -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("memory_kind", ["Memory", "ChatMemoryBuffer"])
async def test_llama_index_memories_are_used_as_they_are(kind: str, memory_kind: str) -> None:
    """run(memory=...) takes llama-index's memories; their own token limit trims the history."""
    memory = (
        Memory.from_defaults(session_id="s", token_limit=60)
        if memory_kind == "Memory"
        else ChatMemoryBuffer.from_defaults(token_limit=60)
    )
    llm = ScriptedLLM([answer(kind, "first answer " * 40), answer(kind, "second")])
    agent = build(kind, llm)
    try:
        await start(kind, agent, "first question " * 40, memory=memory)
        result = await start(kind, agent, "second question", memory=memory)
        assert str(result) == "second"
        sent = [m.content for m in llm.calls[1] if m.role.value != "system"]
        assert sent == ["second question"]  # the long first exchange is over the limit
        assert [(m.content or "").strip() for m in await memory.aget_all()] == [
            ("first question " * 40).strip(),
            ("first answer " * 40).strip(),
            "second question",
            "second",
        ]
    finally:
        await dispose(memory)


@pytest.mark.parametrize("kind", KINDS)
async def test_the_default_memory_has_a_token_limit(kind: str) -> None:
    """Thirty long turns on one context: the default memory trims what the LLM is sent."""
    llm = ScriptedLLM()
    agent = build(kind, llm)
    ctx = None
    for turn in range(30):
        llm.add(answer(kind, f"answer {turn} " + "word " * 100))
        handler = start(kind, agent, f"question {turn} " + "word " * 100, ctx=ctx)
        await handler
        ctx = handler.ctx
    memory = await ctx.store.get("memory")
    assert isinstance(memory, ChatMemory)
    assert memory.token_limit == int(llm.metadata.context_window * 0.75)
    assert len(memory.get_all()) == 60
    sent = [m for m in llm.calls[-1] if m.role.value != "system"]
    assert len(sent) < 59  # untrimmed, the last call would carry 59 messages
    assert sent[0].role.value == "user"
    assert sent[-1].content == "question 29 " + "word " * 100


@pytest.mark.parametrize("kind", KINDS)
async def test_a_memory_that_is_not_one_is_refused(kind: str) -> None:
    """run(memory=...) with something else names what to pass."""
    agent = build(kind, ScriptedLLM([answer(kind, "x")]))
    with pytest.raises(
        AgentInputError,
        match=r"\.run\(memory=\.\.\.\) needs a llama-index memory, got list; pass "
        r"Memory\.from_defaults",
    ):
        await start(kind, agent, "go", memory=[])


# -- 4. tool options -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", TOOL_KINDS)
async def test_return_direct_ends_the_run_with_one_llm_call(kind: str) -> None:
    """A return_direct tool's output is the answer: one LLM request, and it stays in memory."""
    llm = ScriptedLLM([tool_call(kind, "order_status", order_id=42)])
    tool = FunctionTool.from_defaults(order_status, return_direct=True)
    handler = start(kind, build(kind, llm, tools=[tool]), "Where is order 42?")
    result = await handler
    assert str(result) == "order 42: shipped"
    assert len(llm.calls) == 1
    memory = await handler.ctx.store.get("memory")
    assert memory.get_all()[-1].content == "order 42: shipped"


@pytest.mark.parametrize("kind", KINDS)
async def test_tool_choice_where_the_llm_has_native_tool_calls(kind: str) -> None:
    """tool_choice= goes to the first call of function-calling agents; text agents refuse it."""
    llm = ScriptedLLM([tool_call(kind, "order_status", order_id=1), answer(kind, "shipped")])
    agent = build(kind, llm, tools=[order_status])
    if kind in ("react", "codeact"):
        with pytest.raises(AgentInputError, match=r"picks its tools in text.*leave tool_choice"):
            await start(kind, agent, "status?", tool_choice="required")
        return
    await start(kind, agent, "status?", tool_choice="required")
    assert [o.get("tool_choice") for o in llm.options] == ["required", None]


@pytest.mark.parametrize("kind", TOOL_KINDS)
async def test_functions_function_tools_and_query_engine_tools_alike(kind: str) -> None:
    """A plain function, a FunctionTool and a QueryEngineTool are offered and called alike."""
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.tools import QueryEngineTool

    index = VectorStoreIndex.from_documents(
        [Document(text="Batonflow passes the baton.")], embed_model=MockEmbedding(embed_dim=8)
    )
    docs = QueryEngineTool.from_defaults(
        index.as_query_engine(llm=ScriptedLLM(["It passes the baton."])),
        name="docs",
        description="Answers questions about batonflow.",
    )

    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    calls = {"docs": {"input": "what?"}, "shout": {"text": "hi"}, "order_status": {"order_id": 7}}
    if kind == "react":
        first: Any = "Thought: all three.\n" + "".join(
            f"Action: {n}\nAction Input: {json.dumps(k)}\n" for n, k in calls.items()
        )
    else:
        first = ScriptedResponse(tool_calls=[ScriptedToolCall(n, k) for n, k in calls.items()])
    llm = ScriptedLLM([first, answer(kind, "ok")])
    tools = [docs, shout, FunctionTool.from_defaults(order_status)]
    events, _ = await events_and_result(start(kind, build(kind, llm, tools=tools), "go"))
    results = {e.tool_name: e for e in events if isinstance(e, ToolCallResult)}
    assert {n: r.tool_output.content for n, r in results.items()} == {
        "docs": "It passes the baton.",
        "shout": "HI",
        "order_status": "order 7: shipped",
    }
    assert not any(r.is_error for r in results.values())


# -- 5. names and event shapes -------------------------------------------------------------


def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


@pytest.mark.parametrize("kind", TOOL_KINDS)
async def test_event_shapes_and_current_agent_name(kind: str) -> None:
    """Every agent event names the agent; shapes are llama-index's (ToolOutput, ChatMessage)."""
    llm = ScriptedLLM([tool_call(kind, "divide", a=1, b=0), answer(kind, "cannot")])
    events, result = await events_and_result(start(kind, build(kind, llm, tools=[divide]), "1/0?"))
    assert str(result) == "cannot"
    agent_events = [e for e in events if not isinstance(e, StopEvent)]
    kinds = {type(e).__name__ for e in agent_events}
    assert {"AgentInput", "AgentStream", "AgentOutput", "ToolCall", "ToolCallResult"} <= kinds
    assert {e.current_agent_name for e in agent_events} == {"solo"}
    inputs = [e for e in events if isinstance(e, AgentInput)]
    assert len(inputs) == 2  # one per LLM call, with the messages sent
    assert all(isinstance(m, ChatMessage) for m in inputs[1].input)
    streams = [e for e in events if isinstance(e, AgentStream)]
    assert {"delta", "response", "tool_calls", "raw", "thinking_delta"} <= set(
        type(streams[0]).model_fields
    )
    assert streams[-1].response.endswith("cannot")
    done = next(e for e in events if isinstance(e, ToolCallResult))
    assert isinstance(done.tool_output, ToolOutput) and done.is_error
    assert "ZeroDivisionError" in done.tool_output.content
    outputs = [e for e in events if isinstance(e, AgentOutput)]
    assert isinstance(outputs[-1].response, ChatMessage)
    assert outputs[-1].response.content == "cannot" and outputs[-1].is_final
    assert [c.tool_name for c in outputs[0].tool_calls] == ["divide"]
    assert next(e for e in events if isinstance(e, ToolCall)).tool_kwargs == {"a": 1, "b": 0}


async def test_codeact_event_shapes_and_current_agent_name() -> None:
    """CodeAct's code run is an ``execute`` ToolCall/ToolCallResult; every event names the agent."""
    llm = ScriptedLLM(["<execute>\nprint(6 * 7)\n</execute>", "42"])
    events, result = await events_and_result(build("codeact", llm).run(user_msg="6*7?"))
    assert str(result) == "42"
    agent_events = [e for e in events if not isinstance(e, StopEvent)]
    assert {e.current_agent_name for e in agent_events if hasattr(e, "current_agent_name")} == {
        "solo"
    }
    assert len([e for e in events if isinstance(e, AgentInput)]) == 2
    done = next(e for e in events if isinstance(e, ToolCallResult))
    assert (done.tool_name, done.tool_output.content) == ("execute", "42\n")
    assert isinstance(done.tool_output, ToolOutput)
    final = [e for e in events if isinstance(e, AgentOutput)][-1]
    assert isinstance(final.response, ChatMessage) and final.response.content == "42"


@pytest.mark.parametrize("kind", KINDS)
async def test_max_iterations_force_and_generate(kind: str) -> None:
    """At the bound 'force' (the default) fails clearly; 'generate' answers with one more call."""

    def looping(i: int) -> Any:
        if kind == "codeact":
            return f"<execute>\nprint({i})\n</execute>"
        return tool_call(kind, "order_status", order_id=i)

    agent = build(kind, ScriptedLLM([looping(1), looping(2)]), tools=[order_status])
    with pytest.raises(MaxIterationsError, match=r"max_iterations=2\).*early_stopping_method"):
        await start(kind, agent, "loop", max_iterations=2)

    llm = ScriptedLLM([looping(1), looping(2), "best answer so far"])
    agent = build(kind, llm, tools=[order_status])
    handler = start(kind, agent, "loop", max_iterations=2, early_stopping_method="generate")
    result = await handler
    assert str(result) == "best answer so far"
    assert len(llm.calls) == 3
    last = llm.calls[-1]
    assert "maximum number of iterations (2)" in (last[-1].content or "")
    # No tool call is sent without its result (providers refuse that).
    for i, message in enumerate(last):
        if message.role.value == "assistant" and getattr(message, "blocks", None):
            if any(type(b).__name__ == "ToolCallBlock" for b in message.blocks):
                assert last[i + 1].role.value == "tool"
    memory = await handler.ctx.store.get("memory")
    assert memory.get_all()[-1].content == "best answer so far"
    with pytest.raises(AgentInputError, match=r"early_stopping_method='later'\) is not known"):
        await start(kind, agent, "x", early_stopping_method="later")


# -- 7. tool-argument types ----------------------------------------------------------------


@pytest.mark.parametrize("kind", TOOL_KINDS)
async def test_arguments_keep_the_type_the_model_sent(kind: str) -> None:
    """42 for a float parameter stays the int 42; "3" for an int parameter becomes 3."""
    got: list[tuple[Any, Any]] = []

    def record(x: float, n: int) -> str:
        """Record the arguments."""
        got.append((x, n))
        return "ok"

    llm = ScriptedLLM([tool_call(kind, "record", x=42, n="3"), answer(kind, "done")])
    await start(kind, build(kind, llm, tools=[record]), "go")
    assert got == [(42, 3)]
    assert type(got[0][0]) is int


# -- 1. handoff: every agent class as a member of an AgentWorkflow -------------------------


@pytest.mark.parametrize("kind", ["function_calling", "react", "function"])
async def test_each_agent_class_hands_off_in_an_agent_workflow(kind: str) -> None:
    """A researcher of each class hands off to a writer, who sees the researcher's findings."""

    async def lookup(topic: str) -> str:
        """Look a topic up."""
        return f"{topic}: 384,400 km"

    llm = ScriptedLLM(
        [
            tool_call(kind, "lookup", topic="Moon"),
            tool_call(kind, "handoff", to_agent="writer", reason="facts are in"),
            "The Moon is 384,400 km away.",
        ]
    )
    cls = {"function_calling": FunctionCallingAgent, "react": ReActAgent}.get(kind, FunctionAgent)
    researcher = cls(
        name="researcher",
        description="Finds facts.",
        tools=[lookup],
        llm=llm,
        can_handoff_to=["writer"],
    )
    writer = FunctionAgent(name="writer", description="Writes the answer.", llm=llm)
    flow = AgentWorkflow(agents=[researcher, writer], root_agent="researcher")
    events, output = await events_and_result(flow.run(user_msg="How far is the Moon?"))
    assert output.current_agent_name == "writer"
    assert str(output) == "The Moon is 384,400 km away."
    assert "Moon: 384,400 km" in " ".join(m.content or "" for m in llm.calls[2])
    names = [e.current_agent_name for e in events if isinstance(e, ToolCallResult)]
    assert names == ["researcher", "researcher"]


async def test_codeact_agent_is_a_handoff_target_but_does_not_hand_off() -> None:
    """A CodeActAgent's tools are called from its code, so it gets no handoff tool call."""
    llm = ScriptedLLM(
        [
            ScriptedResponse(
                tool_calls=[ScriptedToolCall("handoff", {"to_agent": "coder", "reason": "math"})]
            ),
            "<execute>\nprint(6 * 7)\n</execute>",
            "42",
        ]
    )
    lead = FunctionAgent(name="lead", description="Delegates.", llm=llm)
    coder = CodeActAgent(name="coder", description="Computes.", code_execute_fn=run_code, llm=llm)
    flow = AgentWorkflow(agents=[lead, coder], root_agent="lead")
    output = await flow.run(user_msg="6 * 7?")
    assert (output.current_agent_name, str(output)) == ("coder", "42")
    assert llm.calls[2][-1].content == "Result of executing the code given:\n\n42\n"


# -- observability: invoke_agent spans for every class -------------------------------------


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    spans = InMemorySpanExporter()
    handle: TracingHandle = configure_tracing("parity", exporter=spans, span_processor="simple")
    try:
        yield spans
    finally:
        handle.shutdown()


def broken(x: int) -> str:
    """Always fails."""
    raise ValueError("bad x")


@pytest.mark.parametrize("kind", TOOL_KINDS)
async def test_agent_turns_are_invoke_agent_spans(
    kind: str, exporter: InMemorySpanExporter
) -> None:
    """Each LLM turn is an invoke_agent span with gen_ai.agent.name; a tool's error.type is its own."""
    llm = ScriptedLLM([tool_call(kind, "broken", x=1), answer(kind, "failed")])
    await start(kind, build(kind, llm, tools=[broken]), "go")
    spans = list(exporter.get_finished_spans())
    by_id = {s.context.span_id: s for s in spans}
    turns = [s for s in spans if s.name == "invoke_agent solo"]
    assert len(turns) == 2
    assert {s.attributes["gen_ai.agent.name"] for s in turns} == {"solo"}
    chats = [s for s in spans if s.name == "chat scripted"]
    assert {by_id[s.parent.span_id].name for s in chats} == {"invoke_agent solo"}
    tool = next(s for s in spans if s.name == "execute_tool broken")
    assert tool.attributes["error.type"] == "ValueError"
    assert tool.attributes["gen_ai.agent.name"] == "solo"
