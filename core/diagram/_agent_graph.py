"""Agents drawn as llama-index-utils-workflow draws them: agents, their tools and handoffs.

An agent or an ``AgentWorkflow`` is a workflow, and :func:`draw_all_possible_flows` draws its
steps and events; these graphs show what a reader of an agent system wants instead, as
LlamaIndex's ``draw_agent_with_tools`` / ``draw_agent_workflow`` do: one node per agent, one
per tool, an edge from each agent to its tools and to the agents it may hand off to. The
agents are read by their attributes (``name``, ``tools``, ``can_handoff_to``; an
``AgentWorkflow``'s ``agents`` and ``root_agent``), since core imports nothing of
``batonflow.agents``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .representation import WorkflowGenericNode, WorkflowGraph, WorkflowGraphEdge


def agent_graph(agent: Any) -> WorkflowGraph:
    """One agent (``id="agent"``) and its tools (``Tool 1: name``, ...)."""
    _require(agent, ("name", "tools"), "an agent (FunctionAgent, ReActAgent, CodeActAgent)")
    nodes: list[WorkflowGenericNode] = [
        WorkflowGenericNode(id="agent", label=agent.name, node_type="agent")
    ]
    edges: list[WorkflowGraphEdge] = []
    for i, tool in enumerate(_tools(agent)):
        label = f"Tool {i + 1}: {_tool_name(tool)}"
        nodes.append(WorkflowGenericNode(id=f"tool_{i}", label=label, node_type="tool"))
        edges.append(WorkflowGraphEdge("agent", f"tool_{i}"))
    return WorkflowGraph(agent.name, tuple(nodes), tuple(edges))


def agent_workflow_graph(agent_workflow: Any) -> WorkflowGraph:
    """The user, each agent with its tools and handoffs, and the output."""
    _require(agent_workflow, ("agents", "root_agent"), "an AgentWorkflow")
    agents: dict[str, Any] = dict(agent_workflow.agents)
    root = agent_workflow.root_agent
    nodes: list[WorkflowGenericNode] = [
        WorkflowGenericNode(id="user", label="User", node_type="workflow_base"),
        WorkflowGenericNode(id="output", label="Output", node_type="workflow_base"),
    ]
    edges: list[WorkflowGraphEdge] = []
    drawn: set[str] = set()

    def draw(agent: Any) -> None:
        # Depth-first along the handoffs, so an agent comes after the one handing off to it.
        if agent.name in drawn:
            return
        drawn.add(agent.name)
        nodes.append(
            WorkflowGenericNode(id=agent.name, label=agent.name, node_type="workflow_agent")
        )
        if agent.name == root:
            edges.append(WorkflowGraphEdge("user", agent.name))
        for tool in _tools(agent):
            name = _tool_name(tool)
            tool_id = f"{agent.name}_{name}"
            nodes.append(WorkflowGenericNode(id=tool_id, label=name, node_type="workflow_tool"))
            edges.append(WorkflowGraphEdge(agent.name, tool_id))
        targets = list(agent.can_handoff_to or ())
        for target in targets:
            edges.append(WorkflowGraphEdge(agent.name, target))
        if not targets:
            edges.append(WorkflowGraphEdge(agent.name, "output"))
        for target in targets:
            if target in agents:
                draw(agents[target])

    for agent in agents.values():
        draw(agent)
    if all(edge.target != "output" for edge in edges) and drawn:
        last = [n for n in nodes if n.node_type == "workflow_agent"][-1]
        edges.append(WorkflowGraphEdge(last.id, "output"))
    return WorkflowGraph(type(agent_workflow).__name__, tuple(nodes), tuple(edges))


def _tools(agent: Any) -> Iterable[Any]:
    tools = agent.tools or ()
    return tools.values() if isinstance(tools, dict) else tools


def _tool_name(tool: Any) -> str:
    metadata = getattr(tool, "metadata", None)
    if metadata is not None and hasattr(metadata, "get_name"):
        return str(metadata.get_name())
    return str(getattr(tool, "__name__", type(tool).__name__))


def _require(obj: Any, attributes: tuple[str, ...], what: str) -> None:
    missing = [a for a in attributes if not hasattr(obj, a)]
    if missing:
        raise TypeError(
            f"Cannot draw {obj!r} as {what}: it has no {', '.join(missing)}. Pass {what}, or "
            "draw any workflow's steps with draw_all_possible_flows."
        )
