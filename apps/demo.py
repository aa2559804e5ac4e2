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
    from batonflow.agents import GuessChecked, GuessNumberWorkflow

    async def go() -> Any:
        handler = GuessNumberWorkflow(timeout=30, print_progress=False).run(target=73)
        async for event in handler.stream_events():
            if isinstance(event, GuessChecked):  # each guess with its own verdict
                out.print(
                    f"  attempt {event.attempt}: {event.guess} is {event.verdict}", markup=False
                )
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
    from batonflow.client import Client
    from batonflow.core.checkpoints import SqliteCheckpointStore

    from .examples.approval import ApprovalFlow
    from .run_store import RunStore
    from .server import BackgroundServer, create_app

    store = RunStore(settings.db_path)
    checkpoints = SqliteCheckpointStore(settings.db_path)
    app = create_app({"hitl": ApprovalFlow(timeout=None)}, store=store, checkpoints=checkpoints)
    with BackgroundServer(app) as server, Client(server.url) as client:
        out.print(f"server on {server.url} (runs kept in {settings.db_path})", markup=False)
        run = client.start("hitl", {"topic": "the HTTP API"})
        out.print(f"  POST /workflows/hitl/runs → run {run.run_id}: {run.status}", markup=False)
        for event in client.events(run.run_id):
            if event.type == "InputRequiredEvent":
                out.print(f"  GET /runs/{{id}}/events → #{event.seq} {event.type}", markup=False)
                sent = client.answer(run.run_id, "lgtm")
                out.print(
                    f"  POST /runs/{{id}}/events (answer 'lgtm') → {sent.status}", markup=False
                )
        done = client.get(run.run_id)
        out.print(f"  GET /runs/{{id}} → {done.status}: {done.result}", markup=False)
    store.close()
    checkpoints.close()
    err.print("  (see them later with: batonflow runs list)")
