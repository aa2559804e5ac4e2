"""Every prebuilt flow validates and draws (all possible flows)."""

from __future__ import annotations

from pathlib import Path

import pytest
from batonflow.agents import (
    AccumulateWorkflow,
    FunctionCallingAgent,
    GuessNumberWorkflow,
    JokeFlow,
    ReActAgent,
)
from batonflow.agents.testing import ScriptedLLM
from batonflow.core import Workflow, draw_all_possible_flows

FLOWS = {
    "JokeFlow": (JokeFlow, ["generate_joke", "critique_joke", "JokeEvent"]),
    "ReActAgent": (
        ReActAgent,
        [
            "receive_input",
            "prepare_prompt",
            "call_llm",
            "run_tool",
            "gather_tool_results",
            "RunToolEvent",
            "ToolResultEvent",
        ],
    ),
    "FunctionCallingAgent": (
        FunctionCallingAgent,
        [
            "receive_input",
            "prepare_prompt",
            "call_llm",
            "run_tool",
            "gather_tool_results",
            "LLMInputEvent",
        ],
    ),
    "GuessNumberWorkflow": (GuessNumberWorkflow, ["init", "accumulate", "GuessEvent"]),
    "AccumulateWorkflow": (AccumulateWorkflow, ["init", "accumulate", "NumberEvent"]),
}


def build(cls: type[Workflow]) -> Workflow:
    if cls in (JokeFlow, ReActAgent, FunctionCallingAgent):
        return cls(llm=ScriptedLLM([]))
    return cls()


@pytest.mark.parametrize("name", FLOWS)
def test_flow_graph_validates(name: str) -> None:
    """The flow's steps and events fit together (the engine's validation passes)."""
    cls, _ = FLOWS[name]
    assert build(cls).validate() is False  # valid, and no human-in-the-loop events


@pytest.mark.parametrize("name", FLOWS)
def test_flow_draws_as_mermaid_and_html(name: str, tmp_path: Path) -> None:
    """draw_all_possible_flows shows every step and flow event, as Mermaid text and an HTML page."""
    cls, names = FLOWS[name]
    mermaid = draw_all_possible_flows(cls, filename=tmp_path / f"{name}.mmd")
    html = draw_all_possible_flows(cls, filename=tmp_path / f"{name}.html")
    for expected in names:
        assert expected in mermaid
        assert expected in html
    assert (tmp_path / f"{name}.html").read_text() == html
    assert (tmp_path / f"{name}.mmd").read_text() == mermaid
    assert "StopEvent" in mermaid
