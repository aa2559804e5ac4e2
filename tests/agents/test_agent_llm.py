"""LLM plumbing: the default LLM, clear errors from the OpenAI API, retries, streaming."""

from __future__ import annotations

import pytest
import respx
from batonflow.agents import AgentConfigurationError, LLMCallError, LLMConfigurationError
from batonflow.agents.llm import chat, check_function_calling, check_llm, complete, default_llm
from batonflow.agents.testing import ScriptedLLM
from batonflow.core.retry import retry_policy, stop_after_attempt, wait_fixed
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.llms.openai import OpenAI
from openai_mock import CHAT_URL, completion, error, sent_body, stream

USER = [ChatMessage(role="user", content="hi")]


def test_default_llm_without_key_names_openai_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No llm= and no OPENAI_API_KEY: the error names the variable and the llm= way out."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(
        LLMConfigurationError,
        match=r"OPENAI_API_KEY .* is not set\. Set OPENAI_API_KEY, or pass llm=",
    ):
        default_llm()


def test_default_llm_is_gpt_4o_mini(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a key, the default LLM is OpenAI gpt-4o-mini."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    llm = default_llm()
    assert isinstance(llm, OpenAI)
    assert llm.model == "gpt-4o-mini"


def test_check_llm_refuses_non_llms() -> None:
    """llm= must be a llama-index LLM; a string gets a clear error."""
    assert check_llm(None, "JokeFlow") is None
    with pytest.raises(
        AgentConfigurationError, match=r"JokeFlow\(llm=\.\.\.\) got str .*needs a llama-index LLM"
    ):
        check_llm("gpt-4o-mini", "JokeFlow")


def test_function_calling_check_refuses_plain_llms() -> None:
    """An LLM without native tool calls is refused with the ReActAgent as the alternative."""
    with pytest.raises(
        AgentConfigurationError, match=r"needs an LLM with native tool calling.*ReActAgent"
    ):
        check_function_calling(MockLLM(), "FunctionCallingAgent")
    with pytest.raises(AgentConfigurationError, match="native tool calling"):
        check_function_calling(ScriptedLLM(function_calling=False), "FunctionCallingAgent")
    llm = ScriptedLLM()
    assert check_function_calling(llm, "FunctionCallingAgent") is llm


async def test_chat_returns_the_openai_reply(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """A plain chat call goes to /chat/completions and returns the reply."""
    route = openai_api.post(CHAT_URL).mock(return_value=completion("hello"))
    response = await chat(openai_llm, USER)
    assert response.message.content == "hello"
    assert sent_body(route.calls.last.request)["model"] == "gpt-4o-mini"


@pytest.mark.parametrize(
    ("status", "match"),
    [
        pytest.param(
            429,
            r"'gpt-4o-mini' failed: HTTP 429 RateLimitError.*rate-limiting.*retry_policy=",
            id="429",
        ),
        pytest.param(
            500,
            r"'gpt-4o-mini' failed: HTTP 500 InternalServerError.*server error.*retry_policy=",
            id="500",
        ),
        pytest.param(401, r"HTTP 401 AuthenticationError.*check OPENAI_API_KEY", id="401"),
    ],
)
async def test_api_errors_become_clear_llm_call_errors(
    openai_llm: OpenAI, openai_api: respx.MockRouter, status: int, match: str
) -> None:
    """An HTTP error from the API raises LLMCallError naming model, status and the fix."""
    openai_api.post(CHAT_URL).mock(return_value=error(status))
    with pytest.raises(LLMCallError, match=match) as info:
        await chat(openai_llm, USER)
    assert info.value.status_code == status
    assert info.value.__cause__ is not None


async def test_complete_wraps_errors_too(openai_llm: OpenAI, openai_api: respx.MockRouter) -> None:
    """Completion calls (JokeFlow) fail with the same clear error."""
    openai_api.post(CHAT_URL).mock(return_value=error(429))
    with pytest.raises(LLMCallError, match="HTTP 429"):
        await complete(openai_llm, "joke")


async def test_retry_policy_retries_failed_calls(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """With a retry policy, a 429 then a 500 are retried and the third call's reply returned."""
    route = openai_api.post(CHAT_URL).mock(side_effect=[error(429), error(500), completion("ok")])
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    response = await chat(
        openai_llm,
        USER,
        retry_policy=retry_policy(wait=wait_fixed(0.5), stop=stop_after_attempt(5)),
        sleep=fake_sleep,
    )
    assert response.message.content == "ok"
    assert route.call_count == 3
    assert slept == [0.5, 0.5]


async def test_retry_policy_gives_up_with_the_last_error(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """When the policy gives up, the last LLMCallError is raised."""
    route = openai_api.post(CHAT_URL).mock(return_value=error(500))

    async def fake_sleep(seconds: float) -> None:
        pass

    with pytest.raises(LLMCallError, match="HTTP 500"):
        await chat(
            openai_llm,
            USER,
            retry_policy=retry_policy(wait=wait_fixed(0), stop=stop_after_attempt(2)),
            sleep=fake_sleep,
        )
    assert route.call_count == 2


async def test_streaming_sends_each_sse_delta(
    openai_llm: OpenAI, openai_api: respx.MockRouter
) -> None:
    """A streamed call reports every SSE delta with the text so far, and returns the whole text."""
    route = openai_api.post(CHAT_URL).mock(return_value=stream(["Hel", "lo ", "world"]))
    seen: list[tuple[str, str]] = []

    async def on_delta(delta: str, text: str) -> None:
        seen.append((delta, text))

    response = await chat(openai_llm, USER, on_delta=on_delta)
    assert seen == [("Hel", "Hel"), ("lo ", "Hello "), ("world", "Hello world")]
    assert response.message.content == "Hello world"
    assert sent_body(route.calls.last.request)["stream"] is True


async def test_streaming_error_is_wrapped(openai_llm: OpenAI, openai_api: respx.MockRouter) -> None:
    """A streamed call that fails raises the same clear error."""
    openai_api.post(CHAT_URL).mock(return_value=error(500))

    async def on_delta(delta: str, text: str) -> None:
        pass

    with pytest.raises(LLMCallError, match="HTTP 500"):
        await chat(openai_llm, USER, on_delta=on_delta)


def test_errors_survive_pickling() -> None:
    """LLMCallError and MaxIterationsError keep their message and attributes through pickle."""
    import pickle

    from batonflow.agents import AgentResult, MaxIterationsError

    err = pickle.loads(pickle.dumps(LLMCallError("failed: HTTP 429", status_code=429)))
    assert (str(err), err.status_code) == ("failed: HTTP 429", 429)
    partial = AgentResult(response="", reasoning=["thinking"])
    again = pickle.loads(pickle.dumps(MaxIterationsError("too many", result=partial)))
    assert (str(again), again.result) == ("too many", partial)
