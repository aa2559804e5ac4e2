"""``batonflow demo``: a short offline tour of what batonflow does.

1. RAG: ingest the bundled sample documents into local Qdrant (``.batonflow/qdrant``) and
   answer two questions, extractively (or with OpenAI when ``OPENAI_API_KEY`` is set).
2. A loop: the guess-number workflow finds a number by binary search.
3. Human in the loop: the approval flow asks for a decision; the demo answers it.
4. Durable runs: the approval run again, through the HTTP server, kept in ``.batonflow/runs.db``.
5. Where the traces went.

Everything runs offline on embedded defaults; nothing needs a key or a service.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._console import err, out, setup_tracing
from .config import Settings

QUESTIONS = (
    "How do I resume a workflow run after a crash?",
    "Where is the data kept when no Qdrant server is used?",
)


def _section(title: str) -> None:
    out.print(f"\n[bold cyan]== {title}[/]")


def run_demo(settings: Settings) -> None:
    """Run every part of the demo, printing as it goes."""
    started = time.perf_counter()
    out.print(f"[bold]batonflow demo[/] — offline, embedded defaults (data in {settings.home}/)")
    traces = setup_tracing("batonflow-demo")
    settings.home.mkdir(parents=True, exist_ok=True)
    parts: list[tuple[str, Callable[[Settings], Any]]] = [
        ("RAG over the sample docs", _rag),
        ("A loop: guess the number", _guess),
        ("Human in the loop", _hitl),
        ("Durable runs over HTTP", _server),
    ]
    for title, part in parts:
        _section(title)
        part(settings)
    _section("Traces")
    out.print(f"traces: {traces}", markup=False)
    out.print(
        f"\n[green]done[/] in {time.perf_counter() - started:.1f} s. Next: "
        "batonflow run guess-number --set target=7 --stream · batonflow serve · "
        "batonflow --help"
    )


def _rag(settings: Settings) -> None:
    from .rag_cli import ask_question, ingest_paths, print_answer, print_report

    rag_settings = settings.with_(collection="batonflow-demo")
    docs = sample_docs()
    out.print(f"ingesting {docs} into local Qdrant at {settings.qdrant_path}", markup=False)
    report = asyncio.run(ingest_paths(rag_settings, [str(docs)], progress=True))
    print_report(report, rag_settings)
    mode = "OpenAI" if settings.openai_api_key else "extractive (no OPENAI_API_KEY)"
    for question in QUESTIONS:
        out.print(f"\n[bold]Q:[/] {question}  [dim]({mode})[/]")
        print_answer(asyncio.run(ask_question(rag_settings, question, top_k=3)))


def sample_docs() -> Path:
    """The folder of sample documents bundled with ``batonflow.rag``."""
    import batonflow.rag

    folder = Path(batonflow.rag.__file__).parent / "sample_docs"
    if not folder.is_dir():
        raise FileNotFoundError(
            f"The sample documents are missing from {folder}; reinstall batonflow "
            "(pip install -e '.[all]')."
        )
    return folder


def _guess(settings: Settings) -> None:
    from batonflow.agents import GuessNumberWorkflow

    async def go() -> Any:
        handler = GuessNumberWorkflow(timeout=30).run(target=73)
        async for event in handler.stream_events():
            if type(event).__name__ != "StopEvent":
                out.print(f"  {type(event).__name__} {_fields(event)}", markup=False)
        return await handler

    out.print(
        "GuessNumberWorkflow(target=73): each wrong guess loops back to the same step", markup=False
    )
    out.print(f"result: {asyncio.run(go())}", markup=False)


def _hitl(settings: Settings) -> None:
    from batonflow.core import HumanResponseEvent, InputRequiredEvent

    from .examples.approval import ApprovalFlow

    async def go() -> Any:
        handler = ApprovalFlow(timeout=30).run(topic="batonflow 0.1")
        async for event in handler.stream_events():
            if isinstance(event, InputRequiredEvent):
                question = str(event.prefix).strip().splitlines()[0]
                out.print(f"  the run asks: {question} {event.get('draft')!r}", markup=False)
                out.print("  the demo answers: yes", markup=False)
                handler.ctx.send_event(HumanResponseEvent(response="yes"))
        return await handler

    out.print(f"result: {asyncio.run(go())}", markup=False)


def _server(settings: Settings) -> None:
    import httpx
    from batonflow.core.checkpoints import SqliteCheckpointStore

    from .examples.approval import ApprovalFlow
    from .run_store import RunStore
    from .server import BackgroundServer, create_app

    store = RunStore(settings.db_path)
    checkpoints = SqliteCheckpointStore(settings.db_path)
    app = create_app({"hitl": ApprovalFlow(timeout=None)}, store=store, checkpoints=checkpoints)
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        out.print(f"server on {server.url} (runs kept in {settings.db_path})", markup=False)
        run = http.post("/workflows/hitl/runs", json={"topic": "the HTTP API"}).json()
        out.print(f"  POST /workflows/hitl/runs → {run}", markup=False)
        with http.stream("GET", f"/runs/{run['run_id']}/events") as events:
            for line in events.iter_lines():
                if line.startswith("data:") and "InputRequiredEvent" in line:
                    break
        out.print("  GET /runs/{id}/events → InputRequiredEvent (the run waits)", markup=False)
        answer = {"type": "HumanResponseEvent", "data": {"response": "lgtm"}}
        sent = http.post(f"/runs/{run['run_id']}/events", json=answer).json()
        out.print(f"  POST /runs/{{id}}/events → {sent}", markup=False)
        for _ in range(200):
            status = http.get(f"/runs/{run['run_id']}").json()
            if status["status"] not in ("running", "waiting"):
                break
            time.sleep(0.02)
        out.print(f"  GET /runs/{{id}} → {status['status']}: {status['result']}", markup=False)
    store.close()
    checkpoints.close()
    err.print("  (see them later with: batonflow runs list)")


def _fields(event: Any) -> dict[str, Any]:
    from ._wire import event_envelope

    value: dict[str, Any] = event_envelope(event)["value"]
    return value
