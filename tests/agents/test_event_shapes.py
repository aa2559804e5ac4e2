"""Our agent events have every field of llama_index.core.agent.workflow's, with the same types."""

from __future__ import annotations

import pytest
from batonflow import agents as ours
from llama_index.core.agent import workflow as llama
from llama_index.core.llms import ChatMessage
from llama_index.core.tools import ToolOutput

NAMES = [
    "AgentInput",
    "AgentSetup",
    "AgentStream",
    "AgentOutput",
    "AgentStreamStructuredOutput",
    "ToolCall",
    "ToolCallResult",
    "FunctionAgent",
    "ReActAgent",
    "CodeActAgent",
    "AgentWorkflow",
]


@pytest.mark.parametrize("name", NAMES)
def test_every_llama_index_agent_name_exists(name: str) -> None:
    """Each name llama-index users import is importable from batonflow.agents."""
    assert hasattr(llama, name)
    assert getattr(ours, name) is not None


@pytest.mark.parametrize("name", NAMES[:7])
def test_event_fields_are_a_superset(name: str) -> None:
    """Code that reads a llama-index event's fields reads ours unchanged."""
    theirs = set(getattr(llama, name).model_fields)
    mine = set(getattr(ours, name).model_fields)
    assert theirs <= mine, f"{name} lacks {sorted(theirs - mine)}"


def test_field_types_users_rely_on() -> None:
    """AgentOutput.response is a ChatMessage, ToolCallResult.tool_output a ToolOutput."""
    output = ours.AgentOutput(response="hi", current_agent_name="a")
    assert isinstance(output.response, ChatMessage)
    assert (output.response.content, str(output)) == ("hi", "hi")
    result = ours.ToolCallResult(tool_name="t", tool_output="out")
    assert isinstance(result.tool_output, ToolOutput) and result.tool_output.content == "out"
    stream = ours.AgentStream(delta="a", response="a", current_agent_name="x")
    assert (stream.tool_calls, stream.raw, stream.thinking_delta) == ([], None, None)
    assert "current_agent_name" in ours.ToolCall.model_fields
    assert "current_agent_name" in ours.ToolCallResult.model_fields
