"""Answers to child runs over HTTP and through the client, on SQLite and PostgreSQL.

A durable server (real uvicorn) runs ``Release``, whose step runs an ``Approve`` child that
asks a question: the parent shows ``waiting`` with the child's question; an answer posted to
the parent (or to the child's run id, or sent with ``client.answer``) is committed to the
child's inbox once and the run completes; a second answer gets 409; with two children
waiting, an answer to the parent gets 409 naming both.
"""

from __future__ import annotations

import httpx
import pytest
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.client import Client, ConflictError
from batonflow.core.stores import open_store
from child_questions import Desk, Nest, Pair, Release

from .sse import wait_status


@pytest.fixture(params=["sqlite", "postgres"])
def served(request, tmp_path):
    """A durable server of Release and Pair on each backend: (http client, the store)."""
    where = (
        request.getfixturevalue("postgres_url")
        if request.param == "postgres"
        else str(tmp_path / "runs.db")
    )
    store = open_store(where)
    flows = {"release": Release(), "pair": Pair(), "desk": Desk()}
    with BackgroundServer(create_app(flows, checkpoints=store)) as s:
        with httpx.Client(base_url=s.url, timeout=20) as http:
            yield http, store
    store.close()


def _waiting_parent(http: httpx.Client, workflow: str, fields: dict) -> dict:
    """Start a run of ``workflow``; its body once ``GET /runs/{id}`` says it waits."""
    run_id = http.post(f"/workflows/{workflow}/runs", json=fields).json()["run_id"]
    return wait_status(http, run_id, {"waiting"})


def test_a_parent_shows_waiting_with_its_childs_question(served):
    """While the child waits, GET /runs/{parent} says waiting, with the child's question."""
    http, store = served
    parent = _waiting_parent(http, "release", {"topic": "tides"})
    (child,) = store.children(parent["run_id"])
    assert parent["waiting_children"] == [child.run_id]
    assert parent["waiting_for_input"] is True
    assert parent["question"]["value"]["prefix"] == "approve tides?"
    assert parent["question"]["child_run_id"] == child.run_id
    assert {w["type"] for w in parent["waiting_for"]} == {"HumanResponseEvent"}
    assert {w["child_run_id"] for w in parent["waiting_for"]} == {child.run_id}


def test_the_runs_list_shows_a_parent_waiting_as_its_page_does(served):
    """GET /runs lists the parent ``waiting`` (with its waiting child); ``status=waiting``
    finds it with the child, ``status=running`` leaves it out; answered, it runs again."""
    http, store = served
    parent = _waiting_parent(http, "release", {"topic": "tides"})
    run_id = parent["run_id"]
    (child,) = store.children(run_id)

    def listed(**query: str) -> dict[str, dict]:
        runs = http.get("/runs", params=query).json()["runs"]
        return {r["run_id"]: r for r in runs}

    row = listed()[run_id]
    assert (row["status"], row["waiting_for_input"]) == ("waiting", True)
    assert row["waiting_children"] == parent["waiting_children"] == [child.run_id]
    assert set(listed(status="waiting")) == {run_id, child.run_id}
    assert run_id not in listed(status="running")
    answer = {"type": "HumanResponseEvent", "data": {"response": "yes"}}
    assert http.post(f"/runs/{run_id}/events", json=answer).status_code == 202
    wait_status(http, run_id, {"completed"})
    assert listed()[run_id]["status"] == "completed"
    assert listed(status="waiting") == {}


def test_an_answer_posted_to_the_parent_reaches_the_child_once(served):
    """POST /runs/{parent}/events answers the child (its inbox, once); a second gets 409."""
    http, store = served
    parent = _waiting_parent(http, "release", {"topic": "tides"})
    (child,) = store.children(parent["run_id"])
    answer = {"type": "HumanResponseEvent", "data": {"response": "yes"}}
    sent = http.post(f"/runs/{parent['run_id']}/events", json=answer)
    assert sent.status_code == 202, sent.text
    again = http.post(f"/runs/{parent['run_id']}/events", json=answer)
    assert again.status_code == 409, again.text
    done = wait_status(http, parent["run_id"], {"completed", "failed"})
    assert done["result"] == "tides: yes"
    assert [item.key for item in store.inbox(child.run_id)] == ["answer:1"]
    assert store.inbox(parent["run_id"]) == []


