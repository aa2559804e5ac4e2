"""The command line on a PostgreSQL run store: --db URL and BATONFLOW_DATABASE_URL."""

from __future__ import annotations

import json

import pytest
from batonflow.apps.cli import app
from batonflow.apps.config import ConfigError, Settings
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.client import Client
from batonflow.postgres import PostgresCheckpointStore
from replica_flows import ApprovalFlow
from typer.testing import CliRunner

runner = CliRunner()


def test_a_durable_cli_run_is_kept_in_postgres_and_listed(postgres_url):
    """run --durable --db URL records the run there; runs list/show read it back."""
    done = runner.invoke(
        app, ["run", "accumulate", "--set", "numbers=[1,2,3]", "--durable", "--db", postgres_url]
    )
    assert done.exit_code == 0, done.output
    listed = runner.invoke(app, ["runs", "list", "--db", postgres_url, "--json"])
    assert listed.exit_code == 0, listed.output
    (row,) = json.loads(listed.stdout)
    assert row["status"] == "completed" and row["workflow"]
    shown = runner.invoke(app, ["runs", "show", row["run_id"], "--db", postgres_url, "--json"])
    assert json.loads(shown.stdout)["status"] == "completed"


def test_the_environment_variable_chooses_the_store(postgres_url, monkeypatch, tmp_path):
    """BATONFLOW_DATABASE_URL is the store when no --db is given; a --db path wins over it."""
    with PostgresCheckpointStore(postgres_url, replica_id="s") as store:
        app_ = create_app({"approval": ApprovalFlow(timeout=None)}, checkpoints=store)
        with BackgroundServer(app_) as server, Client(server.url) as client:
            run_id = client.start("approval", topic="env").run_id
            next(iter(client.events(run_id)))  # it asked
    monkeypatch.setenv("BATONFLOW_DATABASE_URL", postgres_url)
    listed = runner.invoke(app, ["runs", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [run_id]
    local = runner.invoke(app, ["runs", "list", "--db", str(tmp_path / "none.db")])
    assert local.exit_code == 1 and "No run store at" in local.stderr


def test_replica_settings_are_read():
    """The replica's name and lease length come from BATONFLOW_REPLICA_ID/_LEASE_SECONDS."""
    settings = Settings.load(env={"BATONFLOW_LEASE_SECONDS": "2.5", "BATONFLOW_REPLICA_ID": "x"})
    assert (settings.lease_seconds, settings.replica_id) == (2.5, "x")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("soon", "must be a number of seconds", id="not-a-number"),
        pytest.param("0", "is not positive", id="zero"),
    ],
)
def test_a_bad_lease_length_names_the_setting(value, message):
    """A lease length that is not a positive number is refused, naming the variable."""
    with pytest.raises(ConfigError, match=message) as info:
        Settings.load(env={"BATONFLOW_LEASE_SECONDS": value})
    assert "BATONFLOW_LEASE_SECONDS" in str(info.value)
