"""``batonflow runs fork RUN [--at SEQ] [--set k=v]``: continue a run's checkpoint as a new run.

Locally it runs the fork in this process on the run store (``--db``), with the workflow the
run was started with (or ``--flow``), and prints its result; with ``--server URL`` it asks
that server to start the fork (``POST /runs/{id}/fork``) and prints the new run. ``batonflow
runs show RUN`` names the checkpoints to fork at (their seq).
"""

from __future__ import annotations

from typing import Any

import typer

from . import _remote
from ._console import cli_errors, err, print_json, print_result
from ._runs_cli import _DB, _DEBUG, _SERVER, _TOKEN, _answering, _open, _workflow_for, runs_app
from .registry import BadParameterError, parse_sets


@runs_app.command()
def fork(
    run_id: str = typer.Argument(..., help="The run to fork."),
    at: int | None = typer.Option(
        None,
        "--at",
        metavar="SEQ",
        help="The checkpoint to continue from (its seq; default: the run's latest).",
    ),
    sets: list[str] = typer.Option(
        [],
        "--set",
        "-s",
        metavar="KEY=VALUE",
        help="Set a state path first; the value is JSON when it parses, else text.",
    ),
    flow: str | None = typer.Option(
        None, help="The workflow to run the fork with (module:Class); default: the run's own."
    ),
    answers: list[str] = typer.Option(
        [], "--answer", "-a", help="Answer(s) to give when the fork asks for input."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    db: str | None = _DB,
    server: str | None = _SERVER,
    token: str | None = _TOKEN,
    debug: bool = _DEBUG,
) -> None:
    """Start a new run from a checkpoint of RUN: the steps before it do not run again.

    Examples: [bold]batonflow runs fork 3f9b --at 2 --set tone=warm[/],
    [bold]batonflow runs fork 3f9b --server http://127.0.0.1:8000[/].
    """
    with cli_errors(debug):
        state = parse_sets(sets)
        url = _remote.server_url(server)
        if url is not None:
            with _remote.connect(url, token) as client:
                run = client.fork(run_id, at, state=state)
            err.print(f"run {run.run_id} forked from {run_id} on {client.base_url}", markup=False)
            print_json(run.raw) if as_json else print_result(run.run_id)
            return
        store = _open(db)
        try:
            row = store.get(run_id)
            if row is None:
                raise BadParameterError(
                    f"No run {run_id!r} in the run store; 'batonflow runs list' shows the runs."
                )
            workflow = _workflow_for(flow or row.flow_ref, row.workflow, run_id)
            import asyncio  # not at the top: it costs `batonflow --help` 28 ms

            new_id, result = asyncio.run(_fork(workflow, store.backend, run_id, at, state, answers))
        finally:
            store.close()
        if as_json:
            print_json({"run_id": new_id, "parent_run_id": run_id, "result": result})
        else:
            print_result(result)


async def _fork(
    workflow: Any,
    backend: Any,
    run_id: str,
    at: int | None,
    state: dict[str, Any],
    answers: list[str],
) -> tuple[str, Any]:
    from batonflow.core.checkpoints import WorkflowCheckpointer

    # The fork's record copies its parent's: owner, flow reference, start fields.
    cptr = WorkflowCheckpointer(workflow, store=backend)
    handler = cptr.fork(run_id, at, state=state)
    err.print(f"run {handler.run_id} forked from {run_id}", markup=False)
    return str(handler.run_id), await _answering(handler, list(answers), cptr)


__all__ = ["fork"]
