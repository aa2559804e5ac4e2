"""`batonflow run --answer` answers a child run's question: locally (in process and durable)
and on a server (``--server``), from the option or from stdin with the child's prompt; so
does ``batonflow runs resume --answer``; ``runs list``/``runs show`` show its parent waiting."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from batonflow.apps.cli import app
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.core.checkpoints import WorkflowCheckpointer
from batonflow.core.stores import open_store
from child_questions import Release
from typer.testing import CliRunner

from .sse import wait_status

FLOWS = str(Path(__file__).parent.parent / "child_questions.py")
runner = CliRunner()


@pytest.mark.parametrize("durable", [False, True], ids=["in_process", "durable"])
def test_run_answers_a_child_runs_question_locally(tmp_path, durable):
    """A local run's child asks; --answer answers it, stdin too (with the child's prompt)."""
    more = ["--durable", "--db", str(tmp_path / "runs.db")] if durable else []
    args = ["run", f"{FLOWS}:Release", "-s", "topic=tides", *more]
    by_option = runner.invoke(app, [*args, "--answer", "yes", "--json"])
    assert by_option.exit_code == 0, by_option.output
    assert json.loads(by_option.stdout.splitlines()[-1])["result"] == "tides: yes"
    by_stdin = runner.invoke(app, [*args, "--json"], input="no\n")
    assert by_stdin.exit_code == 0, by_stdin.output
    assert "approve tides?" in by_stdin.stderr
    assert json.loads(by_stdin.stdout.splitlines()[-1])["result"] == "tides: no"


def test_run_on_a_server_answers_a_child_runs_question(tmp_path):
    """--server URL --answer: the answer posted to the parent reaches the child."""
    store = open_store(str(tmp_path / "runs.db"))
    try:
        with BackgroundServer(create_app({"release": Release()}, checkpoints=store)) as server:
            args = ["run", "release", "--server", server.url, "-s", "topic=tides", "--json"]
            done = runner.invoke(app, [*args, "--answer", "yes"])
            assert done.exit_code == 0, done.output
            assert json.loads(done.stdout.splitlines()[-1])["result"] == "tides: yes"
    finally:
        store.close()


def test_runs_resume_answers_a_child_that_asked_before_its_process_stopped(tmp_path):
    """A durable run stopped while its child waited: ``runs resume --answer`` resumes both
    and answers the child's question."""
    db = str(tmp_path / "runs.db")

    async def stopped() -> str:
        store = open_store(db)
        cptr = WorkflowCheckpointer(Release(), store=store)
        handler = cptr.run(topic="tides")
        async with asyncio.timeout(10):
            while [c.status for c in store.children(handler.run_id)] != ["waiting"]:
                await asyncio.sleep(0.01)
        cptr.release(handler.run_id)  # as a process that stops: the run stays in the store
        await handler.cancel_run()
        cptr.detach()
        store.close()
        return str(handler.run_id)

    run_id = asyncio.run(stopped())
    args = ["runs", "resume", run_id, "--flow", f"{FLOWS}:Release", "--db", db]
    done = runner.invoke(app, [*args, "--answer", "later", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout.splitlines()[-1])["result"] == "tides: later"


def test_runs_list_and_show_read_a_parent_waiting_from_the_store(tmp_path):
    """``runs list``/``runs show`` on the store file: a served parent whose child asks shows
    ``waiting``, naming the child, as ``GET /runs/{id}`` does; ``--status`` filters so."""
    db = str(tmp_path / "runs.db")
    store = open_store(db)
    try:
        with BackgroundServer(create_app({"release": Release()}, checkpoints=store)) as server:
            with httpx.Client(base_url=server.url, timeout=20) as http:
                run_id = http.post("/workflows/release/runs", json={"topic": "tides"})
                run_id = run_id.json()["run_id"]
                seen = wait_status(http, run_id, {"waiting"})
                (child,) = seen["waiting_children"]

                def runs(*args: str) -> list:
                    done = runner.invoke(app, ["runs", *args, "--db", db, "--json"])
                    assert done.exit_code == 0, done.output
                    return json.loads(done.stdout)

                listed = {r["run_id"]: r for r in runs("list")}
                assert listed[run_id]["status"] == "waiting"
                assert listed[run_id]["waiting_children"] == [child]
                assert {r["run_id"] for r in runs("list", "--status", "waiting")} == {
                    run_id,
                    child,
                }
                assert run_id not in {r["run_id"] for r in runs("list", "--status", "running")}
                shown = runs("show", run_id)
                assert (shown["status"], shown["waiting_children"]) == ("waiting", [child])
                text = runner.invoke(app, ["runs", "show", run_id, "--db", db])
                assert "status: waiting" in text.stdout
                assert f"its child runs wait for an answer: {child}" in text.stdout
                answer = {"type": "HumanResponseEvent", "data": {"response": "yes"}}
                assert http.post(f"/runs/{run_id}/events", json=answer).status_code == 202
                wait_status(http, run_id, {"completed"})
    finally:
        store.close()
