"""``batonflow runs list | show | resume | cancel | delete | prune``: the run store (``fork``
is in :mod:`batonflow.apps._fork_cli`).

Library, CLI and server runs share one record per run in one store (status, start fields,
result or error, the event log, checkpoints). These commands show them; ``resume`` continues a
run that waits for an answer, or one that stopped mid-way, from its last checkpoint; ``cancel`` ends a run nobody
runs any more, ``delete`` and ``prune`` forget runs. With ``--server URL``, ``list``, ``show``
and ``cancel`` ask that server instead (through :mod:`batonflow.client`).
"""

from __future__ import annotations

import datetime as dt
import time
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from . import _remote
from ._budget_view import usage_lines
from ._console import cli_errors, err, out, print_json, print_result
from ._queue_view import cancel_local, local_place, queue_line
from ._statuses import FINISHED
from ._statuses import STATUSES as RUN_STATUSES
from ._stream_printer import event_lines
from .config import Settings
from .registry import PREBUILT, BadParameterError, FlowNotFoundError, load_workflow

if TYPE_CHECKING:
    from .run_store import RunStore

runs_app = typer.Typer(
    help="List, inspect and resume runs kept in the run store.",
    no_args_is_help=True,
    add_completion=False,
)

_DB = typer.Option(
    None,
    "--db",
    help="Run store: a SQLite file or postgresql:// URL "
    "\\[env BATONFLOW_DATABASE_URL or BATONFLOW_DB; .batonflow/runs.db].",
)
_DEBUG = typer.Option(False, "--debug", help="Show tracebacks of errors.")
_SERVER = typer.Option(
    None,
    "--server",
    metavar="URL",
    help="Ask this batonflow server instead of the local run store \\[env BATONFLOW_SERVER].",
)
_TOKEN = typer.Option(None, "--token", help="The server's token \\[env BATONFLOW_API_TOKEN].")

#: What ``--status`` takes: the one status vocabulary of the store.
STATUSES = RUN_STATUSES
#: Statuses of runs that ended by themselves: what ``prune`` forgets by default.
ENDED = frozenset(FINISHED)


def _open(db: str | None) -> RunStore:
    # The run store loads batonflow.core (160 ms of a 400 ms `batonflow --help`): only the
    # commands that read runs need it.
    from .run_store import RunStore

    settings = Settings.load(db=db)
    if settings.database_url is not None:
        return RunStore(backend=settings.open_store())
    if not settings.db_path.exists():
        raise BadParameterError(
            f"No run store at {str(settings.db_path)!r} yet; runs appear there once "
            "'batonflow serve', 'batonflow run --durable' or 'batonflow demo' ran (or pass "
            "--db PATH)."
        )
    return RunStore(settings.db_path)


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _check_status(status: str | None) -> None:
    if status is not None and status not in STATUSES:
        raise BadParameterError(f"Unknown status {status!r}; use one of {', '.join(STATUSES)}.")


def _local_rows(store: RunStore, workflow: str | None, status: str | None) -> list[dict[str, Any]]:
    """Every run of the local store, newest first, filtered."""
    from ._budget_view import usage_of_runs
    from ._parent_waits import listed_runs

    rows = listed_runs(store, workflow, status, limit=2**62)

    usage = usage_of_runs(store.backend, [r["run_id"] for r in rows])
    return [{**r, "usage": usage.get(r["run_id"])} for r in rows]


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
    db: str | None = _DB,
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
            store = _open(db)
            try:
                rows = _local_rows(store, workflow, status)
            finally:
                store.close()
            rows = rows[:limit]
        if as_json:
            print_json(rows)
            return
        if not rows:
            err.print("no runs")
            return
        table = Table(box=None, pad_edge=False)
        for name in ("run id", "workflow", "status", "started", "tokens"):
            table.add_column(name, no_wrap=True)
        for r in rows:
            started = dt.datetime.fromtimestamp(r["created"]).strftime("%m-%d %H:%M:%S")
            used = r.get("usage") or {}
            tokens = str(used["total_tokens"]) if used else ""
            table.add_row(r["run_id"], r["workflow"], r["status"], started, tokens)
        out.print(table)


