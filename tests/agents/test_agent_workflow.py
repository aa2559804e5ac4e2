"""AgentWorkflow and FunctionAgent: llama-index's agent API on our engine (scripted and OpenAI)."""

from __future__ import annotations

import pytest
import respx
from batonflow.agents import (
    AgentConfigurationError,
    AgentInput,
    AgentInputError,
    AgentOutput,
    AgentStream,
    AgentWorkflow,
    FunctionAgent,
    MaxIterationsError,
    ReActAgent,
    ToolCall,
    ToolCallResult,
)
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from batonflow.core import Context
from llama_index.core.llms import ChatMessage
from llama_index.core.tools import FunctionTool, ToolOutput
from llama_index.llms.openai import OpenAI
from openai_mock import CHAT_URL, completion, sent_body, sent_messages, stream


def call(name: str, **kwargs: object) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedToolCall(name, dict(kwargs))])


async def lookup(topic: str) -> str:
    """Look a topic up.

    Args:
        topic: What to look up.
    """
    return f"facts about {topic}: 384,400 km"


def two_agents(llm: ScriptedLLM) -> AgentWorkflow:
    researcher = FunctionAgent(
        name="researcher",
        description="Finds facts with the lookup tool.",
        tools=[lookup],
        llm=llm,
        can_handoff_to=["writer"],
    )
    writer = FunctionAgent(
        name="writer",
        description="Writes the final note.",
        system_prompt="You write short notes.",
        llm=llm,
    )
    return AgentWorkflow(agents=[researcher, writer], root_agent="researcher")


async def test_handoff_keeps_the_history_and_names_every_event() -> None:
    """The writer sees the researcher's tool result; every agent event carries its agent."""
    llm = ScriptedLLM(
        [
            call("lookup", topic="moon"),
            call("handoff", to_agent="writer", reason="facts found"),
            "The Moon is 384,400 km away.",
        ]
    )
    handler = two_agents(llm).run(user_msg="Write a note on the Moon's distance.")
    events = [ev async for ev in handler.stream_events()]
    output = await handler

    assert isinstance(output, AgentOutput)
    assert str(output) == "The Moon is 384,400 km away."
    assert output.response.content == "The Moon is 384,400 km away."
    assert output.current_agent_name == "writer"
    assert [c.tool_name for c in output.tool_calls] == ["lookup", "handoff"]
    writer_input = [m.content for m in llm.calls[2]]
    assert writer_input[0] == "You write short notes."
    assert "facts about moon: 384,400 km" in writer_input
    assert writer_input[1] == "Write a note on the Moon's distance."
    # The writer may hand back (can_handoff_to=None means any other agent).
    assert llm.tools_offered == [["lookup", "handoff"], ["lookup", "handoff"], ["handoff"]]
    names = {
        (type(ev).__name__, ev.current_agent_name)
        for ev in events
        if isinstance(ev, AgentInput | AgentOutput | AgentStream | ToolCall | ToolCallResult)
    }
    assert ("ToolCallResult", "researcher") in names
    assert ("AgentOutput", "writer") in names
    assert ("AgentStream", "writer") in names


async def test_handoff_outside_can_handoff_to_is_refused_to_the_llm() -> None:
    """A handoff to an agent not allowed comes back as an error result; the agent goes on."""
    llm = ScriptedLLM([call("handoff", to_agent="researcher", reason="x"), "I stay."])
    researcher = FunctionAgent(name="researcher", description="Finds.", llm=llm)
    writer = FunctionAgent(name="writer", description="Writes.", llm=llm, can_handoff_to=["editor"])
    editor = FunctionAgent(name="editor", description="Edits.", llm=llm)
    flow = AgentWorkflow(agents=[writer, researcher, editor], root_agent="writer")
    handler = flow.run(user_msg="hi")
    results = [ev async for ev in handler.stream_events() if isinstance(ev, ToolCallResult)]
    output = await handler
    assert results[0].is_error
    assert "cannot hand off to 'researcher'. It may hand off to: editor" in (
        results[0].tool_output.content
    )
    assert output.current_agent_name == "writer"


