"""``batonflow runs journal RUN``: the calls a durable run's steps journaled (``ctx.journal``).

Locally from the run store (``--db``), or from a server (``--server URL``, its
``GET /runs/{id}/journal``). One line per call: step, execution and call number, name, and the
recorded result or exception.

``batonflow runs export RUN --cassette FILE`` writes the LLM and tool calls the prebuilt agents
journaled in RUN as a cassette that ``batonflow.testing.replay(FILE)`` replays offline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from . import _remote
from ._console import cli_errors, out, print_json
from ._runs_cli import _DB, _DEBUG, _SERVER, _TOKEN, _open, runs_app
from .registry import BadParameterError


@runs_app.command()
def journal(
    run_id: str = typer.Argument(..., help="The run id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    db: str | None = _DB,
    server: str | None = _SERVER,
    token: str | None = _TOKEN,
    debug: bool = _DEBUG,
) -> None:
    """List the calls RUN's steps journaled: a re-run after a crash replays these."""
    with cli_errors(debug):
        calls = _journal(run_id, db, server, token)
        if as_json:
            print_json({"run_id": run_id, "calls": calls})
            return
        for c in calls:
            outcome = "raised" if c["error"] else "returned"
            out.print(
                f"{c['step']}#{c['execution']}.{c['call']} {c['name']} {outcome} {c['value']}",
                markup=False,
            )


@runs_app.command()
def export(
    run_id: str = typer.Argument(..., help="The run id."),
    cassette: Path = typer.Option(
        ..., "--cassette", metavar="FILE", help="The cassette file to write (JSON)."
    ),
    db: str | None = _DB,
    server: str | None = _SERVER,
    token: str | None = _TOKEN,
    debug: bool = _DEBUG,
) -> None:
    """Write the LLM and tool calls RUN's agents journaled as a cassette to replay offline."""
    with cli_errors(debug):
        from batonflow.testing._export import cassette_from_journal, write_cassette

        interactions = cassette_from_journal(run_id, _journal(run_id, db, server, token))
        path = write_cassette(cassette, interactions)
        llm = sum(1 for e in interactions if e.get("kind") == "llm")
        out.print(
            f"wrote {path}: {llm} LLM calls, {len(interactions) - llm} tool calls of run {run_id}",
            markup=False,
        )


def _journal(
    run_id: str, db: str | None, server: str | None, token: str | None
) -> list[dict[str, Any]]:
    url = _remote.server_url(server)
    if url is None:
        return _local(db, run_id)
    with _remote.connect(url, token) as client:
        calls: list[dict[str, Any]] = client.journal(run_id)
    return calls


def _local(db: str | None, run_id: str) -> list[dict[str, Any]]:
    from batonflow.core.serialization import JsonSerializer

    from ._journal_view import entries_json  # loads the engine, as the run store does

    store = _open(db)
    try:
        if store.backend.run(run_id) is None:
            raise BadParameterError(
                f"No run {run_id!r} in the run store; 'batonflow runs list' shows the runs."
            )
        read = getattr(store.backend, "journal", None)
        entries = read(run_id) if read is not None else []
        return entries_json(entries, JsonSerializer())
    finally:
        store.close()


__all__ = ["export", "journal"]