@runs_app.command()
def show(
    run_id: str = typer.Argument(..., help="The run id."),
    events: bool = typer.Option(False, "--events", help="Also list the events it streamed."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    db: str | None = _DB,
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
        if data.get("queue"):
            out.print(queue_line(data["queue"]), markup=False)
        if data.get("waiting_children"):
            waiting = ", ".join(data["waiting_children"])
            out.print(f"  (its child runs wait for an answer: {waiting})", markup=False)
        if data["status"] == "interrupted":
            gone = f", pid {data['pid']}, is gone" if data.get("pid") else " stopped"
            out.print(
                f"  (the process that ran it{gone}; continue it with 'batonflow runs resume "
                f"{run_id}')",
                markup=False,
            )
        out.print(
            f"started: {_when(data['created'])}  updated: {_when(data['updated'])}",
            markup=False,
        )
        for line in lineage_lines(data):
            out.print(line, markup=False)
        steps = [f"{c['step']} (seq {c['seq']})" for c in data["checkpoints"] if c["step"]]
        if steps:  # a seq is what 'batonflow runs fork RUN --at SEQ' continues after
            out.print(f"checkpoints after: {', '.join(steps)}", markup=False)
        for line in usage_lines(data):
            out.print(line, markup=False)
        if data.get("result") is not None:
            out.print("result:", markup=False)
            print_result(data["result"])
        for line in event_lines(data.get("events", [])):
            out.print(line, markup=False)


def _show_local(db: str | None, run_id: str, events: bool) -> dict[str, Any]:
    from ._wire import rfc3339  # loads the engine, as the run store does (see _open)

    store = _open(db)
    try:
        data = _state(store, run_id)
        data["checkpoints"] = [
            {
                "seq": c.seq,
                "step": c.step_name,
                "created_at": rfc3339(c.created_at),
                "created": c.created_at,
            }
            for c in store.backend.list(run_id)
        ]
        data["children"] = [
            {
                "run_id": r.run_id,
                "seq": r.parent_seq,
                "status": r.status,
                "step": r.parent_step,
                "kind": r.parent_kind or "fork",  # a fork recorded before kinds
                "workflow": r.workflow_name,
            }
            for r in store.backend.children(run_id)
        ]
        if events:
            data["events"] = [e.body for e in store.events(run_id)]
        if data["status"] == "queued":
            data["queue"] = local_place(store.backend, run_id)
        data.update(_child_waits(store, run_id, data))
    finally:
        store.close()
    return data


def _child_waits(store: RunStore, run_id: str, data: dict[str, Any]) -> dict[str, Any]:
    """``waiting`` and its waiting child runs, for a running parent whose child runs wait."""
    from batonflow.core.durable._child_answers import waiting_child_ids

    from ._parent_waits import marks

    if data["status"] != "running" or data.get("parent_kind") == "child":
        return {}
    found = waiting_child_ids(store.backend, [run_id]).get(run_id)
    return marks(found) if found else {}


def lineage_lines(data: dict[str, Any]) -> list[str]:
    """``batonflow runs show``'s lines for a run's parent, child runs and forks."""
    lines = []
    parent = data.get("parent_run_id")
    if parent is not None:
        if data.get("parent_kind") == "child":
            lines.append(f"parent: {parent} (child run of its step {data.get('parent_step')})")
        else:
            lines.append(f"parent: {parent} (forked at checkpoint {data.get('parent_seq')})")
    children = data.get("children") or []
    started = [c for c in children if c.get("kind") == "child"]
    if started:
        lines.append(
            "child runs: "
            + ", ".join(f"{c['run_id']} ({c['workflow']}, {c['status']})" for c in started)
        )
    forks = [c for c in children if c.get("kind") != "child"]
    if forks:
        lines.append(
            "forks: " + ", ".join(f"{c['run_id']} (at {c['seq']}, {c['status']})" for c in forks)
        )
    return lines


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
    db: str | None = _DB,
    debug: bool = _DEBUG,
) -> None:
    """Continue a run: one waiting for input, or one stopped mid-way (from its checkpoint)."""
    with cli_errors(debug):
        store = _open(db)
        try:
            data = _state(store, run_id)
            record = store.backend.run(run_id)
            if _not_resumable(data):
                raise BadParameterError(
                    f"Run {run_id!r} is {data['status']}: it has ended, so there is nothing to "
                    "continue; start a new run instead."
                )
            if store.backend.latest(run_id) is None and record.start_event is None:
                raise BadParameterError(
                    f"Run {run_id!r} is {data['status']} and has no saved context or checkpoint "
                    "to continue from; start a new run instead."
                )
            row = store.get(run_id)
            workflow = _workflow_for(flow or row.flow_ref, row.workflow, run_id)
            pending = list(answers)
            first: list[tuple[str, Any]] = []  # (run id, the answer it is given first)
            if row.status == "waiting" and data.get("waiting_reason") != "budget":
                text = pending.pop(0) if pending else _ask(_last_prefix(store, run_id))
                first = [(run_id, _stored_answer(workflow, store, row, text))]
            elif row.status == "running":  # its child runs that wait for answers, if any
                from ._child_answers import child_answers

                first = child_answers(workflow, store, row, pending, _ask)
            import asyncio  # not at the top: it costs `batonflow --help` 28 ms

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


def _stored_answer(workflow: Any, store: RunStore, row: Any, text: str) -> Any:
    """The event answering, with ``text``, the question a stored waiting run asked."""
    from ._answers import answer_from_text, expected, question

    try:
        return answer_from_text(expected(workflow, question(store, row) or {}), text)
    except ValueError as exc:
        raise BadParameterError(str(exc)) from None


async def _answering(handler: Any, answers: list[str], cptr: Any) -> Any:
    from ._child_answers import asking
    from .cli import local_answer

    async for event in handler.stream_events():
        asker = asking(cptr.workflow, handler, event)  # the run, or a child run of it
        if asker is not None:
            answer = answers.pop(0) if answers else _ask(asker.prompt)
            reply = local_answer(asker.workflow, asker.handler, answer)
            cptr.send_event(handler.run_id, reply, answer=True)
    return await handler


async def _resume(
    workflow: Any, backend: Any, run_id: str, first: list[tuple[str, Any]], answers: list[str]
) -> Any:
    from batonflow.core.checkpoints import WorkflowCheckpointer

    from ._budget_view import load_seam

    budget = getattr(backend, "budget", None)
    load_seam(needed=budget is not None and budget(run_id) is not None)  # count its calls
    cptr = WorkflowCheckpointer(workflow, store=backend)
    for target, answer in first:
        # Committed to the run's (or its child's) inbox first: the resumed run takes it in.
        cptr.send_event(target, answer, answer=True)
    handler = cptr.resume(run_id)
    return await _answering(handler, answers, cptr)


def _state(store: RunStore, run_id: str) -> dict[str, Any]:
    """The run as ``runs show`` sees it (``interrupted`` when its CLI process is gone)."""
    row = store.get(run_id)
    if row is None:
        raise _unknown_run(run_id)
    from ._budget_view import budget_fields

    return {
        **row.public(),
        "pid": row.pid,
        "owner": row.owner,
        **budget_fields(store.backend, run_id, row.status),
    }


#: The error of a run cancelled by ``batonflow runs cancel``.
CANCELLED_HERE = "Cancelled with 'batonflow runs cancel'."


def _not_resumable(data: dict[str, Any]) -> bool:
    """Whether the run ended for good: completed, or cancelled on purpose.

    A run that failed, or whose process was stopped (``interrupted``), stays resumable.
    """
    return data["status"] == "completed" or data.get("error") == CANCELLED_HERE


def _refuse_running(store: RunStore, data: dict[str, Any], action: str) -> None:
    """A run some process still runs cannot be changed from here: say where to do it."""
    if data["status"] != "running":
        return
    run_id = data["run_id"]
    pid = data.get("pid") if data.get("owner") == "cli" else None
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
    db: str | None = _DB,
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
        store = _open(db)
        try:
            data = _state(store, run_id)
            if data["status"] in ENDED:
                raise BadParameterError(
                    f"Run {run_id!r} has already ended ({data['status']}); nothing to cancel "
                    f"(batonflow runs delete {run_id} forgets it)."
                )
            if data["status"] == "queued" and cancel_local(store.backend, run_id):
                out.print(f"run {run_id}: cancelled (was queued; it never started)", markup=False)
                return
            _refuse_running(store, data, "cancel")
            store.backend.set_status(run_id, "cancelled", error=CANCELLED_HERE)
        finally:
            store.close()
        out.print(f"run {run_id}: cancelled (was {data['status']})", markup=False)


@runs_app.command()
def delete(
    run_ids: list[str] = typer.Argument(..., help="The run ids."),
    db: str | None = _DB,
    debug: bool = _DEBUG,
) -> None:
    """Forget runs: their records, events and checkpoints (not while they run)."""
    with cli_errors(debug):
        store = _open(db)
        try:
            for run_id in run_ids:
                _refuse_running(store, _state(store, run_id), "delete")
            for run_id in run_ids:
                store.backend.delete(run_id)
                out.print(f"deleted run {run_id}", markup=False)
        finally:
            store.close()


def parse_duration(text: str) -> float:
    """Seconds in ``"90s"``, ``"30m"``, ``"12h"``, ``"7d"`` or ``"2w"``.

    Raises:
        BadParameterError: Anything else.
    """
    from batonflow.core.retention import parse_duration as seconds

    try:
        return seconds(text, "--older-than")
    except ValueError as exc:
        raise BadParameterError(str(exc)) from None


@runs_app.command()
def prune(
    older_than: str = typer.Option(
        ..., "--older-than", metavar="DURATION", help="e.g. 30m, 12h, 7d, 2w: since last change."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would be deleted."),
    db: str | None = _DB,
    debug: bool = _DEBUG,
) -> None:
    """Forget runs that ended (completed, failed, cancelled, ...) longer ago than DURATION."""
    with cli_errors(debug):
        cutoff = time.time() - parse_duration(older_than)
        store = _open(db)
        try:
            old = [
                r
                for r in _local_rows(store, None, None)
                if r["status"] in ENDED and r["updated"] < cutoff
            ]
            if not dry_run:
                for row in old:
                    store.backend.delete(row["run_id"])
        finally:
            store.close()
        for row in old:
            out.print(f"  {row['run_id']} {row['workflow']} {row['status']}", markup=False)
        verb = "would delete" if dry_run else "deleted"
        out.print(f"{verb} {len(old)} run(s) that ended more than {older_than} ago", markup=False)
