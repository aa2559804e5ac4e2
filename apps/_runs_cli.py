"""``batonflow runs list | show | resume``: the durable run store (``.batonflow/runs.db``).

One SQLite file holds two kinds of records: the server's runs (status, result, streamed
events, snapshots of runs waiting for a human) and the engine's checkpoints (one per completed
step, written by ``WorkflowCheckpointer`` with a ``SqliteCheckpointStore``, and by
``batonflow serve``). These commands show both; ``resume`` continues a run that waited for a
human, or one that stopped mid-way, from its last checkpoint.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ._console import cli_errors, err, out, print_json, print_result
from ._wire import jsonable
from .config import Settings
from .registry import PREBUILT, BadParameterError, FlowNotFoundError, load_workflow

runs_app = typer.Typer(
    help="List, inspect and resume runs kept in the run store.",
    no_args_is_help=True,
    add_completion=False,
)

_DB = typer.Option(None, "--db", help="Run store \\[env BATONFLOW_DB; .batonflow/runs.db].")
_DEBUG = typer.Option(False, "--debug", help="Show tracebacks of errors.")


@dataclass
class Stores:
    """The server's run records and the engine's checkpoints, in one file."""

    runs: Any
    checkpoints: Any

    def close(self) -> None:
        self.runs.close()
        self.checkpoints.close()


def _open(db: Path | None) -> Stores:
    from batonflow.core.checkpoints import SqliteCheckpointStore

    from .run_store import RunStore

    settings = Settings.load(db_path=db)
    if not settings.db_path.exists():
        raise BadParameterError(
            f"No run store at {str(settings.db_path)!r} yet; runs appear there once "
            "'batonflow serve', 'batonflow run --durable' or 'batonflow demo' ran (or pass "
            "--db PATH)."
        )
    return Stores(RunStore(settings.db_path), SqliteCheckpointStore(settings.db_path))


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _stored_result(text: str | None) -> Any:
    """A checkpointed run's result, decoded (the store keeps it serialized, as JSON text)."""
    if text is None:
        return None
    from batonflow.core.serialization import JsonSerializer

    try:
        return jsonable(JsonSerializer().deserialize(text))
    except Exception:  # a value only its own serializer (e.g. pickle) can read: show the text
        return text


def _checkpoint_run(record: Any) -> dict[str, Any]:
    return {
        "run_id": record.run_id,
        "workflow": record.workflow_name,
        "status": record.status,
        "result": _stored_result(record.result),
        "error": record.error,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "source": "checkpoints",
    }


def _process_gone(pid: int) -> bool:
    """Whether no process ``pid`` runs on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists but belongs to someone else
        return False
    return False


def _mark_stopped(stores: Stores, row: dict[str, Any]) -> dict[str, Any]:
    """A checkpointed run still 'running' whose ``batonflow run`` process died is 'stopped'."""
    if row["status"] != "running" or row.get("source") != "checkpoints":
        return row
    pid = stores.runs.flow_pid(row["run_id"])
    if pid is not None and _process_gone(pid):
        row = {**row, "status": "stopped", "pid": pid}
    return row


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
        stores = _open(db)
        rows = [
            {**r.public(), "source": "server"} for r in stores.runs.list(workflow, status, limit)
        ]
        seen = {r["run_id"] for r in rows}
        for record in stores.checkpoints.runs(workflow_name=workflow, status=status):
            if record.run_id not in seen:
                rows.append(_checkpoint_run(record))
        rows = [_mark_stopped(stores, r) for r in rows]
        rows = sorted(rows, key=lambda r: r["created_at"], reverse=True)[:limit]
        stores.close()
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
        stores = _open(db)
        row = stores.runs.get(run_id)
        record = stores.checkpoints.run(run_id)
        if row is None and record is None:
            raise _unknown_run(run_id)
        data = {**row.public(), "source": "server"} if row is not None else _checkpoint_run(record)
        data = _mark_stopped(stores, data)
        data["checkpoints"] = [
            {"seq": c.seq, "step": c.step_name, "created_at": c.created_at}
            for c in stores.checkpoints.list(run_id)
        ]
        if events and row is not None:
            data["events"] = [e.body for e in stores.runs.events(run_id)]
        stores.close()
        if as_json:
            print_json(data)
            return
        for key in ("run_id", "workflow", "status", "start", "error"):
            if data.get(key) is not None:
                out.print(f"{key}: {data[key]}", markup=False)
        if data["status"] == "stopped":
            out.print(
                f"  (the process that ran it, pid {data['pid']}, is gone; continue it with "
                f"'batonflow runs resume {run_id}')",
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
        stores = _open(db)
        try:
            row = stores.runs.get(run_id)
            record = stores.checkpoints.run(run_id)
            if row is None and record is None:
                raise _unknown_run(run_id)
            pending = list(answers)
            if flow is None:
                flow = stores.runs.flow_ref(run_id)
            if row is not None and row.status == "waiting" and row.snapshot is not None:
                workflow = _workflow_for(flow, row.workflow, run_id)
                first = pending.pop(0) if pending else _ask(_last_prefix(stores.runs, run_id))
                result = asyncio.run(_from_snapshot(workflow, row.snapshot, first, pending))
            elif stores.checkpoints.latest(run_id) is not None:
                name = row.workflow if row is not None else record.workflow_name
                workflow = _workflow_for(flow, name, run_id)
                result = asyncio.run(
                    _from_checkpoint(workflow, stores.checkpoints, run_id, pending)
                )
            else:
                status = row.status if row is not None else record.status
                raise BadParameterError(
                    f"Run {run_id!r} is {status} and has no saved context or checkpoint to "
                    "continue from; start a new run instead."
                )
            if row is not None:
                stores.runs.update(run_id, status="completed", result=jsonable(result))
        finally:
            stores.close()
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


async def _answering(handler: Any, answers: list[str]) -> Any:
    from batonflow.core import HumanResponseEvent, InputRequiredEvent

    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            answer = answers.pop(0) if answers else _ask(str(event.get("prefix", "") or "> "))
            handler.ctx.send_event(HumanResponseEvent(response=answer))
    return await handler


async def _from_snapshot(
    workflow: Any, snapshot: dict[str, Any], first: str, answers: list[str]
) -> Any:
    from batonflow.core import Context, HumanResponseEvent

    handler = workflow.run(ctx=Context.from_dict(workflow, snapshot))
    handler.ctx.send_event(HumanResponseEvent(response=first))
    return await _answering(handler, answers)


async def _from_checkpoint(workflow: Any, store: Any, run_id: str, answers: list[str]) -> Any:
    from batonflow.core.checkpoints import WorkflowCheckpointer

    handler = WorkflowCheckpointer(workflow, store=store).resume(run_id)
    return await _answering(handler, answers)