async def test_initial_state_is_shown_with_the_message_and_tools_can_edit_it() -> None:
    """initial_state lands in ctx.store['state']; a tool with ctx changes it."""

    async def remember(ctx: Context, fact: str) -> str:
        """Remember a fact."""
        async with ctx.store.edit_state() as state:
            state["state"]["facts"].append(fact)
        return "ok"

    llm = ScriptedLLM([call("remember", fact="sky is blue"), "noted"])
    agent = FunctionAgent(tools=[remember], llm=llm)
    flow = AgentWorkflow(agents=[agent], initial_state={"facts": []})
    handler = flow.run(user_msg="remember the sky")
    await handler
    assert await handler.ctx.store.get("state") == {"facts": ["sky is blue"]}
    first = llm.calls[0][-1].content or ""
    assert "{'facts': []}" in first and "remember the sky" in first


async def test_return_direct_tool_ends_the_run_with_one_llm_call() -> None:
    """A return_direct tool's output is the answer: one LLM request, not two."""
    tool = FunctionTool.from_defaults(lookup, return_direct=True)
    llm = ScriptedLLM([call("lookup", topic="mars")])
    output = await FunctionAgent(tools=[tool], llm=llm).run(user_msg="mars?")
    assert output.response.content == "facts about mars: 384,400 km"
    assert len(llm.calls) == 1
    assert llm.remaining == 0


async def test_return_direct_over_openai_makes_one_request(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """Against the OpenAI API too, return_direct=True costs a single request."""
    route = openai_api.post(CHAT_URL).mock(
        return_value=completion(tool_calls=[("c1", "lookup", {"topic": "venus"})])
    )
    tool = FunctionTool.from_defaults(lookup, return_direct=True)
    agent = FunctionAgent(tools=[tool], llm=openai_llm, streaming=False)
    output = await agent.run(user_msg="venus?")
    assert str(output) == "facts about venus: 384,400 km"
    assert route.call_count == 1


async def test_tool_choice_per_run_goes_to_the_first_call_only(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """run(tool_choice='lookup') forces the tool on the first request; later ones are free."""
    route = openai_api.post(CHAT_URL).mock(
        side_effect=[
            completion(tool_calls=[("c1", "lookup", {"topic": "io"})]),
            completion("Io is a moon."),
        ]
    )
    agent = FunctionAgent(tools=[lookup], llm=openai_llm, streaming=False)
    output = await agent.run(user_msg="io?", tool_choice="lookup")
    assert str(output) == "Io is a moon."
    first, second = (sent_body(c.request) for c in route.calls)
    assert first["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}
    assert second.get("tool_choice") in (None, "auto")
    tool_msg = sent_messages(route.calls[1].request)[-1]
    assert tool_msg == {
        "role": "tool",
        "content": "facts about io: 384,400 km",
        "tool_call_id": "c1",
    }


async def test_tool_choice_with_scripted_llm() -> None:
    """The scripted LLM sees the run's tool_choice on the first call only."""
    llm = ScriptedLLM([call("lookup", topic="x"), "done"])
    await FunctionAgent(tools=[lookup], llm=llm).run(user_msg="x", tool_choice="required")
    assert [o.get("tool_choice") for o in llm.options] == ["required", None]


async def test_function_tool_plain_function_and_query_engine_tool_work_alike() -> None:
    """FunctionTool, a plain function and a QueryEngineTool are called the same way."""
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

    llm = ScriptedLLM(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall("docs", {"input": "what?"}),
                    ScriptedToolCall("shout", {"text": "hi"}),
                    ScriptedToolCall("lookup", {"topic": "t"}),
                ]
            ),
            "ok",
        ]
    )
    agent = FunctionAgent(tools=[docs, shout, FunctionTool.from_defaults(lookup)], llm=llm)
    handler = agent.run(user_msg="go")
    results = [ev async for ev in handler.stream_events() if isinstance(ev, ToolCallResult)]
    await handler
    by_name = {r.tool_name: r.tool_output for r in results}
    assert all(isinstance(out, ToolOutput) for out in by_name.values())
    assert by_name["docs"].content == "It passes the baton."
    assert by_name["shout"].content == "HI"
    assert by_name["lookup"].content == "facts about t: 384,400 km"
    assert not any(r.is_error for r in results)


