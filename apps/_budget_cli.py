"""``batonflow runs budget RUN --raise AMOUNT``: raise a run's budget, so the run goes on.

Locally in the run store (``--db``: the process that runs it sees the raise within half a
second), or on a server (``--server URL``, its ``POST /runs/{id}/budget``). ``AMOUNT`` is
tokens (``5000``) or US dollars (``$0.50``), both joined by ``,``. Without ``--raise`` the
command shows the run's budget and usage.
"""

from __future__ import annotations

from typing import Any

import typer

from . import _remote
from ._budget_view import usage_lines
from ._console import cli_errors, out, print_json
from ._runs_cli import _DB, _DEBUG, _SERVER, _TOKEN, _open, _state, runs_app
from .registry import BadParameterError


def cli_budget(text: str) -> Any:
    """The budget ``--budget TEXT`` gives (the LLM seam loaded for it).

    Raises:
        BadParameterError: Not a budget (the message shows the forms).
    """
    from ._budget_view import budget_of

    try:
        return budget_of(text)
    except ValueError as exc:
        raise BadParameterError(f"--budget: {exc}") from None


def _amounts(text: str) -> tuple[int, float]:
    from batonflow.core.durable._budget import parse_amount

    if text.strip().startswith("-"):
        raise BadParameterError(f"--raise {text}: a raise adds to the budget; give 0 or more.")
    try:
        return parse_amount(text, "raise")
    except ValueError as exc:
        raise BadParameterError(f"--raise: {exc}") from None


@runs_app.command()
def budget(
    run_id: str = typer.Argument(..., help="The run id."),
    raise_by: str | None = typer.Option(
        None,
        "--raise",
        metavar="AMOUNT",
        help="Add tokens ('5000') or US dollars ('$0.50') to the run's budget.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    db: str | None = _DB,
    server: str | None = _SERVER,
    token: str | None = _TOKEN,
    debug: bool = _DEBUG,
) -> None:
    """Show a run's budget and usage; with --raise, raise its budget (a waiting run goes on)."""
    with cli_errors(debug):
        tokens, cost = _amounts(raise_by) if raise_by is not None else (0, 0.0)
        url = _remote.server_url(server)
        if url is not None:
            with _remote.connect(url, token) as client:
                run = client.raise_budget(run_id, tokens=tokens, cost=cost) if raise_by else None
                data = dict((run or client.get(run_id)).raw)
        else:
            data = _local(db, run_id, tokens, cost, raise_by is not None)
        if as_json:
            print_json(data)
            return
        lines = usage_lines(data)
        out.print("\n".join(lines) if lines else f"run {run_id} has no budget", markup=False)


def _local(db: str | None, run_id: str, tokens: int, cost: float, raising: bool) -> dict[str, Any]:
    from batonflow.core.errors import CheckpointError, RunConflictError

    store = _open(db)
    try:
        _state(store, run_id)  # an unknown run: the usual error
        if raising:
            try:
                store.backend.raise_budget(run_id, tokens, cost)
            except (RunConflictError, CheckpointError) as exc:
                raise BadParameterError(str(exc)) from None
        return _state(store, run_id)
    finally:
        store.close()


__all__ = ["budget", "cli_budget"]
