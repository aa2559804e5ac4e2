"""`batonflow runs list | show | resume` over the run store file."""

from __future__ import annotations

import asyncio
import json

from batonflow.apps.cli import app
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.core.checkpoints import SqliteCheckpointStore, WorkflowCheckpointer
from typer.testing import CliRunner

from . import flows
from .sse import wait_checkpoint, wait_status

runner = CliRunner()


def _server_runs(db):
    """A finished echo run and an approval run left waiting, recorded by a real server."""
    store = RunStore(db)
    app_ = create_app(
        {"echo": flows.EchoFlow(), "approval": flows.ApprovalFlow(timeout=None)}, store=store
    )
    with BackgroundServer(app_) as server:
        import httpx

        with httpx.Client(base_url=server.url, timeout=20) as c:
            done = c.post("/workflows/echo/runs", params={"wait": True}, json={"a": 1}).json()
            waiting = c.post("/workflows/approval/runs", json={"topic": "cli"}).json()["run_id"]
            wait_status(c, waiting, {"waiting"})
    store.close()
    return done["run_id"], waiting


def test_list_and_show_server_runs(tmp_path):
    """list shows both runs with their status; show prints the result and events."""
    db = tmp_path / "runs.db"
    done, waiting = _server_runs(db)
    listed = runner.invoke(app, ["runs", "list", "--db", str(db), "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {r["run_id"]: r for r in json.loads(listed.stdout)}
    assert rows[done]["status"] == "completed" and rows[waiting]["status"] == "waiting"
    table = runner.invoke(app, ["runs", "list", "--db", str(db), "--status", "waiting"])
    assert waiting in table.stdout and done not in table.stdout
    shown = runner.invoke(app, ["runs", "show", done, "--db", str(db), "--events", "--json"])
    data = json.loads(shown.stdout)
    assert data["result"] == {"a": 1}
    assert [e["seq"] for e in data["events"]] == [1, 2]
    missing = runner.invoke(app, ["runs", "show", "nope", "--db", str(db)])
    assert missing.exit_code == 1 and "Run 'nope' is not in the run store" in missing.stderr


def test_resume_a_waiting_server_run_from_the_cli(tmp_path):
    """resume restores a run that waited for a human (its server is gone) and answers it."""
    db = tmp_path / "runs.db"
    _, waiting = _server_runs(db)
    no_flow = runner.invoke(app, ["runs", "resume", waiting, "--db", str(db), "-a", "yes"])
    assert no_flow.exit_code == 1 and "pass --flow module:WorkflowClass" in no_flow.stderr
    flow = f"{flows.__name__}:ApprovalFlow"
    result = runner.invoke(
        app,
        [
            "runs",
            "resume",
            waiting,
            "--db",
            str(db),
            "--flow",
            flow,
            "--answer",
            "approved",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["result"] == "cli: approved"
    assert RunStore(db).get(waiting).status == "completed"
    again = runner.invoke(app, ["runs", "resume", waiting, "--db", str(db), "--flow", flow])
    assert (
        again.exit_code == 1 and "is completed: it has ended, so there is nothing" in again.stderr
    )


def test_resume_a_checkpointed_run_skips_completed_steps(tmp_path):
    """A run stopped after its first step resumes from the checkpoint; step one is not rerun."""
    db = tmp_path / "runs.db"
    log = tmp_path / "log.txt"

    async def stopped_run() -> str:
        cptr = WorkflowCheckpointer(flows.TwoStepFlow(), store=SqliteCheckpointStore(db))
        handler = cptr.run(value=1, log=str(log))
        while not [c for c in cptr.store.list(handler.run_id) if c.step_name == "first"]:
            await asyncio.sleep(0.01)
        handler.cancel()  # the process "stops" while the second step sleeps
        try:
            await handler
        except BaseException:
            pass
        return handler.run_id

    run_id = asyncio.run(stopped_run())
    listed = json.loads(runner.invoke(app, ["runs", "list", "--db", str(db), "--json"]).stdout)
    assert [r["source"] for r in listed if r["run_id"] == run_id] == ["checkpoints"]
    shown = json.loads(
        runner.invoke(app, ["runs", "show", run_id, "--db", str(db), "--json"]).stdout
    )
    assert "first" in [c["step"] for c in shown["checkpoints"]]
    result = runner.invoke(
        app,
        [
            "runs",
            "resume",
            run_id,
            "--db",
            str(db),
            "--flow",
            f"{flows.__name__}:TwoStepFlow",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["result"] == 2
    assert log.read_text() == "first\n"


def test_durable_cli_run_killed_then_resumed(tmp_path):
    """`run --durable` killed with SIGKILL mid-run is finished by `runs resume` in a new process
    (from another folder, without --flow); the step that had completed does not run again."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    db = tmp_path / "runs.db"
    log = tmp_path / "log.txt"
    flows_file = str(Path(flows.__file__))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "batonflow.apps",
            "run",
            "flows.py:TwoStepFlow",  # relative: the run store remembers it as an absolute path
            "--durable",
            "--db",
            str(db),
            "--set",
            "value=10",
            "--set",
            f"log={log}",
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=Path(flows_file).parent,
    )
    line = proc.stderr.readline()
    assert line.startswith("run "), line
    run_id = line.split()[1]
    wait_checkpoint(db, run_id, "first")
    proc.kill()
    proc.wait(10)
    proc.stderr.close()
    shown = runner.invoke(app, ["runs", "show", run_id, "--db", str(db)])
    assert "status: stopped" in shown.stdout, shown.output
    assert f"pid {proc.pid}, is gone; continue it with 'batonflow runs resume {run_id}'" in (
        shown.stdout
    )
    listed = json.loads(runner.invoke(app, ["runs", "list", "--db", str(db), "--json"]).stdout)
    assert [r["status"] for r in listed if r["run_id"] == run_id] == ["stopped"]
    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "batonflow.apps",
            "runs",
            "resume",
            run_id,
            "--db",
            str(db),
            "--json",
        ],  # no --flow: `run --durable` remembered it
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["result"] == 11
    assert log.read_text() == "first\n"


def test_show_a_checkpointed_result_as_text(tmp_path):
    """runs show decodes a checkpointed run's result: non-ASCII text is printed as is."""
    db = tmp_path / "runs.db"

    async def main() -> str:
        store = SqliteCheckpointStore(db)
        handler = WorkflowCheckpointer(flows.EchoFlow(), store=store).run(名字="猜对了")
        await handler
        store.close()
        return str(handler.run_id)

    run_id = asyncio.run(main())
    shown = runner.invoke(app, ["runs", "show", run_id, "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.split("result:\n", 1)[1].strip() == '{\n  "名字": "猜对了"\n}'
    as_json = runner.invoke(app, ["runs", "show", run_id, "--db", str(db), "--json"])
    assert json.loads(as_json.stdout)["result"] == {"名字": "猜对了"}


def test_empty_store_message_names_every_way_to_make_runs(tmp_path):
    """runs list without a store says which commands create runs, run --durable included."""
    result = runner.invoke(app, ["runs", "list", "--db", str(tmp_path / "none.db")])
    assert result.exit_code == 1
    assert "'batonflow run --durable'" in result.stderr
