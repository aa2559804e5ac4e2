"""`batonflow runs list | show | cancel` of queued runs, local and through a server."""

from __future__ import annotations

import time

from batonflow.apps.cli import app
from batonflow.core import RunLimits, SqliteCheckpointStore
from batonflow.core.durable._queue import QueueEntry
from batonflow.core.durable._records import RunRecord
from typer.testing import CliRunner

from .queued import started

runner = CliRunner()


def _queue_two(db) -> None:
    now = time.time()
    with SqliteCheckpointStore(db) as store:
        for n, run_id in enumerate(("first", "second")):
            record = RunRecord(run_id, "approval", "queued", now + n, now + n, input="{}")
            store.enqueue(record, QueueEntry(), None)


def test_list_show_and_cancel_queued_runs_locally(tmp_path):
    """list shows 'queued'; show its place; cancel cancels it before it ever starts."""
    db = tmp_path / "runs.db"
    _queue_two(db)
    listed = runner.invoke(app, ["runs", "list", "--db", str(db), "--status", "queued"])
    assert listed.exit_code == 0, listed.output
    assert listed.output.count("queued") == 2
    shown = runner.invoke(app, ["runs", "show", "second", "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert "status: queued" in shown.output
    assert "queue: position 2, waiting on the runs ahead of it" in shown.output
    cancelled = runner.invoke(app, ["runs", "cancel", "second", "--db", str(db)])
    assert cancelled.exit_code == 0, cancelled.output
    assert "cancelled (was queued; it never started)" in cancelled.output
    with SqliteCheckpointStore(db) as store:
        assert store.run("second").status == "cancelled"
        assert [r.run_id for r in store.claim_queued("approval", RunLimits(concurrency=5), 5)] == [
            "first"
        ]


def test_show_a_queued_run_through_the_server(start_server):
    """show --server prints the limit a queued run waits on."""
    url, client = start_server(limits={"approval": RunLimits(concurrency=1)})
    started(client, {"topic": "a"})
    queued = client.post("/workflows/approval/runs", json={"topic": "b"}).json()["run_id"]
    shown = runner.invoke(app, ["runs", "show", queued, "--server", url])
    assert shown.exit_code == 0, shown.output
    assert "queue: position 1, waiting on the workflow's concurrency limit" in shown.output
