"""``batonflow runs list | show | resume``: the durable run store (``.batonflow/runs.db``)."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ._console import cli_errors, err, out, print_json, print_result
from .config import Settings
from .registry import BadParameterError, FlowNotFoundError, load_workflow

runs_app = typer.Typer(
    help="List, inspect and resume runs kept in the run store.",
    no_args_is_help=True,
    add_completion=False,
)

_DB = typer.Option(None, "--db", help="Run store [env BATONFLOW_DB; .batonflow/runs.db].")
_DEBUG = typer.Option(False, "--debug", help="Show tracebacks of errors.")


def _store(db: Path | None) -> Any:
    from .run_store import RunStore

    settings = Settings.load(db_path=db)
    if not settings.db_path.exists():
        raise BadParameterError(
            f"No run store at {str(settings.db_path)!r} yet; runs appear there once "
            "'batonflow serve' or 'batonflow demo' ran (or pass --db PATH)."
        )
    return RunStore(settings.db_path)


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


@runs_app.command("list")
def list_runs(
    workflow: str | None = typer.Option(None, help="Only runs of this workflow."),
    status: str | None = typer.Option(None, help="Only runs with this status."),
    limit: int = typer.Option(50, min=1, help="At most this many runs, newest first."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    db: Path | None = _DB,
    debug: bool = _DEBUG,
) -> None:
    """List runs, newest first."""
    with cli_errors(debug):
        rows = _store(db).list(workflow, status, limit)
        if as_json:
            print_json([r.public() for r in rows])
            return
        if not rows:
            err.print("no runs")
            return
        table = Table("run id", "workflow", "status", "started", "updated")
        for r in rows:
            table.add_row(r.run_id, r.workflow, r.status, _when(r.created_at), _when(r.updated_at))
        out.print(table)


@runs_app.command()
def show(
    run_id: str = typer.Argument(..., help="The run id."),
    events: bool = typer.Option(False, "--events", help="Also list the events it streamed."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    db: Path | None = _DB,
    debug: bool = _DEBUG,
) -> None:
    """Show one run: status, start fields, result or error."""
    with cli_errors(debug):
        store = _store(db)
        row = store.get(run_id)
        if row is None:
            raise BadParameterError(
                f"Run {run_id!r} is not in the run store; 'batonflow runs list' shows the ids."
            )
        data = row.public()
        if events:
            data["events"] = [e.body for e in store.events(run_id)]
        if as_json:
            print_json(data)
            return
        for key in ("run_id", "workflow", "status", "start", "error"):
            if data[key] is not None:
                out.print(f"{key}: {data[key]}", markup=False)
        out.print(
            f"started: {_when(row.created_at)}  updated: {_when(row.updated_at)}", markup=False
        )
        if row.result is not None:
            out.print("result:", markup=False)
            print_result(row.result)
        for entry in data.get("events", []):
            label = entry.get("type") or f"end ({entry.get('status')})"
            out.print(f"  #{entry['seq']} {label} {entry.get('value', '')}", markup=False)


@runs_app.command()
def resume(
    run_id: str = typer.Argument(..., help="The run id."),
    flow: str | None = typer.Option(
        None, help="The workflow to resume it with, when its name is not a prebuilt flow."
    ),
    answers: list[str] = typer.Option(
        [], "--answer", "-a", help="Answer(s) to give when the run asks for input."
    ),
    db: Path | None = _DB,
    debug: bool = _DEBUG,
) -> None:
    """Continue a run that was waiting for input when its process stopped."""
    with cli_errors(debug):
        store = _store(db)
        row = store.get(run_id)
        if row is None:
            raise BadParameterError(
                f"Run {run_id!r} is not in the run store; 'batonflow runs list' shows the ids."
            )
        if row.status != "waiting" or row.snapshot is None:
            raise BadParameterError(
                f"Run {run_id!r} is {row.status}; only runs waiting for input (with a saved "
                "context) can be resumed."
            )
        try:
            workflow = load_workflow(flow or row.workflow)
        except FlowNotFoundError:
            raise BadParameterError(
                f"Run {run_id!r} belongs to {row.workflow!r}, which is not a prebuilt flow; "
                "pass --flow module:WorkflowClass."
            ) from None
        prefix = "> "
        for entry in store.events(run_id):
            if entry.body.get("type") == "InputRequiredEvent":
                prefix = str(entry.body.get("value", {}).get("prefix") or "> ")
        pending = list(answers)
        from .cli import _ask

        first = pending.pop(0) if pending else _ask(prefix)
        result = asyncio.run(_continue(workflow, row.snapshot, first, pending))
        from ._wire import jsonable

        store.update(run_id, status="completed", result=jsonable(result))
        print_result(result)


async def _continue(workflow: Any, snapshot: dict[str, Any], first: str, answers: list[str]) -> Any:
    from batonflow.core import Context, HumanResponseEvent, InputRequiredEvent

    from .cli import _ask

    ctx = Context.from_dict(workflow, snapshot)
    handler = workflow.run(ctx=ctx)
    handler.ctx.send_event(HumanResponseEvent(response=first))
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            answer = answers.pop(0) if answers else _ask(str(event.get("prefix", "") or "> "))
            handler.ctx.send_event(HumanResponseEvent(response=answer))
    return await handler
