"""Deploying new code while runs are in flight: ``batonflow runs check`` (a real CLI process)
lists the runs the new code cannot continue, and a real server restarted with the new code
resumes the others and records those as interrupted, with the reason (SQLite)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.core import WorkflowCheckpointer
from versioned_apps import HOLD_REASONS, V1, V2, batonflow, park, write
from versioned_flows import make_flow
from versioned_flows import park as park_here

from .sse import wait_status


def _park(tmp_path: Path, db: Path) -> tuple[str, str]:
    return park(write(tmp_path / "v1", V1).parent, str(db))


def test_runs_check_lists_the_runs_the_new_code_cannot_continue(tmp_path: Path) -> None:
    """With V2 (hold removed) the run waiting in hold is listed with both reasons on one
    line and the exit status is 1; the run waiting in ship is not listed; V1 passes (0)."""
    db = tmp_path / "runs.db"
    shipping, holding = _park(tmp_path, db)
    new = write(tmp_path / "v2", V2).parent

    done = batonflow(new, "runs", "check", "--app", "orders:Orders", "--store", str(db))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{holding} Orders (waiting, version ")
    assert all(reason in lines[0] for reason in HOLD_REASONS), lines[0]
    assert shipping not in done.stdout
    assert "2 run(s) in flight checked; 1 cannot continue with this code" in done.stderr

    as_json = batonflow(new, "runs", "check", "--app", "orders:Orders", "--db", str(db), "--json")
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert report["checked"] == 2 and [r["run_id"] for r in report["incompatible"]] == [holding]
    assert report["incompatible"][0]["reasons"][0].startswith(HOLD_REASONS[0])

    other = batonflow(new, "runs", "check", "--app", "shop=orders:Orders", "--store", str(db))
    assert other.returncode == 0 and "0 run(s) in flight checked" in other.stderr  # by NAME=

    same = batonflow(tmp_path / "v1", "runs", "check", "--app", "orders:Orders", "--store", str(db))
    assert (same.returncode, same.stdout) == (0, ""), same.stderr
    assert "the new code can continue all of them" in same.stderr


def test_runs_check_refuses_an_app_it_cannot_load(tmp_path: Path) -> None:
    """A bad --app is an error naming it (exit 1), not a silent pass."""
    db = tmp_path / "runs.db"
    _park(tmp_path, db)
    done = batonflow(tmp_path, "runs", "check", "--app", "name=", "--store", str(db))
    assert done.returncode == 1 and "--app 'name=' is incomplete" in done.stderr


@pytest.mark.slow
def test_a_restarted_server_with_new_code_resumes_what_it_can(tmp_path: Path, serve) -> None:
    """Killed with two runs waiting and restarted with V2: the run in ship is resumed and
    answered by the new code; the run in hold is recorded interrupted with the reasons."""
    write(tmp_path, V1)
    first = serve("--no-prebuilt", "-w", "orders=orders:Orders")
    with httpx.Client(base_url=first.url, timeout=20) as c:
        shipping = c.post("/workflows/orders/runs", json={"item": "tea"}).json()["run_id"]
        holding = c.post("/workflows/orders/runs", json={"item": "tea", "hold": True}).json()
        for run_id in (shipping, holding["run_id"]):
            wait_status(c, run_id, {"waiting"})
    first.proc.kill()  # kill -9: the runs stay in flight in the store
    first.proc.wait(10)

    write(tmp_path, V2)
    second = serve("--no-prebuilt", "-w", "orders=orders:Orders")
    second.wait_for(rf"Run {holding['run_id']} is not resumed: Run '{holding['run_id']}'")
    with httpx.Client(base_url=second.url, timeout=20) as c:
        refused = c.get(f"/runs/{holding['run_id']}").json()
        assert refused["status"] == "interrupted"
        assert refused["error"].startswith("IncompatibleRunError: ")
        assert all(reason in refused["error"] for reason in HOLD_REASONS), refused["error"]
        again = c.post(f"/runs/{holding['run_id']}/resume")  # by hand: still this code
        assert again.status_code == 409 and HOLD_REASONS[1] in again.json()["detail"]
        resumed = wait_status(c, shipping, {"waiting", "interrupted"})
        assert resumed["status"] == "waiting", resumed["error"]  # hold's removal is no matter
        answer = {"type": "HumanResponseEvent", "data": {"response": "go"}}
        assert c.post(f"/runs/{shipping}/events", json=answer).status_code == 202
        done = wait_status(c, shipping, {"completed", "failed"})
        assert done["result"] == "shipped tea (v2): go", done
        # The record keeps the version that started the run (V1's, for both).
        assert refused["workflow_version"] is not None
        assert done["workflow_version"] == refused["workflow_version"]


async def test_get_check_lists_the_runs_this_servers_code_cannot_continue(tmp_path: Path) -> None:
    """GET /workflows/{name}/check: the version served, the runs checked, the refused ones."""
    store = RunStore(tmp_path / "runs.db")
    run_id = await park_here(WorkflowCheckpointer(make_flow()(), store=store.backend))
    app = create_app({"Orders": make_flow(second="dispatch")()}, store=store)
    server = BackgroundServer(app).start()
    try:
        with httpx.Client(base_url=server.url, timeout=20) as c:
            body = c.get("/workflows/Orders/check").json()
            assert (body["checked"], body["version"]) == (1, make_flow(second="dispatch")().version)
            (refused,) = body["incompatible"]
            assert refused["run_id"] == run_id and "step 'ship'" in refused["reasons"][0]
            missing = c.get("/workflows/nope/check")
            assert missing.status_code == 404 and "GET /workflows" in missing.json()["detail"]
    finally:
        server.stop()
