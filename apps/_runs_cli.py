"""``batonflow runs list | show | resume | cancel | delete | prune``: the run store.

One SQLite file holds two kinds of records: the server's runs (status, result, streamed
events, snapshots of runs waiting for a human) and the engine's checkpoints (one per completed
step, written by ``WorkflowCheckpointer`` with a ``SqliteCheckpointStore``, and by
``batonflow serve``). These commands show both; ``resume`` continues a run that waited for a
human, or one that stopped mid-way, from its last checkpoint; ``cancel`` ends a run nobody
runs any more, ``delete`` and ``prune`` forget runs. With ``--server URL``, ``list``, ``show``
and ``cancel`` ask that server instead (through :mod:`batonflow.client`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from . import _remote
from ._console import cli_errors, err, out, print_json, print_result
from ._wire import jsonable
from .config import Settings
from .registry import PREBUILT, BadParameterError, FlowNotFoundError, load_workflow
from .run_store import FINISHED

runs_app = typer.Typer(
    help="List, inspect and resume runs kept in the run store.",
    no_args_is_help=True,
    add_completion=False,
)

_DB = typer.Option(None, "--db", help="Run store \\[env BATONFLOW_DB; .batonflow/runs.db].")
_DEBUG = typer.Option(False, "--debug", help="Show tracebacks of errors.")
_SERVER = typer.Option(
    None,
    "--server",
    metavar="URL",
    help="Ask this batonflow server instead of the local run store \\[env BATONFLOW_SERVER].",
)
_TOKEN = typer.Option(None, "--token", help="The server's token \\[env BATONFLOW_API_TOKEN].")

#: What ``--status`` takes: the stored statuses, and ``stopped`` (a durable CLI run whose
#: process is gone).
STATUSES = ("running", "waiting", *sorted(FINISHED), "stopped")
#: Statuses of runs that ended by themselves: what ``prune`` forgets by default.
ENDED = frozenset(FINISHED)


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


def _check_status(status: str | None) -> None:
    if status is not None and status not in STATUSES:
        raise BadParameterError(f"Unknown status {status!r}; use one of {', '.join(STATUSES)}.")


def _local_rows(stores: Stores, workflow: str | None, status: str | None) -> list[dict[str, Any]]:
    """Every run of the local store (server and checkpointed), newest first, filtered."""
    stored = "running" if status == "stopped" else status  # 'stopped' is derived from 'running'
    rows = [
        {**r.public(), "source": "server"} for r in stores.runs.list(workflow, stored, limit=2**62)
    ]
    seen = {r["run_id"] for r in rows}
    for record in stores.checkpoints.runs(workflow_name=workflow, status=stored):
        if record.run_id not in seen:
            rows.append(_checkpoint_run(record))
    rows = [_mark_stopped(stores, r) for r in rows]
    if status is not None:
        rows = [r for r in rows if r["status"] == status]
    return sorted(rows, key=lambda r: r["created_at"], reverse=True)


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
    server: str | None = _SERVER,
    token: str | None = _TOKEN,
    debug: bool = _DEBUG,
) -> None:
    """List runs, newest first: server runs and checkpointed runs."""
    with cli_errors(debug):
        url = _remote.server_url(server)
        if url is not None:
            rows = _remote.list_remote(url, token, workflow, status, limit)
        else:
            _check_status(status)
            stores = _open(db)
            try:
                rows = _local_rows(stores, workflow, status)
            finally:
                stores.close()
            rows = rows[:limit]
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
    server: str | None = _SERVER,
    token: str | None = _TOKEN,
    debug: bool = _DEBUG,
) -> None:
    """Show one run: status, start fields, result or error, checkpoints."""
    with cli_errors(debug):
        url = _remote.server_url(server)
        data = (
            _remote.show_remote(url, token, run_id, events)
            if url is not None
            else _show_local(db, run_id, events)
        )
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


def _show_local(db: Path | None, run_id: str, events: bool) -> dict[str, Any]:
    stores = _open(db)
    try:
        data = _state(stores, run_id)
        data["checkpoints"] = [
            {"seq": c.seq, "step": c.step_name, "created_at": c.created_at}
            for c in stores.checkpoints.list(run_id)
        ]
        if events and data["source"] == "server":
            data["events"] = [e.body for e in stores.runs.events(run_id)]
    finally:
        stores.close()
    return data


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
            elif _not_resumable(_state(stores, run_id)):
                status = _state(stores, run_id)["status"]
                raise BadParameterError(
                    f"Run {run_id!r} is {status}: it has ended, so there is nothing to continue; "
                    "start a new run instead."
                )
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


def _state(stores: Stores, run_id: str) -> dict[str, Any]:
    """The run as ``runs show`` sees it (status ``stopped`` when its process is gone)."""
    row = stores.runs.get(run_id)
    record = stores.checkpoints.run(run_id)
    if row is None and record is None:
        raise _unknown_run(run_id)
    data = {**row.public(), "source": "server"} if row is not None else _checkpoint_run(record)
    return _mark_stopped(stores, data)


#: The error of a run cancelled by ``batonflow runs cancel``.
CANCELLED_HERE = "Cancelled with 'batonflow runs cancel'."


def _not_resumable(data: dict[str, Any]) -> bool:
    """Whether the run ended for good: completed, or cancelled on purpose.

    A checkpointed run whose process was stopped may show ``cancelled`` or ``failed`` too (the
    store cannot tell an interrupted task from a cancelled one yet); those stay resumable.
    """
    return data["status"] == "completed" or data.get("error") == CANCELLED_HERE


def _refuse_running(stores: Stores, data: dict[str, Any], action: str) -> None:
    """A run some process still runs cannot be changed from here: say where to do it."""
    if data["status"] != "running":
        return
    run_id = data["run_id"]
    pid = stores.runs.flow_pid(run_id)
    if pid is not None:
        raise BadParameterError(
            f"Run {run_id!r} is running in process {pid}; stop it there (Ctrl-C, or kill -INT "
            f"{pid}: it is then recorded interrupted) before you {action} it."
        )
    raise BadParameterError(
        f"Run {run_id!r} is running in a server; {action} it through that server: batonflow "
        f"runs {action} {run_id} --server URL (or stop the server first)."
    )


@runs_app.command()
def cancel(
    run_id: str = typer.Argument(..., help="The run id."),
    db: Path | None = _DB,
    server: str | None = _SERVER,
    token: str | None = _TOKEN,
    debug: bool = _DEBUG,
) -> None:
    """Cancel a run: on its server (--server), or here one that nobody runs any more."""
    with cli_errors(debug):
        url = _remote.server_url(server)
        if url is not None:
            status = _remote.cancel_remote(url, token, run_id)
            out.print(f"run {run_id}: {status}", markup=False)
            return
        stores = _open(db)
        try:
            data = _state(stores, run_id)
            if data["status"] in ENDED:
                raise BadParameterError(
                    f"Run {run_id!r} has already ended ({data['status']}); nothing to cancel "
                    f"(batonflow runs delete {run_id} forgets it)."
                )
            _refuse_running(stores, data, "cancel")
            reason = CANCELLED_HERE
            if stores.runs.get(run_id) is not None:
                stores.runs.update(run_id, status="cancelled", error=reason)
            if stores.checkpoints.run(run_id) is not None:
                stores.checkpoints.finish_run(run_id, "cancelled", error=reason)
        finally:
            stores.close()
        out.print(f"run {run_id}: cancelled (was {data['status']})", markup=False)


@runs_app.command()
def delete(
    run_ids: list[str] = typer.Argument(..., help="The run ids."),
    db: Path | None = _DB,
    debug: bool = _DEBUG,
) -> None:
    """Forget runs: their records, events and checkpoints (not while they run)."""
    with cli_errors(debug):
        stores = _open(db)
        try:
            for run_id in run_ids:
                _refuse_running(stores, _state(stores, run_id), "delete")
            for run_id in run_ids:
                _forget(stores, run_id)
                out.print(f"deleted run {run_id}", markup=False)
        finally:
            stores.close()


def _forget(stores: Stores, run_id: str) -> None:
    stores.runs.delete(run_id)
    stores.checkpoints.delete(run_id)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """Seconds in ``"90s"``, ``"30m"``, ``"12h"``, ``"7d"`` or ``"2w"``.

    Raises:
        BadParameterError: Anything else.
    """
    match = _DURATION.match(text.lower())
    if match is None:
        raise BadParameterError(
            f"--older-than expects a duration such as 30m, 12h, 7d or 2w; got {text!r}."
        )
    return float(match[1]) * _UNIT[match[2]]


@runs_app.command()
def prune(
    older_than: str = typer.Option(
        ..., "--older-than", metavar="DURATION", help="e.g. 30m, 12h, 7d, 2w: since last change."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would be deleted."),
    db: Path | None = _DB,
    debug: bool = _DEBUG,
) -> None:
    """Forget runs that ended (completed, failed, cancelled, ...) longer ago than DURATION."""
    with cli_errors(debug):
        cutoff = time.time() - parse_duration(older_than)
        stores = _open(db)
        try:
            old = [
                r
                for r in _local_rows(stores, None, None)
                if r["status"] in ENDED and r["updated_at"] < cutoff
            ]
            if not dry_run:
                for row in old:
                    _forget(stores, row["run_id"])
        finally:
            stores.close()
        for row in old:
            out.print(f"  {row['run_id']} {row['workflow']} {row['status']}", markup=False)
        verb = "would delete" if dry_run else "deleted"
        out.print(f"{verb} {len(old)} run(s) that ended more than {older_than} ago", markup=False)
