"""CodeActAgent: the LLM writes code, the user's executor runs it; no executor, no agent."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest
import respx
from batonflow.agents import AgentConfigurationError, CodeActAgent, ToolCallResult
from batonflow.agents.codeact import extract_code
from batonflow.agents.testing import ScriptedLLM
from llama_index.llms.openai import OpenAI
from openai_mock import CHAT_URL, completion, sent_messages


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class TestExecutor:
    """A test-only executor: exec in a namespace with the tools (a real one is a sandbox)."""

    __test__ = False

    def __init__(self, **names: Any) -> None:
        self.namespace: dict[str, Any] = dict(names)
        self.runs: list[str] = []

    def __call__(self, code: str) -> str:
        self.runs.append(code)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, self.namespace)  # noqa: S102 - the test's own sandbox stand-in
        return out.getvalue().strip()


async def test_code_runs_in_the_given_executor_and_its_output_goes_back() -> None:
    """The <execute> block runs in code_execute_fn; the LLM sees the output, then answers."""
    executor = TestExecutor(add=add)
    llm = ScriptedLLM(
        ["I will compute.\n<execute>\nprint(add(2, 3) * 4)\n</execute>", "The result is 20."],
        function_calling=False,
    )
    agent = CodeActAgent(code_execute_fn=executor, tools=[add], llm=llm)
    handler = agent.run(user_msg="(2 + 3) * 4?")
    results = [ev async for ev in handler.stream_events() if isinstance(ev, ToolCallResult)]
    output = await handler
    assert str(output) == "The result is 20."
    assert executor.runs == ["print(add(2, 3) * 4)"]
    assert results[0].tool_name == "execute" and results[0].tool_output.content == "20"
    assert llm.calls[1][-1].content == "Result of executing the code given:\n\n20"
    assert "def add(a: int, b: int) -> int:" in (llm.calls[0][0].content or "")


async def test_async_executor_over_openai(openai_llm: OpenAI, openai_api: respx.MockRouter) -> None:
    """An async executor works the same, against the OpenAI API."""
    seen: list[str] = []

    async def run_code(code: str) -> str:
        seen.append(code)
        return "42"

    route = openai_api.post(CHAT_URL).mock(
        side_effect=[completion("```python\nanswer = 6 * 7\n```"), completion("It is 42.")]
    )
    agent = CodeActAgent(code_execute_fn=run_code, llm=openai_llm, streaming=False)
    assert str(await agent.run(user_msg="6*7?")) == "It is 42."
    assert seen == ["answer = 6 * 7"]
    assert (
        sent_messages(route.calls[1].request)[-1]["content"]
        == "Result of executing the code given:\n\n42"
    )


def test_no_executor_refuses_to_build() -> None:
    """Without code_execute_fn the agent is refused: batonflow never runs model code itself."""
    with pytest.raises(AgentConfigurationError, match=r"pass code_execute_fn=\.\.\."):
        CodeActAgent(llm=ScriptedLLM())


@pytest.mark.parametrize(
    ("text", "code"),
    [
        pytest.param("x <execute>print(1)</execute>", "print(1)", id="execute-tag"),
        pytest.param("```python\nprint(2)\n```", "print(2)", id="fence"),
        pytest.param("just text", None, id="none"),
        pytest.param("<execute>  </execute>", None, id="empty"),
    ],
)
def test_extract_code(text: str, code: str | None) -> None:
    """Code is read from <execute> tags or a python fence."""
    assert extract_code(text) == code
