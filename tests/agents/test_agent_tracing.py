"""Agents under tracing: LLM calls and tool calls are spans under the step that made them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from batonflow.agents import ReActAgent
from batonflow.agents.testing import ScriptedLLM
from batonflow.observability import TracingHandle, configure_tracing
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    spans = InMemorySpanExporter()
    handle: TracingHandle = configure_tracing(
        "agents-test", exporter=spans, span_processor="simple"
    )
    try:
        yield spans
    finally:
        handle.shutdown()


async def test_tool_and_llm_spans_nest_under_their_steps(exporter: InMemorySpanExporter) -> None:
    """execute_tool spans are children of run_tool step spans; chat spans of the agent's turn (invoke_agent) in call_llm; failed tools are ERROR."""
    llm = ScriptedLLM(
        [
            'Thought: t\nAction: add\nAction Input: {"a": 1, "b": 2}\nAction: nope\nAction Input: {}',
            "Answer: 3",
        ]
    )
    await ReActAgent(tools=[add], llm=llm).run(input="1+2?")
    spans = list(exporter.get_finished_spans())
    by_id = {s.context.span_id: s for s in spans}
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert sorted(s.name for s in tools) == ["execute_tool add", "execute_tool nope"]
    assert {by_id[s.parent.span_id].name for s in tools} == {"step run_tool"}
    failed = next(s for s in tools if s.name == "execute_tool nope")
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["gen_ai.tool.call.id"] == "react_1_1"
    chats = [s for s in spans if s.name == "chat scripted"]
    assert len(chats) == 2
    turns = {by_id[s.parent.span_id] for s in chats}
    assert {t.name for t in turns} == {"invoke_agent agent"}
    assert {by_id[t.parent.span_id].name for t in turns} == {"step call_llm"}