async def test_streamed_openai_run_has_the_llama_event_shapes(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """AgentStream has delta/response/tool_calls/raw; ToolCallResult.tool_output is a ToolOutput."""
    openai_api.post(CHAT_URL).mock(
        side_effect=[
            stream([], tool_calls=[("c1", "lookup", {"topic": "sun"})]),
            stream(["The sun ", "is hot."]),
        ]
    )
    agent = FunctionAgent(name="astro", tools=[lookup], llm=openai_llm)
    handler = agent.run(user_msg="sun?")
    events = [ev async for ev in handler.stream_events()]
    output = await handler
    streams = [ev for ev in events if isinstance(ev, AgentStream)]
    assert any(ev.tool_calls and ev.tool_calls[0].tool_name == "lookup" for ev in streams)
    assert streams[-1].response == "The sun is hot."
    assert all(ev.raw is not None for ev in streams)
    assert all(ev.current_agent_name == "astro" for ev in streams)
    result = next(ev for ev in events if isinstance(ev, ToolCallResult))
    assert isinstance(result.tool_output, ToolOutput)
    assert result.tool_output.raw_output == "facts about sun: 384,400 km"
    assert output.response.content == "The sun is hot."
    # The run's calls as their results, as llama-index's result lists them.
    assert output.tool_calls == [result]


async def test_streamed_openai_calls_ask_for_usage(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """Streamed requests to OpenAI ask for token usage (stream_options.include_usage)."""
    route = openai_api.post(CHAT_URL).mock(return_value=stream(["hi"]))
    await FunctionAgent(llm=openai_llm).run(user_msg="hi")
    assert sent_body(route.calls[0].request)["stream_options"] == {"include_usage": True}


async def test_chat_history_and_context_carry_the_conversation() -> None:
    """A second run on the same context sees the first run's messages."""
    llm = ScriptedLLM(["Hello Ada.", "You are Ada."])
    agent = FunctionAgent(llm=llm)
    first = agent.run(user_msg="I am Ada.")
    await first
    await agent.run(user_msg="Who am I?", ctx=first.ctx)
    assert [m.content for m in llm.calls[1]] == ["I am Ada.", "Hello Ada.", "Who am I?"]

    llm2 = ScriptedLLM(["blue"])
    history = [ChatMessage(role="user", content="colour?"), {"role": "assistant", "content": "?"}]
    await FunctionAgent(llm=llm2).run(user_msg="again", chat_history=history)
    assert [m.content for m in llm2.calls[0]] == ["colour?", "?", "again"]


async def test_max_iterations_force_and_generate() -> None:
    """At the bound, 'force' raises a clear error and 'generate' makes one last answer."""
    looping = [call("lookup", topic=str(i)) for i in range(3)]
    agent = FunctionAgent(tools=[lookup], llm=ScriptedLLM(looping))
    with pytest.raises(MaxIterationsError, match=r"max_iterations=2.*early_stopping_method"):
        await agent.run(user_msg="loop", max_iterations=2)

    llm = ScriptedLLM([*looping[:2], "best answer so far"])
    agent = FunctionAgent(tools=[lookup], llm=llm)
    output = await agent.run(user_msg="loop", max_iterations=2, early_stopping_method="generate")
    assert str(output) == "best answer so far"
    assert "maximum number of iterations (2)" in (llm.calls[-1][-1].content or "")


async def test_react_agent_works_as_a_member_of_an_agent_workflow() -> None:
    """Our ReActAgent (any LLM) runs inside AgentWorkflow and hands off by text actions."""
    llm = ScriptedLLM(
        [
            'Thought: look it up\nAction: lookup\nAction Input: {"topic": "moon"}',
            'Thought: writer\nAction: handoff\nAction Input: {"to_agent": "writer", '
            '"reason": "done"}',
            "Thought: done\nAnswer: It is 384,400 km.",
        ],
        function_calling=False,
    )
    researcher = ReActAgent(tools=[lookup], llm=llm, name="researcher", description="Finds facts.")
    writer = ReActAgent(llm=llm, name="writer", description="Writes.")
    flow = AgentWorkflow(agents=[researcher, writer], root_agent="researcher")
    output = await flow.run(user_msg="How far is the Moon?")
    assert (str(output), output.current_agent_name) == ("It is 384,400 km.", "writer")
    assert "Observation: facts about moon: 384,400 km" in [m.content for m in llm.calls[2]]


async def test_from_tools_or_functions_picks_the_agent_by_llm() -> None:
    """Native tool calling gives a FunctionAgent; otherwise a ReActAgent."""
    flow = AgentWorkflow.from_tools_or_functions([lookup], llm=ScriptedLLM(["a"]))
    assert type(flow.agents["Agent"]).__name__ == "FunctionAgent"
    plain = AgentWorkflow.from_tools_or_functions(
        [lookup], llm=ScriptedLLM(["Answer: b"], function_calling=False)
    )
    assert type(plain.agents["Agent"]).__name__ == "ReActAgent"
    assert str(await plain.run(user_msg="?")) == "b"


async def test_run_snapshot_round_trips_with_the_default_memory() -> None:
    """The run's state (memory included) serializes, so a run can move between processes."""
    llm = ScriptedLLM(["one"])
    agent = FunctionAgent(llm=llm)
    handler = agent.run(user_msg="first")
    await handler
    restored = Context.from_dict(agent, handler.ctx.to_dict())
    llm.add("two")
    await agent.run(user_msg="second", ctx=restored)
    assert [m.content for m in llm.calls[1]] == ["first", "one", "second"]


@pytest.mark.parametrize(
    ("build", "match"),
    [
        pytest.param(lambda llm: AgentWorkflow(agents=[]), r"at least one agent", id="none"),
        pytest.param(
            lambda llm: AgentWorkflow(
                agents=[
                    FunctionAgent(name="a", description="A.", llm=llm),
                    FunctionAgent(name="b", description="B.", llm=llm),
                ]
            ),
            r"needs root_agent=",
            id="no-root",
        ),
        pytest.param(
            lambda llm: AgentWorkflow(
                agents=[FunctionAgent(name="a", llm=llm), FunctionAgent(name="b", llm=llm)],
                root_agent="a",
            ),
            r"Agent 'a' has no description",
            id="no-description",
        ),
        pytest.param(
            lambda llm: AgentWorkflow(
                agents=[
                    FunctionAgent(name="a", description="A.", llm=llm, can_handoff_to=["z"]),
                    FunctionAgent(name="b", description="B.", llm=llm),
                ],
                root_agent="a",
            ),
            r"may hand off to 'z', which is not one of the agents",
            id="bad-handoff",
        ),
        pytest.param(
            lambda llm: AgentWorkflow(agents=[FunctionAgent(llm=llm)], root_agent="x"),
            r"root_agent='x' is not one of the agents",
            id="bad-root",
        ),
        pytest.param(
            lambda llm: AgentWorkflow(
                agents=[FunctionAgent(llm=llm)], handoff_prompt="no placeholder"
            ),
            r"handoff_prompt= must contain \{agent_info\}",
            id="bad-prompt",
        ),
        pytest.param(
            lambda llm: FunctionAgent(llm=ScriptedLLM(function_calling=False)),
            r"needs an LLM with native tool calling",
            id="no-function-calling",
        ),
    ],
)
def test_bad_configuration_is_refused_clearly(build: object, match: str) -> None:
    """Configuration mistakes name the problem and the fix."""
    with pytest.raises(AgentConfigurationError, match=match):
        build(ScriptedLLM())  # type: ignore[operator]


async def test_bad_run_input_is_refused_clearly() -> None:
    """No message, a bad memory, a bad output_cls: clear input errors."""
    agent = FunctionAgent(llm=ScriptedLLM())
    with pytest.raises(AgentInputError, match=r"needs the user's message"):
        await agent.run()
    with pytest.raises(AgentInputError, match=r"run\(memory=\.\.\.\) needs a llama-index memory"):
        await agent.run(user_msg="x", memory={"not": "memory"})
    with pytest.raises(AgentInputError, match=r"output_cls=\.\.\.\) must be a pydantic"):
        await agent.run(user_msg="x", output_cls=dict)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({"rows": [1, 2]}, id="json"),
        pytest.param(object(), id="object"),
        pytest.param(ChatMessage(role="user", content="x"), id="model"),
    ],
)
def test_tool_call_results_serialize_whatever_the_tool_returned(raw: object) -> None:
    """A ToolCallResult round-trips through JSON; what JSON cannot hold is kept as text."""
    from batonflow.core.serialization import JsonSerializer

    event = ToolCallResult(
        tool_name="t",
        tool_output=ToolOutput(content="out", tool_name="t", raw_input={"a": 1}, raw_output=raw),
        current_agent_name="researcher",
    )
    serializer = JsonSerializer()
    back = serializer.deserialize(serializer.serialize(event))
    assert isinstance(back.tool_output, ToolOutput)
    assert (back.tool_output.content, back.current_agent_name) == ("out", "researcher")
    assert back.tool_output.raw_input == {"a": 1}
    if isinstance(raw, dict):
        assert back.tool_output.raw_output == raw
    else:
        assert isinstance(back.tool_output.raw_output, str | dict)


