"""``batonflow schedule add | list | remove``: a server's schedules, through batonflow.client.

The server checks a schedule against what it serves (the workflow, its start fields) and its
scheduler fires it, so these commands talk to a server (``--server URL`` or
``BATONFLOW_SERVER``); see :mod:`batonflow.apps.schedules` for how firings work.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import typer
from rich.table import Table

from . import _remote
from ._console import cli_errors, out, print_json
from .registry import BadParameterError, parse_sets

schedule_app = typer.Typer(
    help="Add, list and remove a server's schedules (runs started at cron times, UTC).",
    no_args_is_help=True,
    add_completion=False,
)

_SERVER = typer.Option(
    None,
    "--server",
    metavar="URL",
    help="The batonflow server whose schedules these are \\[env BATONFLOW_SERVER].",
)
_TOKEN = typer.Option(None, "--token", help="The server's token \\[env BATONFLOW_API_TOKEN].")
_DEBUG = typer.Option(False, "--debug", help="Show tracebacks of errors.")
_JSON = typer.Option(False, "--json", help="Print JSON.")


def _client(server: str | None, token: str | None) -> Any:
    url = _remote.server_url(server)
    if url is None:
        raise BadParameterError(
            "batonflow schedule talks to the server that fires the schedules; pass "
            "--server URL (e.g. --server http://127.0.0.1:8000) or set BATONFLOW_SERVER."
        )
    return _remote.connect(url, token)


@schedule_app.command()
def add(
    name: str = typer.Argument(..., help="The schedule's name (letters, digits, _ . -)."),
    cron: str = typer.Option(
        ..., "--cron", help="Five cron fields in UTC, e.g. '*/5 * * * *' (six: seconds last)."
    ),
    workflow: str = typer.Option(..., "--workflow", "-w", help="The served workflow to start."),
    sets: list[str] = typer.Option(
        [],
        "--set",
        "-s",
        metavar="KEY=VALUE",
        help="A start-event field of each run; the value is JSON when it parses, else text.",
    ),
    missed: str = typer.Option(
        "skip",
        "--missed",
        help="Firings missed while no server ran: skip them, or run the latest 'once'.",
    ),
    server: str | None = _SERVER,
    token: str | None = _TOKEN,
    as_json: bool = _JSON,
    debug: bool = _DEBUG,
) -> None:
    """Start a run of a workflow at every cron time (UTC), once across the server's replicas.

    Example: [bold]batonflow schedule add nightly --cron "0 3 * * *" --workflow report
    --set topic=sales --server http://127.0.0.1:8000[/].
    """
    with cli_errors(debug):
        fields = parse_sets(sets)
        with _client(server, token) as client:
            added = client.add_schedule(
                name, cron=cron, workflow=workflow, fields=fields, missed=missed
            )
        if as_json:
            print_json(added)
        else:
            out.print(f"schedule {added['name']}: {added['workflow']} at '{added['cron']}' (UTC)")


@schedule_app.command("list")
def list_schedules(
    server: str | None = _SERVER,
    token: str | None = _TOKEN,
    as_json: bool = _JSON,
    debug: bool = _DEBUG,
) -> None:
    """List the server's schedules."""
    with cli_errors(debug):
        with _client(server, token) as client:
            schedules = client.schedules()
        if as_json:
            print_json(schedules)
            return
        table = Table("name", "workflow", "cron (UTC)", "fields", "missed", "added (UTC)")
        for s in schedules:
            added = dt.datetime.fromtimestamp(s["created"], dt.UTC)
            table.add_row(
                s["name"],
                s["workflow"],
                s["cron"],
                ", ".join(f"{k}={v!r}" for k, v in s["fields"].items()),
                s["missed"],
                added.strftime("%Y-%m-%d %H:%M:%S"),
            )
        out.print(table)


@schedule_app.command()
def remove(
    name: str = typer.Argument(..., help="The schedule to remove (its runs stay)."),
    server: str | None = _SERVER,
    token: str | None = _TOKEN,
    debug: bool = _DEBUG,
) -> None:
    """Remove a schedule; runs it started stay."""
    with cli_errors(debug):
        with _client(server, token) as client:
            client.remove_schedule(name)
        out.print(f"schedule {name} removed")


__all__ = ["schedule_app"]
