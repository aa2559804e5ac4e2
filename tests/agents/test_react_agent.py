"""ReActAgent: the Thought/Action/Observation loop, over a mocked OpenAI API and scripted LLMs."""

from __future__ import annotations

import asyncio
import json

import pytest
import respx
from batonflow.agents import (
    AgentConfigurationError,
    AgentInput,
    AgentInputError,
    AgentOutput,
    AgentResult,
    AgentStream,
    LLMCallError,
    LLMInputEvent,
    MaxIterationsError,
    PrepareEvent,
    ReActAgent,
    RunToolEvent,
    ToolCall,
    ToolCallResult,
)
from batonflow.agents.chat_memory import ChatMemory
from batonflow.agents.testing import ScriptedLLM
from batonflow.core import Context, StopEvent, retry_policy, step, stop_after_attempt, wait_fixed
from llama_index.llms.openai import OpenAI
from openai_mock import CHAT_URL, completion, error, sent_messages, stream


def calculator(a: float, b: float, op: str) -> float:
    """Compute a op b.

    Args:
        a: The left operand.
        b: The right operand.
        op: One of + - * /.
    """
    ops = {"+": a + b, "-": a - b, "*": a * b}
    if op == "/":
        return a / b
    return ops[op]


def action(tool: str, **kwargs: object) -> str:
    return f"Thought: I use {tool}.\nAction: {tool}\nAction Input: {json.dumps(kwargs)}"


