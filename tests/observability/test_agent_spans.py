"""Agent traces on a global SDK provider, with no configure_tracing() (in a fresh process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import asyncio, json, os, sys
import httpx, respx
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)  # what opentelemetry-instrument does; no configure_tracing

from batonflow.agents import AgentWorkflow, FunctionAgent
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from llama_index.llms.openai import OpenAI


async def lookup(topic: str) -> str:
    """Look up."""
    return f"facts about {topic}"


def broken(x: int) -> str:
    """Always fails."""
    raise ValueError("bad x")


def chunk(delta, finish=None, usage=None):
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-4o-mini",
            "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage:
        body["usage"] = usage
    return "data: " + json.dumps(body) + "\n\n"


async def main():
    llm = ScriptedLLM([
        ScriptedResponse(tool_calls=[ScriptedToolCall("lookup", {"topic": "moon"}),
                                     ScriptedToolCall("broken", {"x": 1})]),
        ScriptedResponse(tool_calls=[ScriptedToolCall("handoff",
                                                      {"to_agent": "writer", "reason": "go"})]),
        "The Moon is far.",
    ])
    researcher = FunctionAgent(name="researcher", description="Finds.", tools=[lookup, broken],
                               llm=llm, can_handoff_to=["writer"])
    writer = FunctionAgent(name="writer", description="Writes.", llm=llm)
    flow = AgentWorkflow(agents=[researcher, writer], root_agent="researcher")
    await flow.run(user_msg="Moon?")

    body = (chunk({"role": "assistant", "content": ""}) + chunk({"content": "hi"})
            + chunk({}, "stop")
            + chunk(None, usage={"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14})
            + "data: [DONE]\n\n")
    with respx.mock(base_url="https://api.openai.com/v1") as api:
        api.post("/chat/completions").mock(return_value=httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=body.encode()))
        openai = OpenAI(model="gpt-4o-mini", api_key="test", max_retries=0, temperature=0.3,
                        max_tokens=64)
        # BATONFLOW_TEST_DURABLE_DB: the same agent run durably (its calls journaled)
        durable = os.environ.get("BATONFLOW_TEST_DURABLE_DB")
        await FunctionAgent(name="solo", llm=openai, checkpoint_store=durable).run(user_msg="hi")

    out = []
    for s in exporter.get_finished_spans():
        out.append({
            "name": s.name,
            "id": s.context.span_id,
            "parent": s.parent.span_id if s.parent else None,
            "status": s.status.status_code.name,
            "attrs": {k: (list(v) if isinstance(v, tuple) else v)
                      for k, v in (s.attributes or {}).items()},
        })
    print(json.dumps(out))


asyncio.run(main())
'''


def run_script(**env: str) -> list[dict[str, Any]]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
    environ.update(env, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=environ, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def by_name(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"] == name]


def test_global_provider_sees_run_step_agent_llm_and_tool_spans() -> None:
    """With only a global SDK provider set, every kind of span arrives, once."""
    spans = run_script()
    names = [s["name"] for s in spans]
    assert names.count("invoke_workflow AgentWorkflow") == 1  # not twice
    assert "step run_agent_step" in names and "step call_tool" in names
    assert {"invoke_agent researcher", "invoke_agent writer"} <= set(names)
    assert "chat scripted" in names
    assert {"execute_tool lookup", "execute_tool broken", "execute_tool handoff"} <= set(names)
    agent = by_name(spans, "invoke_agent researcher")[0]
    assert agent["attrs"]["gen_ai.agent.name"] == "researcher"
    assert agent["attrs"]["gen_ai.operation.name"] == "invoke_agent"
    chats = {s["parent"] for s in by_name(spans, "chat scripted")}
    agent_ids = {s["id"] for s in spans if s["name"].startswith("invoke_agent")}
    assert chats <= agent_ids  # LLM calls nest under the agent's span


def test_tool_errors_handoffs_usage_and_llm_settings_are_on_the_spans() -> None:
    """error.type is the tool's exception type; handoffs and streamed usage are recorded."""
    spans = run_script()
    broken = by_name(spans, "execute_tool broken")[0]
    assert (broken["status"], broken["attrs"]["error.type"]) == ("ERROR", "ValueError")
    assert broken["attrs"]["gen_ai.agent.name"] == "researcher"
    handoff = by_name(spans, "execute_tool handoff")[0]
    assert handoff["attrs"]["batonflow.agent.handoff.from"] == "researcher"
    assert handoff["attrs"]["batonflow.agent.handoff.to"] == "writer"
    assert "gen_ai.tool.call.result" not in by_name(spans, "execute_tool lookup")[0]["attrs"]
    chat = by_name(spans, "chat gpt-4o-mini")[0]["attrs"]
    assert (chat["gen_ai.usage.input_tokens"], chat["gen_ai.usage.output_tokens"]) == (11, 3)
    assert chat["gen_ai.response.finish_reasons"] == ["stop"]
    assert chat["gen_ai.request.temperature"] == 0.3
    assert chat["gen_ai.request.max_tokens"] == 64


