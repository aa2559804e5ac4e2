"""Child runs over HTTP and on the command line, on SQLite and PostgreSQL.

A durable server (real uvicorn, ``BackgroundServer``) runs ``Book``, whose step runs an
``Outline`` as a child run: the child's record names its parent and step, the lineage links
both ways, the parent's SSE stream carries the child's events tagged with its run id,
cancelling the parent cancels the child, and ``batonflow runs show`` prints the links.
"""

from __future__ import annotations

import httpx
import pytest
from batonflow.apps.cli import app
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.core.stores import open_store
from typer.testing import CliRunner

from .child_flows import Book, Outline
from .sse import read_sse, wait_status


@pytest.fixture(params=["sqlite", "postgres"])
def served(request, tmp_path):
    """A durable server of Book on each backend: (http client, the child flow, the db)."""
    where = (
        request.getfixturevalue("postgres_url")
        if request.param == "postgres"
        else str(tmp_path / "runs.db")
    )
    store = open_store(where)
    child = Outline(timeout=None)
    with BackgroundServer(create_app({"book": Book(child, timeout=None)}, checkpoints=store)) as s:
        with httpx.Client(base_url=s.url, timeout=20) as http:
            yield http, child, where
    store.close()


def _child_of(http: httpx.Client, parent: str) -> dict:
    children = http.get(f"/runs/{parent}/lineage").json()["children"]
    assert len(children) == 1, children
    return children[0]


def test_a_child_run_is_linked_both_ways_and_streams_into_its_parent(served):
    """The child's record and the lineage link parent and child; the parent's stream holds
    the child's event tagged with the child's run id."""
    http, _, _ = served
    parent = http.post("/workflows/book/runs", json={"topic": "tides"}).json()["run_id"]
    assert wait_status(http, parent, {"completed"})["result"] == "outline of tides"
    child = _child_of(http, parent)
    assert (child["kind"], child["step"], child["workflow"]) == ("child", "plan", "Outline")
    record = http.get(f"/runs/{child['run_id']}").json()
    assert (record["parent_run_id"], record["parent_step"], record["parent_kind"]) == (
        parent,
        "plan",
        "child",
    )
    assert record["status"] == "completed" and record["result"] == "outline of tides"
    up = http.get(f"/runs/{child['run_id']}/lineage").json()["parent"]
    assert up == {"run_id": parent, "seq": None, "step": "plan", "kind": "child"}
    tagged = [
        m["data"]["value"]
        for m in read_sse(http, f"/runs/{parent}/events")
        if m["data"].get("type") == "ChildRunEvent"
    ]
    assert [(t["child_run_id"], t["event_type"], t["event"]) for t in tagged] == [
        (child["run_id"], "Event", {"progress": "outlining tides"})
    ]


def test_cancelling_the_parent_over_http_cancels_the_child(served):
    """POST /runs/{parent}/cancel: the parent and its child both end cancelled."""
    http, child_flow, _ = served
    child_flow.go.clear()
    parent = http.post("/workflows/book/runs", json={"topic": "tides"}).json()["run_id"]
    wait_status(http, parent, {"running"})
    deadline_child = None
    for _ in range(500):
        children = http.get(f"/runs/{parent}/lineage").json()["children"]
        if children:
            deadline_child = children[0]["run_id"]
            break
        wait_status(http, parent, {"running"}, timeout=1)
    assert deadline_child is not None
    assert http.post(f"/runs/{parent}/cancel").status_code == 200
    wait_status(http, parent, {"cancelled"})
    wait_status(http, deadline_child, {"cancelled"})


def test_runs_show_prints_the_parent_and_the_child_runs(served):
    """``batonflow runs show`` names a child's parent and step, and a parent's child runs."""
    http, _, where = served
    parent = http.post("/workflows/book/runs", json={"topic": "tides"}).json()["run_id"]
    wait_status(http, parent, {"completed"})
    child = _child_of(http, parent)["run_id"]
    runner = CliRunner()
    target = ["--db", where]
    shown = runner.invoke(app, ["runs", "show", parent, *target])
    assert shown.exit_code == 0, shown.output
    assert f"child runs: {child} (Outline, completed)" in shown.stdout
    shown = runner.invoke(app, ["runs", "show", child, *target])
    assert f"parent: {parent} (child run of its step plan)" in shown.stdout
    remote = runner.invoke(app, ["runs", "show", parent, "--server", str(http.base_url)])
    assert remote.exit_code == 0, remote.output
    assert f"child runs: {child} (Outline, completed)" in remote.stdout
