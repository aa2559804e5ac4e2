"""What an agent run returns: the answer and a record of how it got there."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ToolCallRecord(BaseModel):
    """One tool call an agent made, and what came back.

    Attributes:
        tool_name: The tool the LLM asked for (possibly one that does not exist).
        tool_kwargs: The arguments the LLM gave.
        tool_id: The call's id (the LLM's own for native tool calls).
        output: The tool's output as text, or the error the LLM was shown.
        is_error: Whether the call failed (unknown tool, bad arguments, the tool raised).
    """

    model_config = ConfigDict(frozen=True)

    tool_name: str
    tool_kwargs: dict[str, Any] = Field(default_factory=dict)
    tool_id: str = ""
    output: str = ""
    is_error: bool = False


class AgentResult(BaseModel):
    """The result of an agent run (``await agent.run(input=...)``).

    ``str(result)`` is the answer, so ``print(await agent.run(input="..."))`` prints it.

    Attributes:
        response: The agent's final answer.
        tool_calls: Every tool call of the run, in the order the calls were made.
        reasoning: The agent's reasoning, one entry per LLM turn (ReAct thoughts; for the
            function-calling agent, any text the LLM wrote alongside its tool calls).
    """

    model_config = ConfigDict(frozen=True)

    response: str
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    reasoning: list[str] = Field(default_factory=list)

    def __str__(self) -> str:
        return self.response


__all__ = ["AgentResult", "ToolCallRecord"]
