"""Traces as Arize Phoenix and Langfuse read them: OpenInference kinds, inputs, outputs, project.

Every test exports over OTLP/HTTP to a receiver that decodes the protobuf, then reads the spans
with the rules of each tool (tests/observability/backends.py).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.error import HTTPError
from urllib.request import urlopen

import pytest
from backends import langfuse_trace, loads, phoenix_projects, received
from batonflow.agents import FunctionAgent
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
from batonflow.observability import configure_tracing
from llama_index.core.base.llms.types import ChatMessage
from otel_testing import OTLPReceiver
from otel_testing import ScriptedLLM as TokenLLM

CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


class Question(Event):
    q: str


class Research(Workflow):
    @step
    async def plan(self, ctx: Context, ev: StartEvent) -> Question:
        return Question(q=f"who likes {ev.topic}?")

    @step
    async def ask(self, ev: Question) -> StopEvent:
        reply = await TokenLLM().achat([ChatMessage(role="user", content=ev.q)])
        return StopEvent(result=str(reply.message.content))


@pytest.fixture
def traced(otlp_receiver: OTLPReceiver, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """configure_tracing() from the standard variables, exporting to the receiver."""
    monkeypatch.setenv("OTEL_SERVICE_NAME", "pirate-research")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_receiver.url)
    yield


async def traced_research() -> str:
    """Research run once under configure_tracing(), flushed to the receiver."""
    handle = configure_tracing()
    try:
        return await Research().run(topic="pirates")
    finally:
        handle.shutdown()


async def test_phoenix_files_the_run_under_the_service_and_shows_kinds(
    traced: None, otlp_receiver: OTLPReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Phoenix: project = OTEL_SERVICE_NAME, run and steps CHAIN, LLM with tokens; no content by default."""
    monkeypatch.delenv(CAPTURE, raising=False)
    assert await traced_research() == "hello there"
    projects = phoenix_projects(otlp_receiver)
    assert list(projects) == ["pirate-research"]
    spans = {s.name: s for s in projects["pirate-research"]}
    assert spans["invoke_workflow Research"].kind == "CHAIN"
    assert spans["step plan"].kind == spans["step ask"].kind == "CHAIN"
    chat = spans["chat scripted-1"]
    assert chat.kind == "LLM" and chat.tokens == (7, 2, 9)
    assert all(s.input is None and s.output is None for s in spans.values())


