"""llama-index-utils-workflow's agent drawings: agents, tools and handoffs as LlamaIndex draws them."""

from __future__ import annotations

from pathlib import Path

import pytest
from batonflow.agents import AgentWorkflow, ReActAgent
from batonflow.agents.testing import ScriptedLLM
from batonflow.core import (
    draw_agent_with_tools,
    draw_agent_with_tools_mermaid,
    draw_agent_workflow,
    draw_agent_workflow_mermaid,
)
from batonflow.core.diagram._agent_graph import agent_graph, agent_workflow_graph


def search(q: str) -> str:
    """Search the web."""
    return q


def record_notes(n: str) -> str:
    """Keep notes."""
    return n


def review(t: str) -> str:
    """Review a text."""
    return t


def _team() -> tuple[ReActAgent, AgentWorkflow]:
    llm = ScriptedLLM([])
    research = ReActAgent(
        name="research", description="r", tools=[search], llm=llm, can_handoff_to=["write"]
    )
    write = ReActAgent(
        name="write",
        description="w",
        tools=[record_notes, review],
        llm=llm,
        can_handoff_to=["research", "check"],
    )
    check = ReActAgent(name="check", description="c", tools=[], llm=llm, can_handoff_to=[])
    return research, AgentWorkflow(agents=[research, write, check], root_agent="research")


def _shape(graph) -> list[tuple[str, ...]]:
    nodes = [("node", n.id, n.label, n.node_type) for n in graph.nodes]
    return nodes + [("edge", e.source, e.target) for e in graph.edges]


async def test_the_graphs_are_llama_indexs() -> None:
    """Nodes and edges are those llama-index-utils-workflow 0.11 extracts for the same team."""
    research, team = _team()
    assert _shape(agent_workflow_graph(team)) == [
        ("node", "user", "User", "workflow_base"),
        ("node", "output", "Output", "workflow_base"),
        ("node", "research", "research", "workflow_agent"),
        ("node", "research_search", "search", "workflow_tool"),
        ("node", "write", "write", "workflow_agent"),
        ("node", "write_record_notes", "record_notes", "workflow_tool"),
        ("node", "write_review", "review", "workflow_tool"),
        ("node", "check", "check", "workflow_agent"),
        ("edge", "user", "research"),
        ("edge", "research", "research_search"),
        ("edge", "research", "write"),
        ("edge", "write", "write_record_notes"),
        ("edge", "write", "write_review"),
        ("edge", "write", "research"),
        ("edge", "write", "check"),
        ("edge", "check", "output"),
    ]
    assert _shape(agent_graph(research)) == [
        ("node", "agent", "research", "agent"),
        ("node", "tool_0", "Tool 1: search", "tool"),
        ("edge", "agent", "tool_0"),
    ]


async def test_files_names_and_return_values(tmp_path: Path, monkeypatch, capsys) -> None:
    """HTML drawings print and return the file name; Mermaid ones return the text, print
    nothing, and write LlamaIndex's default file names."""
    monkeypatch.chdir(tmp_path)
    research, team = _team()
    assert draw_agent_workflow(team) == "agent_workflow.html"
    assert draw_agent_with_tools(research) == "agent_with_tools.html"
    assert capsys.readouterr().out.splitlines() == ["agent_workflow.html", "agent_with_tools.html"]
    assert "record_notes" in (tmp_path / "agent_workflow.html").read_text()
    text = draw_agent_workflow_mermaid(team)
    assert (tmp_path / "agent_workflow.mermaid").read_text() == text
    assert draw_agent_with_tools_mermaid(research, filename=None).startswith("flowchart")
    assert capsys.readouterr().out == ""


async def test_something_else_is_a_clear_error() -> None:
    """A workflow that is not an AgentWorkflow says what to pass."""
    with pytest.raises(TypeError, match="it has no agents, root_agent. Pass an AgentWorkflow"):
        draw_agent_workflow_mermaid(object(), filename=None)
