"""``batonflow runs fork``: locally on the run store, and through a server with ``--server``."""

from __future__ import annotations

import json
from pathlib import Path

from batonflow.apps.cli import app
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.client import Client
from batonflow.core.stores import open_store
from typer.testing import CliRunner

from .fork_flows import Essay

FLOW = f"{Path(__file__).with_name('fork_flows.py')}:Essay"
runner = CliRunner()


def _last_json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_runs_fork_continues_a_local_run_with_its_state_changed(tmp_path):
    """run --durable, runs show names the checkpoints, runs fork --at --set runs the fork."""
    db = str(tmp_path / "runs.db")
    first = _last_json(runner.invoke(app, ["run", FLOW, "--durable", "--db", db, "--json"]))
    assert first["result"] == "100 words, dry"
    shown = runner.invoke(app, ["runs", "show", first["run_id"], "--db", db])
    assert "checkpoints after: draft (seq 1), publish (seq 2)" in shown.stdout
    forked = _last_json(
        runner.invoke(
            app,
            ["runs", "fork", first["run_id"], "--at", "1", "--set", "tone=warm"]
            + ["--db", db, "--json"],
        )
    )
    assert forked["result"] == "100 words, warm"
    assert forked["parent_run_id"] == first["run_id"]
    with open_store(db) as store:
        record = store.run(forked["run_id"])
        assert (record.parent_run_id, record.parent_seq) == (first["run_id"], 1)
    missing = runner.invoke(app, ["runs", "fork", first["run_id"], "--at", "9", "--db", db])
    assert missing.exit_code == 1 and "has no checkpoint 9; its checkpoints are" in missing.stderr


def test_runs_fork_on_a_server(tmp_path):
    """--server asks the server to fork: the new run is printed and runs there."""
    store = open_store(tmp_path / "runs.db")
    with BackgroundServer(create_app({"essay": Essay()}, checkpoints=store)) as server:
        with Client(server.url) as api:
            run = api.start("essay", {"tone": "dry"})
            api.wait(run.run_id, timeout=30)
            args = ["runs", "fork", run.run_id, "--at", "1", "-s", "tone=odd"]
            printed = _last_json(runner.invoke(app, [*args, "--server", server.url, "--json"]))
            assert printed["parent_run_id"] == run.run_id and printed["parent_seq"] == 1
            assert api.wait(printed["run_id"], timeout=30).result == "100 words, odd"
    store.close()
