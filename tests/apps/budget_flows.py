"""A served agent for the budget tests: its scripted LLM reports usage and notes every call.

Each LLM call appends a line to ``llm_calls.txt`` in the server's working folder (what a
provider would bill), so a test counts the calls made across server processes. The first call
asks for a tool (120 tokens reported), the second answers (180 tokens).
"""

from __future__ import annotations

from pathlib import Path

from batonflow.agents import FunctionAgent
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from llama_index.core.base.llms.types import ChatMessage, MessageRole

CALLS = "llm_calls.txt"


def _respond(messages: list[ChatMessage]) -> ScriptedResponse:
    with open(Path.cwd() / CALLS, "a") as f:
        f.write("llm\n")
    if any(m.role == MessageRole.TOOL for m in messages):
        return ScriptedResponse(text="The answer is 42.", usage=(150, 30))
    return ScriptedResponse(tool_calls=[ScriptedToolCall("lookup", {"q": "x"})], usage=(100, 20))


def lookup(q: str) -> str:
    """Look ``q`` up."""
    return "42"


class BudgetedAgent(FunctionAgent):
    """The agent, as ``batonflow serve -w`` loads it (no arguments)."""

    def __init__(self) -> None:
        super().__init__(tools=[lookup], llm=ScriptedLLM([_respond] * 10), timeout=None)


def calls(folder: Path) -> int:
    """How many LLM calls the served agent made, in every process that served it."""
    path = folder / CALLS
    return len(path.read_text().split()) if path.exists() else 0
