"""``batonflow runs list | show | resume``: the one run store (``.batonflow/runs.db``).

Library, CLI and server runs share one record per run (status, start fields, result or error,
the event log, checkpoints). These commands show them; ``resume`` continues a run that waits
for an answer, or one that stopped mid-way, from its last checkpoint.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ._console import cli_errors, err, out, print_json, print_result
from .config import Settings
from .registry import PREBUILT, BadParameterError, FlowNotFoundError, load_workflow
from .run_store import RunStore

runs_app = typer.Typer(
    help="List, inspect and resume runs kept in the run store.",
    no_args_is_help=True,
    add_completion=False,
)

_DB = typer.Option(None, "--db", help="Run store \\[env BATONFLOW_DB; .batonflow/runs.db].")
_DEBUG = typer.Option(False, "--debug", help="Show tracebacks of errors.")


def _open(db: Path | None) -> RunStore:
    settings = Settings.load(db_path=db)
    if not settings.db_path.exists():
        raise BadParameterError(
            f"No run store at {str(settings.db_path)!r} yet; runs appear there once "
            "'batonflow serve', 'batonflow run --durable' or 'batonflow demo' ran (or pass "
            "--db PATH)."
        )
    return RunStore(settings.db_path)


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _unknown_run(run_id: str) -> BadParameterError:
    return BadParameterError(
        f"Run {run_id!r} is not in the run store; 'batonflow runs list' shows the ids."
    )


@runs_app.command("list")
def list_runs(
    workflow: str | None = typer.Option(None, help="Only runs of this workflow."),
    status: str | None = typer.Option(None, help="Only runs with this status."),
    limit: int = typer.Option(50, min=1, help="At most this many runs, newest first."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    db: Path | None = _DB,
    debug: bool = _DEBUG,
) -> None:
    """List runs, newest first: server runs and checkpointed runs."""
    with cli_errors(debug):
        store = _open(db)
        try:
            rows = [r.public() for r in store.list(workflow, status, limit)]
        finally:
            store.close()
        if as_json:
            print_json(rows)
            return
        if not rows:
            err.print("no runs")
            return
        table = Table(box=None, pad_edge=False)
        for name in ("run id", "workflow", "status", "started"):
            table.add_column(name, no_wrap=True)
        for r in rows:
            started = dt.datetime.fromtimestamp(r["created_at"]).strftime("%m-%d %H:%M:%S")
            table.add_row(r["run_id"], r["workflow"], r["status"], started)
        out.print(table)


@runs_app.command()
def show(
    run_id: str = typer.Argument(..., help="The run id."),
    events: bool = typer.Option(False, "--events", help="Also list the events it streamed."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    db: Path | None = _DB,
    debug: bool = _DEBUG,
) -> None:
    """Show one run: status, start fields, result or error, checkpoints."""
    with cli_errors(debug):
        store = _open(db)
        try:
            row = store.get(run_id)
            if row is None:
                raise _unknown_run(run_id)
            data = row.public()
            data["pid"] = row.pid
            data["checkpoints"] = [
                {"seq": c.seq, "step": c.step_name, "created_at": c.created_at}
                for c in store.backend.list(run_id)
            ]
            if events:
                data["events"] = [e.body for e in store.events(run_id)]
        finally:
            store.close()
        if as_json:
            print_json(data)
            return
        for key in ("run_id", "workflow", "status", "start", "error"):
            if data.get(key) is not None:
                out.print(f"{key}: {data[key]}", markup=False)
        if data["status"] == "interrupted":
            gone = f", pid {data['pid']}, is gone" if data.get("pid") else " stopped"
            out.print(
                f"  (the process that ran it{gone}; continue it with 'batonflow runs resume "
                f"{run_id}')",
                markup=False,
            )
        out.print(
            f"started: {_when(data['created_at'])}  updated: {_when(data['updated_at'])}",
            markup=False,
        )
        steps = [c["step"] for c in data["checkpoints"] if c["step"]]
        if steps:
            out.print(f"checkpoints after: {', '.join(steps)}", markup=False)
        if data.get("result") is not None:
            out.print("result:", markup=False)
            print_result(data["result"])
        for entry in data.get("events", []):
            label = entry.get("type") or f"end ({entry.get('status')})"
            out.print(f"  #{entry['seq']} {label} {entry.get('value', '')}", markup=False)


@runs_app.command()
def resume(
    run_id: str = typer.Argument(..., help="The run id."),
    flow: str | None = typer.Option(
        None,
        help="The workflow to continue it with (module:Class); default: the flow the run was "
        "started with ('batonflow run --durable' remembers it) or its prebuilt flow.",
    ),
    answers: list[str] = typer.Option(
        [], "--answer", "-a", help="Answer(s) to give when the run asks for input."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    db: Path | None = _DB,
    debug: bool = _DEBUG,
) -> None:
    """Continue a run: one waiting for input, or one stopped mid-way (from its checkpoint)."""
    with cli_errors(debug):
        store = _open(db)
        try:
            row = store.get(run_id)
            if row is None:
                raise _unknown_run(run_id)
            record = store.backend.run(run_id)
            if row.status == "completed":
                raise BadParameterError(
                    f"Run {run_id!r} is completed: nothing is left to continue; 'batonflow "
                    f"runs show {run_id}' shows its result, or start a new run."
                )
            if store.backend.latest(run_id) is None and record.start_event is None:
                raise BadParameterError(
                    f"Run {run_id!r} is {row.status} and has no saved context or checkpoint to "
                    "continue from; start a new run instead."
                )
            workflow = _workflow_for(flow or row.flow_ref, row.workflow, run_id)
            pending = list(answers)
            first = None
            if row.status == "waiting":
                first = pending.pop(0) if pending else _ask(_last_prefix(store, run_id))
            result = asyncio.run(_resume(workflow, store.backend, run_id, first, pending))
        finally:
            store.close()
        if as_json:
            print_json({"run_id": run_id, "result": result})
        else:
            print_result(result)


def _workflow_for(flow: str | None, name: str, run_id: str) -> Any:
    if flow is not None:
        return load_workflow(flow)
    for prebuilt in PREBUILT.values():
        if name == prebuilt.name or name == prebuilt.target.rpartition(":")[2]:
            return load_workflow(prebuilt.name)
    raise FlowNotFoundError(
        f"Run {run_id!r} belongs to workflow {name!r}, which is not a prebuilt flow; pass "
        "--flow module:WorkflowClass to continue it."
    )


def _last_prefix(store: Any, run_id: str) -> str:
    prefix = "> "
    for entry in store.events(run_id):
        if entry.body.get("type") == "InputRequiredEvent":
            prefix = str(entry.body.get("value", {}).get("prefix") or "> ")
    return prefix


def _ask(prompt: str) -> str:
    from .cli import _ask as ask

    return ask(prompt)


async def _answering(handler: Any, answers: list[str], cptr: Any) -> Any:
    from batonflow.core import HumanResponseEvent, InputRequiredEvent

    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            answer = answers.pop(0) if answers else _ask(str(event.get("prefix", "") or "> "))
            cptr.send_event(handler.run_id, HumanResponseEvent(response=answer), answer=True)
    return await handler


async def _resume(
    workflow: Any, backend: Any, run_id: str, first: str | None, answers: list[str]
) -> Any:
    from batonflow.core import HumanResponseEvent
    from batonflow.core.checkpoints import WorkflowCheckpointer

    cptr = WorkflowCheckpointer(workflow, store=backend)
    if first is not None:
        # Committed to the run's inbox first: the resumed run takes it in.
        cptr.send_event(run_id, HumanResponseEvent(response=first), answer=True)
    handler = cptr.resume(run_id)
    return await _answering(handler, answers, cptr)
