"""Forks over HTTP and through the client, on SQLite and PostgreSQL.

A durable server (real uvicorn, ``BackgroundServer``): each step of ``GET /runs/{id}/steps``
names its ``checkpoint``; ``GET /runs/{id}/checkpoints/{seq}`` shows the state there;
``POST /runs/{id}/fork`` continues it as a new run (``201``) that runs only the steps after
the checkpoint, with state changed or another event; ``GET /runs/{id}/lineage`` links parent
and forks both ways. Bad requests are ``422``s naming the field; a server without
checkpoints is a ``409``.
"""

from __future__ import annotations

import pytest
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.client import Client, ConflictError, InvalidRequestError, NotFoundError
from batonflow.core.stores import open_store

from .fork_flows import Essay


@pytest.fixture(params=["sqlite", "postgres"])
def served(request, tmp_path):
    """A durable server of Essay on each backend: (client, the flow instance)."""
    where = (
        request.getfixturevalue("postgres_url")
        if request.param == "postgres"
        else str(tmp_path / "runs.db")
    )
    store = open_store(where)
    flow = Essay(timeout=30)
    with BackgroundServer(create_app({"essay": flow}, checkpoints=store)) as server:
        with Client(server.url) as api:
            yield api, flow
    store.close()


def _finished(api: Client, flow: Essay) -> str:
    run = api.start("essay", {"tone": "dry"})
    assert api.wait(run.run_id, timeout=30).result == "100 words, dry"
    flow.ran.clear()
    return run.run_id


def _draft_checkpoint(api: Client, run_id: str) -> int:
    steps = api._request("GET", f"/runs/{run_id}/steps")["steps"]
    assert [s["step"] for s in steps] == ["draft", "publish"]
    assert all(isinstance(s["checkpoint"], int) for s in steps)
    return int(steps[0]["checkpoint"])


def test_a_fork_from_a_steps_checkpoint_runs_only_what_follows(served):
    """Fork at draft's checkpoint with the tone changed: publish runs, draft does not; the
    state there is readable first; parent and fork link each other."""
    api, flow = served
    parent = _finished(api, flow)
    at = _draft_checkpoint(api, parent)
    there = api._request("GET", f"/runs/{parent}/checkpoints/{at}")
    assert (there["step"], there["state"]) == ("draft", {"tone": "dry"})
    fork = api.fork(parent, at=at, state={"tone": "warm"})
    assert fork.raw["parent_run_id"] == parent and fork.raw["parent_seq"] == at
    assert api.wait(fork.run_id, timeout=30).result == "100 words, warm"
    assert flow.ran == ["publish"]
    assert api.lineage(parent) == {
        "run_id": parent,
        "parent": None,
        "children": [
            {
                "run_id": fork.run_id,
                "seq": at,
                "status": "completed",
                "step": None,
                "kind": "fork",
                "workflow": "essay",
            }
        ],
    }
    assert api.lineage(fork.run_id)["parent"] == {
        "run_id": parent,
        "seq": at,
        "step": None,
        "kind": "fork",
    }
    assert api.get(fork.run_id).raw["parent_run_id"] == parent


def test_a_fork_with_another_event(served):
    """event= makes another event pending at the checkpoint."""
    api, flow = served
    parent = _finished(api, flow)
    at = _draft_checkpoint(api, parent)
    fork = api.fork(parent, at=at, event={"type": "Drafted", "data": {"words": 3}})
    assert api.wait(fork.run_id, timeout=30).result == "3 words, dry"
    assert flow.ran == ["publish"]


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        pytest.param({"at": 99}, r"has no checkpoint 99; its checkpoints are", id="at"),
        pytest.param({"state": [1]}, r"'state' must be an object", id="state"),
        pytest.param(
            {"event": {"type": "Nope"}}, r"with a type the workflow's steps accept", id="event"
        ),
    ],
)
def test_a_fork_that_cannot_be_made_is_a_422(served, body, detail):
    """A missing checkpoint, a state that is not an object, an unknown event: 422, no run."""
    api, flow = served
    parent = _finished(api, flow)
    with pytest.raises(InvalidRequestError, match=detail):
        api._request("POST", f"/runs/{parent}/fork", json=body)
    assert len(api.list()) == 1


def test_forks_need_a_run_and_checkpoints(tmp_path):
    """An unknown run is a 404; a server that keeps no checkpoints answers 409."""
    with (
        BackgroundServer(create_app({"essay": Essay(timeout=30)})) as server,
        Client(server.url) as api,
    ):
        run = api.start("essay", {})
        api.wait(run.run_id, timeout=30)
        with pytest.raises(NotFoundError):
            api.fork("nope")
        with pytest.raises(ConflictError, match="must be served with checkpoints on"):
            api.fork(run.run_id)
