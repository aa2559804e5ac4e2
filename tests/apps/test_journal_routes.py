"""A durable run's journaled calls over HTTP, through the client and ``batonflow runs journal``."""

from __future__ import annotations

import json

import pytest
from batonflow.apps.cli import app
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.client import Client, NotFoundError
from batonflow.core import Context, StartEvent, StopEvent, Workflow, step
from batonflow.core.stores import open_store
from typer.testing import CliRunner


class Quote(Workflow):
    """Journals a price lookup and a failing stock check."""

    @step
    async def quote(self, ctx: Context, ev: StartEvent) -> StopEvent:
        price = await ctx.journal("price", lambda item: {"item": item, "eur": 12}, ev.item)
        try:
            await ctx.journal("stock", _out_of_stock)
        except LookupError:
            pass
        return StopEvent(result=price)


def _out_of_stock() -> None:
    raise LookupError("none left")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_journal_of_a_run_over_http_the_client_and_the_cli(request, tmp_path, backend):
    """GET /runs/{id}/journal lists each call with its result or exception, in order; the
    client and batonflow runs journal (local and --server) show the same."""
    where = request.getfixturevalue("postgres_url") if backend == "postgres" else tmp_path / "r.db"
    store = open_store(where)
    with BackgroundServer(create_app({"quote": Quote()}, checkpoints=store)) as server:
        with Client(server.url) as api:
            run = api.start("quote", {"item": "tea"})
            assert api.wait(run.run_id, timeout=30).result == {"item": "tea", "eur": 12}
            calls = api.journal(run.run_id)
            assert [(c["step"], c["call"], c["name"], c["error"]) for c in calls] == [
                ("quote", 0, "price", False),
                ("quote", 1, "stock", True),
            ]
            assert calls[0]["value"] == {"item": "tea", "eur": 12}
            assert calls[1]["value"] == "LookupError: none left"
            with pytest.raises(NotFoundError):
                api.journal("nope")
            runner = CliRunner()
            remote = runner.invoke(
                app, ["runs", "journal", run.run_id, "--server", server.url, "--json"]
            )
            assert remote.exit_code == 0, remote.output
            assert json.loads(remote.stdout)["calls"] == calls
            local = runner.invoke(app, ["runs", "journal", run.run_id, "--db", str(where)])
            assert local.exit_code == 0, local.output
            assert "quote#" in local.stdout and "price returned" in local.stdout
            assert "stock raised LookupError: none left" in local.stdout
    store.close()
