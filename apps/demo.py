"""``batonflow demo``: a short offline tour of what batonflow does, each part naming its page.

1. An agent calling tools: a function-calling agent whose LLM is scripted (``docs/agents.md``).
2. RAG: the bundled sample documents ingested into local Qdrant, one question answered from
   them, extractively (or with OpenAI when ``OPENAI_API_KEY`` is set) (``docs/rag.md``).
3. A drawing: the agent's steps, as an HTML page and as Mermaid text (``docs/drawing.md``).
4. A trace: the spans of the agent's run (run, steps, LLM and tool calls), written to
   ``.batonflow/demo-trace.jsonl`` and printed as a tree (``docs/tracing.md``).
5. The run console: the HTTP server with a human-in-the-loop flow, a run answered through the
   Python client, and the console's address (``docs/server.md``); ``--serve`` keeps it open.

Everything runs offline on embedded defaults (SQLite in ``.batonflow/runs.db``, Qdrant in
``.batonflow/qdrant``); nothing needs a key or a service. It needs the ``demo`` extra.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._console import err, out
from .config import Settings

QUESTION = "How do I resume a workflow run after a crash?"
AGENT_QUESTION = "What is the weather in Paris and Rome?"


@dataclass
class Tour:
    """What the parts of the demo hand each other."""

    settings: Settings
    serve: bool = False
    agent: Any = None
    trace_file: Path | None = None
    tracing: Any = None
    notes: list[str] = field(default_factory=list)


def _section(number: int, title: str, page: str) -> None:
    out.print(f"\n[bold cyan]{number}. {title}[/]  [dim]→ {page}[/]")


def run_demo(settings: Settings, serve: bool = False) -> None:
    """Run every part of the demo, printing as it goes.

    Args:
        settings: Where the data goes (``settings.home``) and the optional OpenAI key.
        serve: Keep the server (and its console) running at the end, until Ctrl-C.
    """
    started = time.perf_counter()
    out.print(f"[bold]batonflow demo[/] — offline, embedded defaults (data in {settings.home}/)")
    settings.home.mkdir(parents=True, exist_ok=True)
    tour = Tour(settings, serve=serve)
    _start_tracing(tour)
    parts: list[tuple[str, str, Callable[[Tour], Any]]] = [
        ("An agent calling tools", "docs/agents.md", _agent),
        ("RAG: an answer from the sample docs", "docs/rag.md", _rag),
        ("A drawing of the agent", "docs/drawing.md", _drawing),
        ("A trace of the agent's run", "docs/tracing.md", _trace),
        ("The run console", "docs/server.md#the-run-console", _console),
    ]
    try:
        for number, (title, page, part) in enumerate(parts, 1):
            _section(number, title, page)
            part(tour)
    finally:
        if tour.tracing is not None:
            tour.tracing.shutdown()
    out.print(
        f"\n[green]done[/] in {time.perf_counter() - started:.1f} s. Next: "
        "batonflow serve · batonflow run guess-number --set target=7 --stream · "
        "batonflow --help",
        markup=True,
    )


def _start_tracing(tour: Tour) -> None:
    """Trace every run of the demo: to the user's OTEL_* exporter, else to a JSON-lines file."""
    from ._console import setup_tracing

    if tour.settings.tracing_configured:
        tour.notes.append(f"traces also go where OTEL_* says: {setup_tracing('batonflow-demo')}")
        return
    from batonflow.observability import configure_tracing
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    path = tour.settings.home / "demo-trace.jsonl"
    sink = path.open("w", encoding="utf-8")
    exporter = ConsoleSpanExporter(
        out=sink, formatter=lambda span: span.to_json(indent=None) + "\n"
    )
    tour.trace_file = path
    tour.tracing = configure_tracing(service_name="batonflow-demo", exporter=exporter)


async def get_weather(city: str) -> str:
    """Get the current weather of a city.

    Args:
        city: The city's name.
    """
    return {"Paris": "18C, sunny", "Rome": "24C, clear"}.get(city, "unknown")


def _agent(tour: Tour) -> None:
    from batonflow.agents import FunctionCallingAgent
    from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall

    # The LLM replays two turns (offline, no key): it asks for both tools, then answers.
    llm = ScriptedLLM(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall("get_weather", {"city": "Paris"}),
                    ScriptedToolCall("get_weather", {"city": "Rome"}),
                ]
            ),
            "Paris: 18C and sunny. Rome: 24C and clear.",
        ]
    )
    tour.agent = FunctionCallingAgent(tools=[get_weather], llm=llm, timeout=60)
    out.print(f"FunctionCallingAgent(tools=[get_weather]), asked: {AGENT_QUESTION}", markup=False)

    async def ask() -> Any:
        return await tour.agent.run(input=AGENT_QUESTION)

    result = asyncio.run(ask())
    for call in result.tool_calls:
        args = ", ".join(f"{k}={v!r}" for k, v in call.tool_kwargs.items())
        out.print(f"  tool call: {call.tool_name}({args}) → {call.output}", markup=False)
    out.print(f"  answer: {result.response}", markup=False)
    out.print("  (a scripted LLM; pass llm=OpenAI(...) for a real one)", markup=False)