async def test_phoenix_shows_inputs_and_outputs_with_content_capture(
    traced: None, otlp_receiver: OTLPReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With capture on, the run's root row has the start fields and the result; steps their events."""
    monkeypatch.setenv(CAPTURE, "true")
    await traced_research()
    spans = {s.name: s for s in phoenix_projects(otlp_receiver)["pirate-research"]}
    run = spans["invoke_workflow Research"]
    assert (loads(run.input), run.input_mime_type) == ({"topic": "pirates"}, "application/json")
    assert (run.output, run.output_mime_type) == ("hello there", "text/plain")
    plan = spans["step plan"]
    assert loads(plan.input) == {"StartEvent": {"topic": "pirates"}}
    assert loads(plan.output) == [{"Question": {"q": "who likes pirates?"}}]
    chat = spans["chat scripted-1"]
    assert chat.input_mime_type == chat.output_mime_type == "application/json"
    assert loads(chat.input)[0]["parts"][0]["content"] == "who likes pirates?"
    assert loads(chat.output)[0]["parts"][0]["content"] == "hello there"


async def test_a_project_named_in_the_resource_attributes_wins(
    traced: None, otlp_receiver: OTLPReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OTEL_RESOURCE_ATTRIBUTES=openinference.project.name=... is not overridden by the service."""
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "openinference.project.name=evals")
    await traced_research()
    assert list(phoenix_projects(otlp_receiver)) == ["evals"]


async def test_langfuse_types_observations_and_fills_the_trace(
    traced: None, otlp_receiver: OTLPReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Langfuse: the run is a CHAIN whose input/output are the trace's; the LLM call a generation."""
    monkeypatch.setenv(CAPTURE, "true")
    await traced_research()
    trace, observations = langfuse_trace(otlp_receiver)
    assert trace["name"] == "invoke_workflow Research"
    assert loads(trace["input"]) == {"topic": "pirates"} and trace["output"] == "hello there"
    by_name = {o.name: o for o in observations}
    assert by_name["invoke_workflow Research"].type == "CHAIN"
    assert by_name["step ask"].type == "CHAIN"
    chat = by_name["chat scripted-1"]
    assert (chat.type, chat.model) == ("GENERATION", "scripted-1-0611")
    # input.value comes first for Langfuse: it carries the same messages as the GenAI attribute
    assert loads(chat.input)[0]["role"] == "user"
    assert loads(chat.output)[0]["parts"][0]["content"] == "hello there"


async def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"facts about {topic}"


async def test_agent_runs_and_tools_read_as_agent_and_tool(
    traced: None, otlp_receiver: OTLPReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent's run and turns are AGENT, its tool calls TOOL with arguments in, result out."""
    monkeypatch.setenv(CAPTURE, "true")
    llm = ScriptedLLM(
        [ScriptedResponse(tool_calls=[ScriptedToolCall("lookup", {"topic": "moon"})]), "Far."]
    )
    handle = configure_tracing()
    try:
        await FunctionAgent(name="scout", tools=[lookup], llm=llm).run(user_msg="Moon?")
    finally:
        handle.shutdown()
    spans = phoenix_projects(otlp_receiver)["pirate-research"]
    kinds = {s.name: s.kind for s in spans}
    (run,) = [s for s in spans if s.name.startswith("invoke_workflow")]
    assert run.kind == "AGENT" and kinds["invoke_agent scout"] == "AGENT"
    tool = next(s for s in spans if s.name == "execute_tool lookup")
    assert tool.kind == "TOOL"
    assert loads(tool.input) == {"topic": "moon"} and tool.output == "facts about moon"
    _, observations = langfuse_trace(otlp_receiver)
    types = {o.name: o.type for o in observations}
    assert types["execute_tool lookup"] == "TOOL"
    assert types[run.name] == types["invoke_agent scout"] == "AGENT"


# openinference's handler calls pydantic's deprecated .json(), a warning the suite would raise
@pytest.mark.filterwarnings("ignore::DeprecationWarning:openinference.*")
async def test_openinference_llama_index_instrumentor_adds_no_second_span(
    traced: None, otlp_receiver: OTLPReceiver
) -> None:
    """With trace_workflows=False and instrument_llama_index=False, OpenInference's
    instrumentor alone traces the run, its steps and the LLM call, in one tree."""
    instrumentation = pytest.importorskip("openinference.instrumentation.llama_index")
    handle = configure_tracing(trace_workflows=False, instrument_llama_index=False)
    instrumentor = instrumentation.LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=handle.tracer_provider)
    try:
        await Research().run(topic="pirates")
    finally:
        instrumentor.uninstrument()
        handle.shutdown()
    spans = received(otlp_receiver)
    by_id = {s.span_id: s for s in spans}
    llm = {s.span_id for s in spans if s.attributes.get("openinference.span.kind") == "LLM"}
    # one call, one outermost LLM span (its own nested achat -> chat -> complete spans under it)
    (outer,) = [by_id[i] for i in llm if by_id[i].parent_id not in llm]
    step = by_id[outer.parent_id]
    assert step.name == "Research.ask"  # the step's span, from batonflow's llama-index events
    assert by_id[step.parent_id].name == "Research.run"
    names = [s.name for s in spans]
    # batonflow's own run, step and LLM spans are off: nothing is traced twice
    assert not [n for n in names if n.startswith(("chat ", "step ", "invoke_workflow"))]
    assert sorted(n for n in names if n.startswith("Research.")) == [
        "Research.ask",
        "Research.plan",
        "Research.run",
    ]
    assert {
        s.attributes.get("openinference.span.kind") for s in spans if s.name == "Research.run"
    } == {"CHAIN"}


@pytest.mark.skipif(
    not os.environ.get("BATONFLOW_TEST_PHOENIX_URL"),
    reason="set BATONFLOW_TEST_PHOENIX_URL (e.g. http://localhost:6006 of `phoenix serve`)",
)
async def test_a_real_phoenix_shows_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Against a running Phoenix: the project is the service, kinds and the root's input/output show."""
    phoenix = os.environ["BATONFLOW_TEST_PHOENIX_URL"].rstrip("/")
    service = f"batonflow-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("OTEL_SERVICE_NAME", service)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix)
    monkeypatch.setenv(CAPTURE, "true")
    await traced_research()
    deadline = time.monotonic() + 30
    spans: list[dict[str, Any]] = []
    while len(spans) < 4 and time.monotonic() < deadline:
        try:
            with urlopen(f"{phoenix}/v1/projects/{service}/spans?limit=50", timeout=5) as resp:
                spans = json.load(resp)["data"]
        except HTTPError:  # the project appears with its first span
            pass
        time.sleep(0.5)
    by_name = {s["name"]: s for s in spans}
    run = by_name["invoke_workflow Research"]
    assert run["span_kind"] == "CHAIN"
    assert json.loads(run["attributes"]["input.value"]) == {"topic": "pirates"}
    assert run["attributes"]["output.value"] == "hello there"
    assert by_name["chat scripted-1"]["span_kind"] == "LLM"
