"""`batonflow runs list --status | cancel | delete | prune` on a real run store file."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from batonflow.apps.cli import app
from batonflow.apps.run_store import RunStore
from batonflow.core.checkpoints import SqliteCheckpointStore, WorkflowCheckpointer
from typer.testing import CliRunner

from . import flows
from .sse import wait_checkpoint
from .test_runs_cli import _server_runs

runner = CliRunner()
FLOWS = str(Path(flows.__file__))


def cli(*args: str):
    return runner.invoke(app, list(args))


def listed(db: Path, *args: str) -> dict[str, str]:
    result = cli("runs", "list", "--db", str(db), "--json", *args)
    assert result.exit_code == 0, result.output
    return {r["run_id"]: r["status"] for r in json.loads(result.stdout)}


def checkpointed_run(db: Path) -> str:
    async def main() -> str:
        store = SqliteCheckpointStore(db)
        handler = WorkflowCheckpointer(flows.EchoFlow(), store=store).run(a=1)
        await handler
        store.close()
        return str(handler.run_id)

    return asyncio.run(main())


def test_an_unknown_status_is_an_error_listing_the_valid_ones(tmp_path):
    """runs list --status bogus exits 1 naming every valid status (it used to say 'no runs')."""
    db = tmp_path / "runs.db"
    _server_runs(db)
    result = cli("runs", "list", "--db", str(db), "--status", "bogus")
    assert result.exit_code == 1
    assert (
        "error: Unknown status 'bogus'; use one of running, waiting, completed, failed, "
        "cancelled, interrupted, queued." in result.stderr
    )


@pytest.fixture
def durable_process(tmp_path):
    """A `batonflow run --durable` subprocess in its slow second step: (db, run id, process)."""
    db = tmp_path / "runs.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "batonflow", "run", f"{FLOWS}:TwoStepFlow", "--durable",
         "--db", str(db), "--set", "value=1", "--set", f"log={tmp_path / 'log.txt'}"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    run_id = proc.stderr.readline().split()[1]
    wait_checkpoint(db, run_id, "first")
    yield db, run_id, proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)
    proc.stderr.close()


def test_cancel_a_durable_run_whose_process_is_gone(durable_process):
    """While its process lives, cancel refuses naming the pid; once killed the run is cancelled."""
    db, run_id, proc = durable_process
    alive = cli("runs", "cancel", run_id, "--db", str(db))
    assert alive.exit_code == 1
    assert f"is running in process {proc.pid}; stop it there (Ctrl-C, or kill -INT" in alive.stderr
    proc.kill()
    proc.wait(10)
    assert listed(db, "--status", "interrupted") == {run_id: "interrupted"}
    assert listed(db, "--status", "running") == {}
    done = cli("runs", "cancel", run_id, "--db", str(db))
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == f"run {run_id}: cancelled (was interrupted)"
    assert listed(db) == {run_id: "cancelled"}
    again = cli("runs", "cancel", run_id, "--db", str(db))
    assert again.exit_code == 1 and "has already ended (cancelled); nothing to cancel" in (
        again.stderr
    )
    resumed = cli("runs", "resume", run_id, "--db", str(db))
    assert resumed.exit_code == 1 and "is cancelled: it has ended" in resumed.stderr


def test_cancel_and_delete_server_runs(tmp_path):
    """A waiting run left by a stopped server can be cancelled, then deleted with the others."""
    db = tmp_path / "runs.db"
    done, waiting = _server_runs(db)
    result = cli("runs", "cancel", waiting, "--db", str(db))
    assert result.exit_code == 0, result.output
    assert RunStore(db).get(waiting).status == "cancelled"
    deleted = cli("runs", "delete", done, waiting, "--db", str(db))
    assert deleted.exit_code == 0, deleted.output
    assert deleted.stdout.splitlines() == [f"deleted run {done}", f"deleted run {waiting}"]
    assert listed(db) == {}
    store = RunStore(db)
    assert store.get(done) is None and store.events(done) == []
    missing = cli("runs", "delete", "nope", "--db", str(db))
    assert missing.exit_code == 1 and "Run 'nope' is not in the run store" in missing.stderr


def test_delete_refuses_a_run_in_progress_and_forgets_checkpoints(durable_process):
    """A run its process still runs is not deleted; a finished one loses its checkpoints too."""
    db, run_id, proc = durable_process
    refused = cli("runs", "delete", run_id, "--db", str(db))
    assert refused.exit_code == 1 and f"process {proc.pid}" in refused.stderr
    assert proc.wait(30) == 0  # it finishes on its own
    assert cli("runs", "delete", run_id, "--db", str(db)).exit_code == 0
    store = SqliteCheckpointStore(db)
    assert store.run(run_id) is None and store.list(run_id) == []


def test_prune_forgets_only_ended_runs_older_than_the_duration(tmp_path):
    """prune --older-than keeps recent and unfinished runs; --dry-run deletes nothing."""
    db = tmp_path / "runs.db"
    done, waiting = _server_runs(db)
    checkpointed = checkpointed_run(db)
    recent = cli("runs", "prune", "--older-than", "1d", "--db", str(db))
    assert recent.exit_code == 0 and "deleted 0 run(s) that ended more than 1d ago" in recent.stdout
    dry = cli("runs", "prune", "--older-than", "0s", "--dry-run", "--db", str(db))
    assert dry.exit_code == 0 and "would delete 2 run(s)" in dry.stdout
    assert done in dry.stdout and checkpointed in dry.stdout and waiting not in dry.stdout
    assert len(listed(db)) == 3
    pruned = cli("runs", "prune", "--older-than", "0s", "--db", str(db))
    assert pruned.exit_code == 0 and "deleted 2 run(s)" in pruned.stdout
    assert listed(db) == {waiting: "waiting"}


@pytest.mark.parametrize("value", ["7", "soon", "3y", "-1d"])
def test_prune_refuses_a_bad_duration(tmp_path, value):
    """A duration that is not N s/m/h/d/w is an error with examples."""
    db = tmp_path / "runs.db"
    _server_runs(db)
    result = cli("runs", "prune", "--older-than", value, "--db", str(db))
    assert result.exit_code == 1
    assert "--older-than expects a duration such as 30m, 12h, 7d or 2w" in result.stderr