async def test_handoff_over_openai_keeps_the_tool_results_for_the_next_agent(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """Over the OpenAI API: the writer's request holds the researcher's tool call and result."""
    route = openai_api.post(CHAT_URL).mock(
        side_effect=[
            completion(tool_calls=[("c1", "lookup", {"topic": "moon"})]),
            completion(tool_calls=[("c2", "handoff", {"to_agent": "writer", "reason": "done"})]),
            completion("The Moon is 384,400 km away."),
        ]
    )
    researcher = FunctionAgent(
        name="researcher",
        description="Finds.",
        tools=[lookup],
        llm=openai_llm,
        streaming=False,
        can_handoff_to=["writer"],
    )
    writer = FunctionAgent(
        name="writer",
        description="Writes.",
        system_prompt="Write.",
        llm=openai_llm,
        streaming=False,
    )
    flow = AgentWorkflow(agents=[researcher, writer], root_agent="researcher")
    output = await flow.run(user_msg="How far is the Moon?")
    assert (str(output), output.current_agent_name) == ("The Moon is 384,400 km away.", "writer")
    sent = sent_messages(route.calls[2].request)
    assert sent[0] == {"role": "system", "content": "Write."}
    assert {"role": "tool", "content": "facts about moon: 384,400 km", "tool_call_id": "c1"} in sent
    assert any(m.get("tool_calls") for m in sent if m["role"] == "assistant")
    tools = [t["function"]["name"] for t in sent_body(route.calls[0].request)["tools"]]
    assert tools == ["lookup", "handoff"]


async def test_memory_token_limit_trims_what_openai_is_sent(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """A small token limit keeps old turns out of the request to the API."""
    from batonflow.agents import ChatMemory

    route = openai_api.post(CHAT_URL).mock(
        side_effect=[completion("first answer " * 30), completion("second answer")]
    )
    memory = ChatMemory.from_defaults(token_limit=80)
    agent = FunctionAgent(llm=openai_llm, streaming=False)
    await agent.run(user_msg="first question " * 30, memory=memory)
    await agent.run(user_msg="second question", memory=memory)
    assert sent_messages(route.calls[1].request) == [{"role": "user", "content": "second question"}]
    assert len(memory.get_all()) == 4