def _rag(tour: Tour) -> None:
    from .rag_cli import ask_question, ingest_paths, print_answer, print_report

    settings = tour.settings
    rag_settings = settings.with_(collection="batonflow-demo")
    docs = sample_docs()
    out.print(f"ingesting {docs} into local Qdrant at {settings.qdrant_path}", markup=False)
    report = asyncio.run(ingest_paths(rag_settings, [str(docs)], progress=True))
    print_report(report, rag_settings)
    mode = "OpenAI" if settings.openai_api_key else "extractive (no OPENAI_API_KEY)"
    out.print(f"\n[bold]Q:[/] {QUESTION}  [dim]({mode})[/]")
    print_answer(asyncio.run(ask_question(rag_settings, QUESTION, top_k=3)))


def sample_docs() -> Path:
    """The folder of sample documents bundled with ``batonflow.rag``."""
    import batonflow.rag

    folder = Path(batonflow.rag.__file__).parent / "sample_docs"
    if not folder.is_dir():
        raise FileNotFoundError(
            f"The sample documents are missing from {folder}; reinstall batonflow "
            "(pip install -e '.[demo]')."
        )
    return folder


def _drawing(tour: Tour) -> None:
    from batonflow.core import draw_all_possible_flows, draw_all_possible_flows_mermaid

    page = tour.settings.home / "demo-agent.html"
    draw_all_possible_flows(tour.agent, filename=str(page))
    out.print(f"all possible flows of the agent: {page} (open it in a browser)", markup=False)
    mermaid = draw_all_possible_flows_mermaid(tour.agent)
    edges = [line.strip() for line in mermaid.splitlines() if "-->" in line]
    out.print(f"as Mermaid ({len(edges)} edges), the first ones:", markup=False)
    for line in edges[:4]:
        out.print(f"  {line}", markup=False)


def _trace(tour: Tour) -> None:
    for note in tour.notes:
        out.print(note, markup=False)
    if tour.tracing is None or tour.trace_file is None:
        return
    tour.tracing.force_flush()
    spans = [json.loads(line) for line in tour.trace_file.read_text("utf-8").splitlines()]
    out.print(
        f"{len(spans)} spans written to {tour.trace_file} (one JSON object a line); with "
        "OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 they go to Jaeger instead",
        markup=False,
    )
    first = min(spans, key=lambda s: s["start_time"]) if spans else None
    if first is None:
        return
    trace_id = first["context"]["trace_id"]
    agent_run = [s for s in spans if s["context"]["trace_id"] == trace_id]
    out.print("the agent's run:", markup=False)
    for depth, span in _tree(agent_run):
        out.print(f"  {'  ' * depth}{span['name']}", markup=False)


def _tree(spans: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """The spans of one trace in start order, each with its depth under the root."""
    ids = {s["context"]["span_id"] for s in spans}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for span in sorted(spans, key=lambda s: s["start_time"]):
        parent = span.get("parent_id")
        children.setdefault(parent if parent in ids else None, []).append(span)
    shown: list[tuple[int, dict[str, Any]]] = []

    def walk(parent: str | None, depth: int) -> None:
        for span in children.get(parent, []):
            shown.append((depth, span))
            walk(span["context"]["span_id"], depth + 1)

    walk(None, 0)
    return shown


def _console(tour: Tour) -> None:
    from batonflow.agents import GuessNumberWorkflow
    from batonflow.client import Client
    from batonflow.core.checkpoints import SqliteCheckpointStore

    from .examples.approval import ApprovalFlow
    from .run_store import RunStore
    from .server import BackgroundServer, create_app

    settings = tour.settings
    checkpoints = SqliteCheckpointStore(settings.db_path)
    store = RunStore(backend=checkpoints)
    flows = {
        "hitl": ApprovalFlow(timeout=None),
        "guess-number": GuessNumberWorkflow(timeout=30, print_progress=False),
    }
    app = create_app(flows, store=store, checkpoints=checkpoints)
    try:
        with BackgroundServer(app) as server, Client(server.url) as client:
            out.print(f"server on {server.url} (runs kept in {settings.db_path})", markup=False)
            guessed = client.start("guess-number", {"target": 73}, wait=True)
            out.print(f"  guess-number → {guessed.status}: {guessed.result}", markup=False)
            run = client.start("hitl", {"topic": "the HTTP API"})
            for event in client.events(run.run_id):
                if event.type == "InputRequiredEvent":
                    question = str(event.value.get("prefix", "")).strip().splitlines()[0]
                    out.print(f"  hitl asks: {question}", markup=False)
                    sent = client.answer(run.run_id, "lgtm")
                    out.print(f"  the demo answers 'lgtm' → {sent.status}", markup=False)
            done = client.get(run.run_id)
            out.print(f"  hitl → {done.status}: {done.result}", markup=False)
            out.print(f"the console: {server.url}/", markup=False)
            out.print(f"this run's page: {server.url}/#/runs/{run.run_id}", markup=False)
            if tour.serve:
                err.print("serving until Ctrl-C (the runs stay in the run store)")
                _wait_for_ctrl_c()
            else:
                err.print(
                    "  (the server stops with the demo: keep it with batonflow demo --serve, or "
                    "run batonflow serve; see the runs later with batonflow runs list)"
                )
    finally:
        store.close()


def _wait_for_ctrl_c() -> None:
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        err.print("stopped")
