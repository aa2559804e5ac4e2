"""JokeFlow: joke then critique, over a mocked OpenAI API and with the scripted LLM."""

from __future__ import annotations

import pytest
import respx
from batonflow.agents import AgentInputError, JokeFlow, LLMCallError, LLMConfigurationError
from batonflow.agents.joke import JokeEvent
from batonflow.agents.testing import ScriptedLLM
from batonflow.core import StopEvent, retry_policy, step, stop_after_attempt, wait_fixed
from llama_index.llms.openai import OpenAI
from openai_mock import CHAT_URL, completion, error, sent_messages


async def test_joke_then_critique_over_openai(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """The joke prompt names the topic, the critique prompt holds the joke, the result is the critique."""
    route = openai_api.post(CHAT_URL).mock(
        side_effect=[
            completion("Why did the pirate buy an eyepatch? Budget cuts."),
            completion("A solid pun."),
        ]
    )
    handler = JokeFlow(llm=openai_llm, timeout=60).run(topic="pirates")
    streamed = [ev async for ev in handler.stream_events()]
    assert await handler == "A solid pun."
    first, second = (sent_messages(call.request) for call in route.calls)
    assert first[-1]["content"] == "Write your best joke about pirates."
    assert second[-1]["content"] == (
        "Give a thorough analysis and critique of the following joke: "
        "Why did the pirate buy an eyepatch? Budget cuts."
    )
    jokes = [ev for ev in streamed if isinstance(ev, JokeEvent)]
    assert [j.joke for j in jokes] == ["Why did the pirate buy an eyepatch? Budget cuts."]
    assert isinstance(streamed[-1], StopEvent)


async def test_prompts_can_be_replaced() -> None:
    """joke_prompt= and critique_prompt= change what the LLM is asked."""
    llm = ScriptedLLM(["J", "C"])
    flow = JokeFlow(llm=llm, joke_prompt="Joke on {topic}!", critique_prompt="Rate: {joke}")
    assert await flow.run(topic="cats") == "C"
    assert [call[-1].content for call in llm.calls] == ["Joke on cats!", "Rate: J"]


async def test_missing_topic_is_a_clear_error() -> None:
    """run() without topic fails with an error saying how to call it."""
    with pytest.raises(AgentInputError, match=r"needs a topic: call flow.run\(topic='pirates'\)"):
        await JokeFlow(llm=ScriptedLLM([])).run()


async def test_default_llm_without_key_fails_the_run_clearly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """JokeFlow() builds without a key (to draw it); running it names OPENAI_API_KEY."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    flow = JokeFlow()
    with pytest.raises(LLMConfigurationError, match="OPENAI_API_KEY"):
        await flow.run(topic="pirates")


async def test_rate_limit_surfaces_as_llm_call_error(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """A 429 from the API fails the run with LLMCallError naming the status and retry_policy."""
    openai_api.post(CHAT_URL).mock(return_value=error(429, "Rate limit reached"))
    with pytest.raises(
        LLMCallError, match=r"HTTP 429 RateLimitError.*Rate limit reached.*retry_policy="
    ):
        await JokeFlow(llm=openai_llm).run(topic="pirates")


class RetryingJokeFlow(JokeFlow):
    """The critique step overridden with a retry policy (a user's subclass)."""

    @step(retry_policy=retry_policy(wait=wait_fixed(0.01), stop=stop_after_attempt(3)))
    async def critique_joke(self, ev: JokeEvent) -> StopEvent:
        return await super().critique_joke(ev)


async def test_step_retry_policy_retries_a_500(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """With @step(retry_policy=...), a 500 from the API is retried and the run succeeds."""
    route = openai_api.post(CHAT_URL).mock(
        side_effect=[completion("joke"), error(500), error(500), completion("critique")]
    )
    assert await RetryingJokeFlow(llm=openai_llm).run(topic="pirates") == "critique"
    assert route.call_count == 4


async def test_step_retry_policy_gives_up_with_the_clear_error(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """When the step's policy gives up, the run fails with the LLMCallError."""
    route = openai_api.post(CHAT_URL).mock(
        side_effect=[completion("joke"), error(500), error(500), error(500)]
    )
    with pytest.raises(LLMCallError, match="HTTP 500"):
        await RetryingJokeFlow(llm=openai_llm).run(topic="pirates")
    assert route.call_count == 4


async def test_start_fields_are_typed() -> None:
    """JokeFlow and the agents refuse a misspelt start field by name, before any LLM call."""
    from batonflow.agents import AgentStart, FunctionCallingAgent, JokeStart

    llm = ScriptedLLM(["never used"])
    with pytest.raises(ValueError, match="topik"):
        JokeFlow(llm=llm).run(topik="pirates")
    assert JokeFlow(llm=llm).start_event_class is JokeStart
    agent = FunctionCallingAgent(tools=[], llm=llm)
    with pytest.raises(ValueError, match="inptu"):
        agent.run(inptu="hi")
    assert agent.start_event_class is AgentStart
    assert llm.calls == []
    schema = AgentStart.model_json_schema()
    assert set(schema["properties"]) == {
        "input",
        "user_msg",
        "chat_history",
        "max_iterations",
        "tool_choice",
        "early_stopping_method",
    }  # memory= and output_cls= are Python objects, left out of the schema
    assert schema["properties"]["input"]["anyOf"][0] == {"type": "string"}
