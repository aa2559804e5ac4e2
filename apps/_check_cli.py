"""``batonflow runs check --app module:Class``: which runs in flight new code cannot continue.

For a deploy pipeline, before the new code takes over the run store: each run in flight
(running, waiting or interrupted) of the workflow is checked against the code ``--app`` names
(``WorkflowCheckpointer.check_runs``). Each run the code cannot continue is printed on one
line with why; the exit status is 1 when there is any, 0 when there is none. Nothing is
written to the store and nothing runs.
"""

from __future__ import annotations

from typing import Any

import typer

from ._console import cli_errors, err, out, print_json
from ._runs_cli import _DEBUG, _open, runs_app
from .registry import BadParameterError, load_workflow


@runs_app.command()
def check(
    apps: list[str] = typer.Option(
        ...,
        "--app",
        metavar="[NAME=]MODULE:CLASS",
        help="The new code's workflow; NAME= the name its runs are recorded under (what "
        "'batonflow serve --workflow NAME=...' serves it as; default: its workflow_name). "
        "Repeat for several workflows.",
    ),
    store: str | None = typer.Option(
        None,
        "--store",
        "--db",
        metavar="URL",
        help="Run store: a SQLite file or postgresql:// URL "
        "\\[env BATONFLOW_DATABASE_URL or BATONFLOW_DB; .batonflow/runs.db].",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    debug: bool = _DEBUG,
) -> None:
    """List the runs in flight that the new code cannot continue, and why (exit 1 if any).

    Example: [bold]batonflow runs check --app orders.flows:OrderFlow --store $DATABASE_URL[/].
    """
    with cli_errors(debug):
        named = [_named(spec) for spec in apps]
        runs = _open(store)
        try:
            checks = [c for name, workflow in named for c in _check(runs.backend, name, workflow)]
        finally:
            runs.close()
        refused = [c for c in checks if not c.ok]
        if as_json:
            print_json({"checked": len(checks), "incompatible": [c.to_dict() for c in refused]})
        else:
            for found in refused:
                out.print(found.line(), markup=False, soft_wrap=True)
            err.print(
                f"{len(checks)} run(s) in flight checked; "
                + (
                    f"{len(refused)} cannot continue with this code"
                    if refused
                    else "the new code can continue all of them"
                ),
                markup=False,
            )
    if refused:
        raise typer.Exit(1)


def _named(spec: str) -> tuple[str | None, Any]:
    """``NAME=module:Class`` (or ``module:Class``) as the name and the workflow it loads."""
    name, sep, ref = spec.partition("=")
    if not sep:
        name, ref = "", spec
    if sep and (not name or not ref):
        raise BadParameterError(
            f"--app {spec!r} is incomplete; write it as module:Class or NAME=module:Class."
        )
    return name or None, load_workflow(ref)


def _check(backend: Any, name: str | None, workflow: Any) -> list[Any]:
    from batonflow.core.checkpoints import WorkflowCheckpointer

    cptr = WorkflowCheckpointer(workflow, store=backend)
    try:
        return cptr.check_runs([name or workflow.workflow_name])
    finally:
        cptr.detach()


__all__ = ["check"]