async def test_calculator_twice_then_answer_over_openai(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """Two tool turns, then an answer: observations reach the LLM and the result records it all."""
    route = openai_api.post(CHAT_URL).mock(
        side_effect=[
            completion(action("calculator", a=2, b=3, op="+")),
            completion(action("calculator", a=5, b=4, op="*")),
            completion("Thought: I have it.\nAnswer: (2 + 3) * 4 = 20"),
        ]
    )
    agent = ReActAgent(tools=[calculator], llm=openai_llm, streaming=False)
    result = await agent.run(input="What is (2 + 3) * 4?")

    assert isinstance(result, AgentResult)
    assert result.response == "(2 + 3) * 4 = 20"
    assert str(result) == "(2 + 3) * 4 = 20"
    assert [(c.tool_name, c.tool_kwargs, c.output, c.is_error) for c in result.tool_calls] == [
        ("calculator", {"a": 2, "b": 3, "op": "+"}, "5", False),
        ("calculator", {"a": 5, "b": 4, "op": "*"}, "20", False),
    ]
    assert result.reasoning == ["I use calculator.", "I use calculator.", "I have it."]
    first, second, third = (sent_messages(call.request) for call in route.calls)
    assert first[0]["role"] == "system"
    assert "calculator" in first[0]["content"] and "The left operand." in first[0]["content"]
    assert first[-1] == {"role": "user", "content": "What is (2 + 3) * 4?"}
    assert second[-1] == {"role": "user", "content": "Observation: 5"}
    assert third[-1] == {"role": "user", "content": "Observation: 20"}
    assert third[-2]["content"] == action("calculator", a=5, b=4, op="*")


async def test_streamed_deltas_over_openai_sse(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """With streaming, each SSE chunk of the reply becomes an AgentStream delta."""
    openai_api.post(CHAT_URL).mock(
        return_value=stream(["Thought: easy.\n", "Answer: ", "Par", "is"])
    )
    handler = ReActAgent(llm=openai_llm).run(input="Capital of France?")
    events = [ev async for ev in handler.stream_events()]
    result = await handler
    deltas = [ev for ev in events if isinstance(ev, AgentStream) and ev.delta]
    assert [d.delta for d in deltas] == ["Thought: easy.\n", "Answer: ", "Par", "is"]
    assert deltas[-1].response == "Thought: easy.\nAnswer: Paris"
    assert result.response == "Paris"


async def test_event_stream_tells_the_story_in_order() -> None:
    """AgentInput, deltas, AgentOutput with the calls, ToolCall/ToolCallResult, final AgentOutput, StopEvent."""
    llm = ScriptedLLM([action("calculator", a=1, b=1, op="+"), "Thought: done\nAnswer: 2"])
    handler = ReActAgent(tools=[calculator], llm=llm, name="calc").run(input="1+1?")
    events = [ev async for ev in handler.stream_events()]
    await handler
    kinds = [type(ev).__name__ for ev in events if not isinstance(ev, AgentStream)]
    assert kinds == [
        "AgentInput",
        "AgentOutput",
        "ToolCall",
        "ToolCallResult",
        "AgentInput",
        "AgentOutput",
        "StopEvent",
    ]
    # As in llama-index, AgentInput carries the messages of each LLM call.
    assert isinstance(events[0], AgentInput) and events[0].current_agent_name == "calc"
    assert [(m.role.value, m.content) for m in events[0].input[1:]] == [("user", "1+1?")]
    second = [ev for ev in events if isinstance(ev, AgentInput)][1]
    assert second.input[-1].content == "Observation: 2"
    outputs = [ev for ev in events if isinstance(ev, AgentOutput)]
    assert [c.tool_name for c in outputs[0].tool_calls] == ["calculator"]
    assert (outputs[1].response.content, outputs[1].is_final) == ("2", True)
    call = next(ev for ev in events if isinstance(ev, ToolCall))
    done = next(ev for ev in events if isinstance(ev, ToolCallResult))
    assert (call.tool_id, done.tool_id, done.tool_output.content, done.is_error) == (
        "react_1_0",
        "react_1_0",
        "2",
        False,
    )
    assert isinstance(events[-1], StopEvent)
    for ev in events:  # plain data: the server can send every event as JSON
        assert json.loads(ev.model_dump_json())


async def test_several_actions_in_one_turn_run_concurrently() -> None:
    """Two actions of one turn run at the same time (each waits for the other) and both observations return in order."""
    barrier = asyncio.Barrier(2)

    async def fetch(city: str) -> str:
        """Fetch the weather of a city."""
        await asyncio.wait_for(barrier.wait(), timeout=5)  # only passes if both calls run at once
        return f"sunny in {city}"

    llm = ScriptedLLM(
        [
            'Thought: both.\nAction: fetch\nAction Input: {"city": "Paris"}\nAction: fetch\nAction Input: {"city": "Rome"}',
            "Thought: ok\nAnswer: sunny in both",
        ]
    )
    result = await ReActAgent(tools=[fetch], llm=llm).run(input="weather?")
    assert [(c.output, c.is_error) for c in result.tool_calls] == [
        ("sunny in Paris", False),
        ("sunny in Rome", False),
    ]
    assert (
        llm.calls[1][-1].content
        == "Observation 1 (fetch): sunny in Paris\nObservation 2 (fetch): sunny in Rome"
    )


@pytest.mark.parametrize(
    ("first_output", "observation"),
    [
        pytest.param(
            "Thought: I am not sure what to do.",
            "Observation: Error while parsing the output: the output has a Thought but neither an Action nor an Answer. Reply in this format:",
            id="malformed",
        ),
        pytest.param(
            'Thought: t\nAction: calculator\nAction Input: {"a": 1,',
            "Observation: Error while parsing the output: the Action Input",
            id="broken-json",
        ),
        pytest.param(
            action("search", q="x"),
            "Observation: Error: there is no tool named 'search'. Available tools: calculator.",
            id="unknown-tool",
        ),
        pytest.param(
            action("calculator", a=1),
            "Observation: Error: bad arguments for tool 'calculator': b: Field required; op: Field required.",
            id="bad-arguments",
        ),
        pytest.param(
            action("calculator", a=1, b=0, op="/"),
            "Observation: Error: tool 'calculator' raised ZeroDivisionError: division by zero",
            id="tool-raises",
        ),
    ],
)
async def test_mistakes_become_observations_and_the_run_goes_on(
    first_output: str, observation: str
) -> None:
    """Malformed output, unknown tool, bad arguments and a raising tool are shown to the LLM; it then answers."""
    llm = ScriptedLLM([first_output, "Thought: fixed\nAnswer: ok"])
    result = await ReActAgent(tools=[calculator], llm=llm).run(input="go")
    assert result.response == "ok"
    shown = llm.calls[1][-1].content
    assert shown.startswith(observation), shown
    assert all(c.is_error for c in result.tool_calls)


async def test_max_iterations_stops_with_a_clear_error() -> None:
    """An LLM that never answers is stopped after max_iterations calls; the error keeps the work done."""
    llm = ScriptedLLM([action("calculator", a=i, b=1, op="+") for i in range(10)])
    agent = ReActAgent(tools=[calculator], llm=llm, max_iterations=3)
    with pytest.raises(
        MaxIterationsError,
        match=r"made 3 LLM calls \(max_iterations=3\) without reaching a final answer\. Either something went wrong .*raise max_iterations=\.\.\. \(on the agent or per run\)",
    ) as info:
        await agent.run(input="loop")
    assert len(llm.calls) == 3
    assert [c.output for c in info.value.result.tool_calls] == ["1", "2", "3"]
    assert info.value.result.response == ""


async def test_chat_memory_carries_over_runs_with_ctx() -> None:
    """A second run with ctx= sees the first question and answer; the context serializes to JSON."""
    llm = ScriptedLLM(["Answer: Nice to meet you, Ada.", "Answer: You are Ada."])
    agent = ReActAgent(llm=llm)
    handler = agent.run(input="I am Ada.")
    await handler
    result = await agent.run(input="Who am I?", ctx=handler.ctx)
    assert result.response == "You are Ada."
    seen = [(m.role.value, m.content) for m in llm.calls[1][1:]]
    assert seen == [
        ("user", "I am Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "Who am I?"),
    ]
    memory = await handler.ctx.store.get("memory")
    assert isinstance(memory, ChatMemory)
    assert [m.content for m in memory.get_all()] == [
        "I am Ada.",
        "Nice to meet you, Ada.",
        "Who am I?",
        "You are Ada.",
    ]
    data = handler.ctx.to_dict()
    assert json.loads(json.dumps(data)) == data  # the context, memory included, is JSON


async def test_memory_survives_context_serialization() -> None:
    """ctx.to_dict() / Context.from_dict() keep the conversation for the next run."""
    llm = ScriptedLLM(["Answer: noted", "Answer: blue"])
    agent = ReActAgent(llm=llm)
    handler = agent.run(input="My colour is blue.")
    await handler
    data = json.loads(json.dumps(handler.ctx.to_dict()))
    restored = Context.from_dict(agent, data)
    assert (await agent.run(input="My colour?", ctx=restored)).response == "blue"
    assert "My colour is blue." in [m.content for m in llm.calls[1]]


async def test_user_msg_and_chat_history_are_accepted() -> None:
    """user_msg= works like input=, and chat_history= seeds the conversation."""
    llm = ScriptedLLM(["Answer: hi"])
    await ReActAgent(llm=llm, system_prompt="Be brief.").run(
        user_msg="hello",
        chat_history=[
            {"role": "user", "content": "earlier"},
            {"role": "assistant", "content": "yes"},
        ],
    )
    messages = llm.calls[0]
    assert messages[0].content.startswith("Be brief.\n\nYou answer the user's question.")
    assert [m.content for m in messages[1:]] == ["earlier", "yes", "hello"]


async def test_missing_input_is_a_clear_error() -> None:
    """run() without input fails saying how to call it."""
    with pytest.raises(
        AgentInputError, match=r"needs the user's message: call reactagent.run\(input='...'\)"
    ):
        await ReActAgent(llm=ScriptedLLM([])).run()


async def test_api_error_fails_the_run_clearly(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """A 500 from the API fails the run with LLMCallError."""
    openai_api.post(CHAT_URL).mock(return_value=error(500))
    with pytest.raises(LLMCallError, match=r"'gpt-4o-mini' failed: HTTP 500"):
        await ReActAgent(llm=openai_llm, streaming=False).run(input="hi")


async def test_agent_retry_policy_retries_llm_calls(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """retry_policy= retries a 429 and the run succeeds."""
    route = openai_api.post(CHAT_URL).mock(side_effect=[error(429), completion("Answer: ok")])
    agent = ReActAgent(
        llm=openai_llm,
        streaming=False,
        retry_policy=retry_policy(wait=wait_fixed(0.01), stop=stop_after_attempt(2)),
    )
    assert (await agent.run(input="hi")).response == "ok"
    assert route.call_count == 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        pytest.param(
            {"max_iterations": 0}, r"max_iterations=0\) must be at least 1", id="iterations"
        ),
        pytest.param({"llm": "gpt-4o"}, r"ReActAgent\(llm=\.\.\.\) got str", id="llm"),
        pytest.param({"retry_policy": 3}, r"has no next\(\) method", id="retry-policy"),
        pytest.param(
            {"tools": [calculator, calculator]},
            r"Two tools are named 'calculator'",
            id="duplicate-tools",
        ),
    ],
)
def test_bad_options_are_refused_at_construction(kwargs: dict, match: str) -> None:
    """Options that cannot work raise AgentConfigurationError when the agent is built."""
    with pytest.raises(AgentConfigurationError, match=match):
        ReActAgent(**kwargs)


class RetryingAgent(ReActAgent):
    """A user's subclass giving the LLM step a retry policy."""

    @step(retry_policy=retry_policy(wait=wait_fixed(0.01), stop=stop_after_attempt(3)))
    async def call_llm(
        self, ctx: Context, ev: LLMInputEvent
    ) -> RunToolEvent | PrepareEvent | StopEvent | None:
        return await super().call_llm(ctx, ev)


async def test_step_retry_policy_on_call_llm_retries_cleanly(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """A step-level retry of call_llm after a 500 leaves no trace of the failed attempt in the state."""
    route = openai_api.post(CHAT_URL).mock(
        side_effect=[
            error(500),
            completion(action("calculator", a=1, b=2, op="+")),
            error(429),
            completion("Answer: 3"),
        ]
    )
    handler = RetryingAgent(tools=[calculator], llm=openai_llm, streaming=False).run(input="1+2?")
    result = await handler
    assert result.response == "3"
    assert route.call_count == 4
    assert await handler.ctx.store.get("iterations") == 2
    assert [c.output for c in result.tool_calls] == ["3"]


async def test_custom_react_prompt_is_used() -> None:
    """react_prompt= replaces the instructions; the placeholders are filled with the tools."""
    llm = ScriptedLLM(["Answer: ok"])
    await ReActAgent(
        tools=[calculator], llm=llm, react_prompt="Tools: {tool_names}\n{tool_descriptions}"
    ).run(input="x")
    system = llm.calls[0][0].content
    assert system.startswith(
        "Tools: calculator\n- calculator: calculator(a: float, b: float, op: str) -> float"
    )


async def test_run_continues_from_a_checkpoint_after_the_llm_call() -> None:
    """From the checkpoint after the first LLM turn, the pending tool calls run and the loop goes on."""
    from batonflow.core import WorkflowCheckpointer

    llm = ScriptedLLM(
        [
            'Thought: both\nAction: calculator\nAction Input: {"a": 1, "b": 2, "op": "+"}\nAction: calculator\nAction Input: {"a": 3, "b": 4, "op": "+"}',
            "Answer: 3 and 7",
        ]
    )
    checkpointer = WorkflowCheckpointer(workflow=ReActAgent(tools=[calculator], llm=llm))
    handler = checkpointer.run(input="1+2 and 3+4?")
    assert (await handler).response == "3 and 7"
    after_llm = next(
        c for c in checkpointer.checkpoints[handler.run_id] if c.last_completed_step == "call_llm"
    )
    llm.add("Answer: resumed")
    result = await checkpointer.run_from(checkpoint=after_llm)
    assert result.response == "resumed"
    assert [c.output for c in result.tool_calls] == ["3", "7"]
    assert len(llm.calls) == 3  # the first LLM turn was not made again