def test_content_capture_records_tool_results_and_tool_calls() -> None:
    """With content capture on, tool results and the tool calls in messages are recorded."""
    spans = run_script(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    lookup = by_name(spans, "execute_tool lookup")[0]["attrs"]
    assert lookup["gen_ai.tool.call.result"] == "facts about moon"
    second = [s for s in by_name(spans, "chat scripted")][1]["attrs"]
    messages = json.loads(second["gen_ai.input.messages"])
    calls = [p for m in messages for p in m["parts"] if p["type"] == "tool_call"]
    results = [p for m in messages for p in m["parts"] if p["type"] == "tool_call_response"]
    assert {c["name"] for c in calls} == {"lookup", "broken"}
    assert calls[0]["arguments"] == {"topic": "moon"}
    assert any(r["response"] == "facts about moon" for r in results)


def run_python(code: str) -> str:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
    environ["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


FLOW = """
import asyncio, sys
from batonflow.core import StartEvent, StopEvent, Workflow, step

class Hello(Workflow):
    @step
    async def hello(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result="hi")

async def once():
    return await Hello().run()
"""


def test_without_an_sdk_nothing_tracing_is_loaded() -> None:
    """With no OpenTelemetry SDK imported, a run loads neither the SDK nor the tracing module."""
    out = run_python(
        FLOW
        + """
assert asyncio.run(once()) == "hi"
print("opentelemetry.sdk.trace" in sys.modules, "batonflow.core.tracing" in sys.modules)
"""
    )
    assert out == "False False"


def test_configure_tracing_and_a_global_provider_record_each_span_once() -> None:
    """configure_tracing()'s instrument takes the run; the global-provider one stands down."""
    out = run_python(
        """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
global_spans = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(global_spans))
trace.set_tracer_provider(provider)
from batonflow.observability import configure_tracing
own = InMemorySpanExporter()
handle = configure_tracing(exporter=own, instrument_llama_index=False)
"""
        + FLOW
        + """
asyncio.run(once())
handle.force_flush()
print(len(own.get_finished_spans()), len(global_spans.get_finished_spans()))
"""
    )
    assert out == "2 0"


def test_a_durable_agent_runs_chat_span_keeps_the_llm_settings(tmp_path: Path) -> None:
    """A durable run journals its LLM calls with their cassette request (for `runs export`):
    the call made through that capture still shows the LLM's settings on its span."""
    spans = run_script(BATONFLOW_TEST_DURABLE_DB=str(tmp_path / "runs.db"))
    chat = by_name(spans, "chat gpt-4o-mini")[0]["attrs"]
    assert chat["gen_ai.request.temperature"] == 0.3
    assert chat["gen_ai.request.max_tokens"] == 64
    assert (chat["gen_ai.usage.input_tokens"], chat["gen_ai.usage.output_tokens"]) == (11, 3)