def test_an_answer_posted_to_the_childs_run_id_reaches_it(served):
    """POST /runs/{child}/events answers the child (its workflow is not served by name)."""
    http, store = served
    parent = _waiting_parent(http, "release", {"topic": "tides"})
    (child,) = store.children(parent["run_id"])
    answer = {"type": "HumanResponseEvent", "data": {"response": "direct"}}
    sent = http.post(f"/runs/{child.run_id}/events", json=answer)
    assert sent.status_code == 202, sent.text
    assert wait_status(http, parent["run_id"], {"completed"})["result"] == "tides: direct"
    again = http.post(f"/runs/{child.run_id}/events", json=answer)
    assert again.status_code == 409, again.text


def test_the_client_answers_a_parent_whose_child_asks(served):
    """``client.answer(parent, ...)`` answers the child; a second answer is a ConflictError."""
    http, _ = served
    parent = _waiting_parent(http, "release", {"topic": "tides"})
    with Client(str(http.base_url)) as client:
        seen = client.get(parent["run_id"])
        assert (seen.status, seen.waiting_for_input) == ("waiting", True)
        assert seen.waiting_children == parent["waiting_children"]
        client.answer(parent["run_id"], "fine")
        with pytest.raises(ConflictError):
            client.answer(parent["run_id"], "again")
    assert wait_status(http, parent["run_id"], {"completed"})["result"] == "tides: fine"


def test_two_waiting_children_get_409_naming_both(served):
    """With two children waiting, an answer to the parent is refused naming both; each child
    answered by its run id goes on."""
    http, store = served
    run_id = http.post("/workflows/pair/runs", json={}).json()["run_id"]
    parent = wait_status(http, run_id, {"waiting"})
    while len(parent.get("waiting_children") or []) < 2:
        parent = wait_status(http, run_id, {"waiting"})
    children = parent["waiting_children"]
    answer = {"type": "HumanResponseEvent", "data": {"response": "yes"}}
    refused = http.post(f"/runs/{run_id}/events", json=answer)
    assert refused.status_code == 409, refused.text
    detail = refused.json()["detail"]
    assert all(child in detail for child in children)
    assert "send the answer to the child run it is for" in detail
    assert [store.inbox(c) for c in children] == [[], []]
    for child in children:
        sent = http.post(f"/runs/{child}/events", json=answer)
        assert sent.status_code == 202, sent.text
    assert wait_status(http, run_id, {"completed"})["result"] == "left: yes, right: yes"


def test_an_answer_to_the_top_run_reaches_an_asking_grandchild(tmp_path):
    """Two levels down, over HTTP: the top run shows waiting; its answer reaches the
    grandchild (declared by the child's step, not served)."""
    store = open_store(str(tmp_path / "runs.db"))
    try:
        with BackgroundServer(create_app({"nest": Nest()}, checkpoints=store)) as s:
            with httpx.Client(base_url=s.url, timeout=20) as http:
                top = _waiting_parent(http, "nest", {"topic": "tides"})
                (grandchild,) = top["waiting_children"]
                assert store.run(grandchild).workflow_name == "Approve"
                answer = {"type": "HumanResponseEvent", "data": {"response": "deep"}}
                sent = http.post(f"/runs/{top['run_id']}/events", json=answer)
                assert sent.status_code == 202, sent.text
                done = wait_status(http, top["run_id"], {"completed"})
                assert done["result"] == "tides: deep"
    finally:
        store.close()


def test_the_values_a_childs_wait_requires_pick_the_child(served):
    """Two children wait for the same type with different required values: the answer's
    values pick one; one that fits both (no value) gets 409."""
    http, _ = served
    run_id = http.post("/workflows/desk/runs", json={}).json()["run_id"]
    parent = wait_status(http, run_id, {"waiting"})
    while len(parent.get("waiting_children") or []) < 2:
        parent = wait_status(http, run_id, {"waiting"})
    send = f"/runs/{run_id}/events"
    vague = http.post(send, json={"type": "HumanResponseEvent", "data": {"response": "go"}})
    assert vague.status_code == 409, vague.text
    for tool in ("b", "a"):
        data = {"response": f"go {tool}", "tool": tool}
        sent = http.post(send, json={"type": "HumanResponseEvent", "data": data})
        assert sent.status_code == 202, sent.text
        if tool == "b":  # the other child still waits: the parent too
            assert wait_status(http, run_id, {"waiting"})["waiting_children"] != []
    assert wait_status(http, run_id, {"completed"})["result"] == "a: go a, b: go b"
