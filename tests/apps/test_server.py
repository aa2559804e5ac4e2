"""The HTTP server over real HTTP: uvicorn on 127.0.0.1 (ephemeral port), httpx clients."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app

from .sse import read_sse, wait_status


def test_health_and_workflow_list(client):
    """/health answers; /workflows lists names, start schemas and outside event types."""
    assert client.get("/health").json()["status"] == "ok"
    listed = {w["name"]: w for w in client.get("/workflows").json()["workflows"]}
    assert {"echo", "approval", "typed", "guess"} <= set(listed)
    assert listed["approval"]["accepts"] == ["HumanResponseEvent"]
    assert listed["guess"]["accepts"] == ["Guess"]
    assert listed["echo"]["accepts"] == []
    typed = listed["typed"]["start_event"]
    assert typed["required"] == ["n"] and typed["properties"]["n"]["type"] == "integer"


def test_graph_is_mermaid_with_every_step(client):
    """GET /workflows/{name}/graph returns Mermaid text naming each step."""
    body = client.get("/workflows/approval/graph").json()
    assert body["format"] == "mermaid"
    assert body["mermaid"].lstrip().startswith(("flowchart", "graph"))
    for name in ("ask", "decide", "HumanResponseEvent"):
        assert name in body["mermaid"]
    text = client.get("/workflows/approval/graph", params={"format": "text"})
    assert text.headers["content-type"].startswith("text/vnd.mermaid")


def test_run_with_wait_returns_result(client):
    """POST /workflows/{name}/runs?wait=true returns the finished run and its result."""
    response = client.post("/workflows/echo/runs", params={"wait": "true"}, json={"a": 1})
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "completed" and body["result"] == {"a": 1}
    assert client.get(f"/runs/{body['run_id']}").json()["result"] == {"a": 1}


def test_run_without_wait_is_accepted_then_completes(client):
    """Without wait the answer is 202 {run_id, status}; the run finishes in the background."""
    response = client.post("/workflows/ticks/runs", json={"count": 3})
    assert response.status_code == 202
    run_id = response.json()["run_id"]
    assert response.json()["status"] == "running"
    assert wait_status(client, run_id, {"completed"})["result"] == 3


def test_stream_has_sequence_ids_and_ends_with_status(client):
    """SSE messages carry ids 1..N, the streamed events, then an `end` with the status."""
    run_id = client.post("/workflows/ticks/runs", json={"count": 4}).json()["run_id"]
    messages = read_sse(client, f"/runs/{run_id}/events")
    assert [int(m["id"]) for m in messages] == list(range(1, len(messages) + 1))
    ticks = [m["data"]["value"]["n"] for m in messages if m["data"].get("type") == "Tick"]
    assert ticks == [1, 2, 3, 4]
    assert messages[-1]["event"] == "end"
    assert messages[-1]["data"]["status"] == "completed" and messages[-1]["data"]["result"] == 4


def test_stream_reconnect_with_last_event_id_loses_and_repeats_nothing(client):
    """A client that drops after 2 events and reconnects with Last-Event-ID gets the rest once."""
    run_id = client.post("/workflows/ticks/runs", json={"count": 8, "delay": 0.05}).json()["run_id"]
    first = read_sse(client, f"/runs/{run_id}/events", stop_after=2)
    assert [m["id"] for m in first] == ["1", "2"]
    rest = read_sse(client, f"/runs/{run_id}/events", headers={"Last-Event-ID": first[-1]["id"]})
    ids = [int(m["id"]) for m in first + rest]
    assert ids == list(range(1, len(ids) + 1))
    ticks = [m["data"]["value"]["n"] for m in first + rest if m["data"].get("type") == "Tick"]
    assert ticks == list(range(1, 9))
    # ?after=N resumes too, also once the run is over (answered from the store)
    after = read_sse(client, f"/runs/{run_id}/events", params={"after": 5})
    assert [int(m["id"]) for m in after] == list(range(6, len(ids) + 1))


def test_several_clients_follow_one_run(start_server):
    """Three concurrent SSE clients each receive every event of one run, in order."""
    url, client = start_server()
    run_id = client.post("/workflows/ticks/runs", json={"count": 6, "delay": 0.03}).json()["run_id"]
    results: list[list[int]] = []

    def follow() -> None:
        with httpx.Client(base_url=url, timeout=20) as own:
            results.append([int(m["id"]) for m in read_sse(own, f"/runs/{run_id}/events")])

    threads = [threading.Thread(target=follow) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert len(results) == 3
    assert results[0] == results[1] == results[2] == list(range(1, 6 + 3))


def test_human_in_the_loop_answer_finishes_the_run(client):
    """A waiting run shows `waiting`; POST /runs/{id}/events with the answer completes it."""
    run_id = client.post("/workflows/approval/runs", json={"topic": "v2"}).json()["run_id"]
    waiting = wait_status(client, run_id, {"waiting"})
    assert waiting["waiting_for_input"] is True
    answer = {"type": "HumanResponseEvent", "data": {"response": "yes"}}
    sent = client.post(f"/runs/{run_id}/events", json=answer)
    assert sent.status_code == 202 and sent.json()["sent"] == "HumanResponseEvent"
    assert wait_status(client, run_id, {"completed"})["result"] == "v2: yes"
    types = [m["data"].get("type") for m in read_sse(client, f"/runs/{run_id}/events")]
    assert types[0] == "InputRequiredEvent" and "StopEvent" in types


def test_typed_outside_event_payload_is_validated(client):
    """An invalid payload is a 422 naming the field; a valid one reaches the step."""
    run_id = client.post("/workflows/guess/runs").json()["run_id"]
    wait_status(client, run_id, {"waiting"})
    bad = client.post(f"/runs/{run_id}/events", json={"type": "Guess", "data": {"value": "x"}})
    assert bad.status_code == 422
    assert "'value'" in bad.json()["detail"]
    assert bad.json()["errors"][0]["loc"] == ["body", "data", "value"]
    missing = client.post(f"/runs/{run_id}/events", json={"type": "Guess", "data": {}})
    assert missing.status_code == 422 and "'value'" in missing.json()["detail"]
    ok = client.post(f"/runs/{run_id}/events", json={"type": "Guess", "data": {"value": 21}})
    assert ok.status_code == 202
    assert wait_status(client, run_id, {"completed"})["result"] == 42


@pytest.mark.parametrize(
    "payload, needle",
    [
        pytest.param({"type": "os.system", "data": {}}, "accepts no event named", id="import"),
        pytest.param({"type": "StopEvent", "data": {}}, "accepts no event named", id="internal"),
        pytest.param({"data": {}}, "Field 'type' is missing", id="no-type"),
        pytest.param({"type": "Guess", "data": [1]}, "must be a JSON object", id="data-list"),
    ],
)
def test_event_type_is_looked_up_among_declared_types_only(client, payload, needle):
    """Names outside the workflow's declared outside events are refused with 422."""
    run_id = client.post("/workflows/guess/runs").json()["run_id"]
    wait_status(client, run_id, {"waiting"})
    response = client.post(f"/runs/{run_id}/events", json=payload)
    assert response.status_code == 422
    assert needle in response.json()["detail"]
    client.post(f"/runs/{run_id}/cancel")


def test_event_to_finished_run_is_409(client):
    """Sending an event to a run that already ended is a 409 naming its status."""
    run_id = client.post("/workflows/echo/runs", params={"wait": True}).json()["run_id"]
    answer = {"type": "HumanResponseEvent", "data": {"response": "late"}}
    response = client.post(f"/runs/{run_id}/events", json=answer)
    assert response.status_code == 409
    assert "completed" in response.json()["detail"]


def test_cancel_a_running_run(client):
    """POST /runs/{id}/cancel stops a run; its status and stream say cancelled."""
    run_id = client.post("/workflows/sleepy/runs").json()["run_id"]
    wait_status(client, run_id, {"running"})
    response = client.post(f"/runs/{run_id}/cancel")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert client.get(f"/runs/{run_id}").json()["status"] == "cancelled"
    end = read_sse(client, f"/runs/{run_id}/events")[-1]
    assert end["event"] == "end" and end["data"]["status"] == "cancelled"
    again = client.post(f"/runs/{run_id}/cancel")
    assert again.status_code == 409


def test_failed_run_reports_the_error(client):
    """A step that raises makes the run `failed` with the error's type and message."""
    body = client.post("/workflows/fail/runs", params={"wait": True}).json()
    assert body["status"] == "failed"
    assert body["error"] == "ValueError: the step failed on purpose"


def test_list_runs_filters_by_workflow_and_status(client):
    """GET /runs filters by workflow and status; an unknown status is a 422."""
    done = client.post("/workflows/echo/runs", params={"wait": True}).json()["run_id"]
    failed = client.post("/workflows/fail/runs", params={"wait": True}).json()["run_id"]
    echo_runs = client.get("/runs", params={"workflow": "echo"}).json()["runs"]
    assert [r["run_id"] for r in echo_runs] == [done]
    failed_runs = client.get("/runs", params={"status": "failed"}).json()["runs"]
    assert [r["run_id"] for r in failed_runs] == [failed]
    bad = client.get("/runs", params={"status": "nope"})
    assert bad.status_code == 422 and "Unknown status 'nope'" in bad.json()["detail"]


@pytest.mark.parametrize(
    "method, path, body, status, needle",
    [
        pytest.param("post", "/workflows/nope/runs", None, 404, "not served here", id="workflow"),
        pytest.param("get", "/workflows/nope/graph", None, 404, "not served here", id="graph"),
        pytest.param("get", "/runs/nope", None, 404, "does not exist", id="run"),
        pytest.param("get", "/runs/nope/events", None, 404, "does not exist", id="events"),
        pytest.param("post", "/runs/nope/events", {}, 404, "does not exist", id="send"),
        pytest.param("post", "/runs/nope/cancel", None, 404, "does not exist", id="cancel"),
    ],
)
def test_unknown_names_are_404(client, method, path, body, status, needle):
    """Unknown workflows and runs are 404s whose message says where to look."""
    response = getattr(client, method)(path, **({"json": body} if body is not None else {}))
    assert response.status_code == status
    assert needle in response.json()["detail"]


def test_bad_start_payloads_are_422(client):
    """A typed start event rejects a bad field by name; non-JSON and non-object bodies too."""
    bad = client.post("/workflows/typed/runs", json={"n": "many"})
    assert bad.status_code == 422
    assert bad.json()["detail"].startswith("Invalid field 'n'")
    missing = client.post("/workflows/typed/runs", json={"label": "y"})
    assert missing.status_code == 422 and "'n'" in missing.json()["detail"]
    ok = client.post("/workflows/typed/runs", params={"wait": True}, json={"n": 4})
    assert ok.json()["result"] == {"label": "x", "double": 8}
    not_json = client.post(
        "/workflows/echo/runs", content=b"{oops", headers={"content-type": "application/json"}
    )
    assert not_json.status_code == 422 and "not valid JSON" in not_json.json()["detail"]
    a_list = client.post("/workflows/echo/runs", json=[1, 2])
    assert a_list.status_code == 422 and "JSON object" in a_list.json()["detail"]


def test_large_bodies_are_413(start_server):
    """A body over the limit is refused with 413, by Content-Length or when streamed."""
    _, client = start_server(max_body_bytes=1000)
    big = {"text": "x" * 2000}
    response = client.post("/workflows/echo/runs", json=big)
    assert response.status_code == 413
    assert "larger than 1000 bytes" in response.json()["detail"]

    def chunks():
        for _ in range(20):
            yield b"x" * 100

    streamed = client.post("/workflows/echo/runs", content=chunks())
    assert streamed.status_code == 413
    small = client.post("/workflows/echo/runs", params={"wait": True}, json={"a": 1})
    assert small.status_code == 200


def test_token_is_required_on_every_route_but_health(start_server):
    """With a token, requests without or with a wrong bearer get 401; the right one works."""
    _, client = start_server(token="s3cret")
    assert client.get("/health").status_code == 200
    for path in ("/workflows", "/runs", "/workflows/echo/graph", "/runs/x"):
        response = client.get(path)
        assert response.status_code == 401, path
        assert "Authorization: Bearer" in response.json()["detail"]
        assert response.headers["www-authenticate"].startswith("Bearer")
    wrong = client.post("/workflows/echo/runs", headers={"Authorization": "Bearer s3cre"})
    assert wrong.status_code == 401
    good = {"Authorization": "Bearer s3cret"}
    assert client.get("/workflows", headers=good).status_code == 200
    run = client.post("/workflows/echo/runs", params={"wait": True}, json={"a": 1}, headers=good)
    assert run.status_code == 200 and run.json()["result"] == {"a": 1}


def test_without_token_no_auth_is_needed(client):
    """Without a token every route answers without an Authorization header."""
    assert client.get("/workflows").status_code == 200
    assert client.get("/runs").status_code == 200


def test_internal_errors_do_not_leak_details(client, caplog):
    """An unexpected exception is a generic 500 with an error id; the detail is only logged."""
    with caplog.at_level("ERROR", logger="batonflow.apps.server"):
        response = client.post("/workflows/broken/runs", json={})
    assert response.status_code == 500
    body = response.json()
    assert "secret" not in response.text and "Traceback" not in response.text
    assert len(body["error_id"]) == 12 and body["error_id"] in body["detail"]
    assert any(body["error_id"] in rec.getMessage() for rec in caplog.records)


def test_fifty_concurrent_runs(start_server):
    """50 runs started concurrently over HTTP all complete with their own result."""
    url, client = start_server()

    async def go() -> list[dict]:
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            responses = await asyncio.gather(
                *(
                    http.post("/workflows/echo/runs", params={"wait": True}, json={"i": i})
                    for i in range(50)
                )
            )
        return [r.json() for r in responses]

    results = asyncio.run(go())
    assert sorted(r["result"]["i"] for r in results) == list(range(50))
    assert {r["status"] for r in results} == {"completed"}
    assert len({r["run_id"] for r in results}) == 50
    listed = client.get("/runs", params={"workflow": "echo", "limit": 100}).json()["runs"]
    assert len(listed) == 50


def test_wait_with_timeout_returns_202_while_running(client):
    """?wait=true&timeout=… gives up waiting (202, still running) without stopping the run."""
    response = client.post("/workflows/sleepy/runs", params={"wait": True, "timeout": 0.1})
    assert response.status_code == 202 and response.json()["status"] == "running"
    client.post(f"/runs/{response.json()['run_id']}/cancel")


def test_idle_stream_sends_keep_alive_comments(start_server):
    """A stream with nothing to say sends `: keep-alive` comments at the heartbeat interval."""
    _, client = start_server(heartbeat=0.05)
    run_id = client.post("/workflows/approval/runs").json()["run_id"]
    wait_status(client, run_id, {"waiting"})
    comments = 0
    with client.stream("GET", f"/runs/{run_id}/events") as response:
        for line in response.iter_lines():
            if line == ": keep-alive":
                comments += 1
                if comments == 2:
                    break
    assert comments == 2
    client.post(f"/runs/{run_id}/cancel")


def test_wait_for_event_inside_a_step_is_answerable(client):
    """A step waiting with ctx.wait_for_event takes a HumanResponseEvent while the run waits."""
    run_id = client.post("/workflows/waiter/runs").json()["run_id"]
    wait_status(client, run_id, {"waiting"})
    answer = {"type": "HumanResponseEvent", "data": {"response": "Ada"}}
    sent = client.post(f"/runs/{run_id}/events", json=answer)
    assert sent.status_code == 202, sent.json()
    assert wait_status(client, run_id, {"completed"})["result"] == "hello Ada"


def test_prebuilt_flows_have_typed_start_events_and_stay_quiet(tmp_path, monkeypatch, capfd):
    """Served prebuilt flows publish real start schemas, refuse typos by name, print nothing."""
    from batonflow.apps.config import Settings
    from batonflow.apps.serve_cli import _served_workflows

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    served = _served_workflows(Settings.load(), {}, prebuilt=True)
    assert {"guess-number", "accumulate", "rag", "hitl"} <= set(served)
    app = create_app(served, store=RunStore(tmp_path / "runs.db"))
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=20) as client:
        listed = {w["name"]: w["start_event"] for w in client.get("/workflows").json()["workflows"]}
        assert set(listed["guess-number"]["properties"]) == {"target", "first_guess"}
        assert listed["guess-number"]["additionalProperties"] is False
        assert listed["accumulate"]["required"] == ["numbers"]
        assert set(listed["rag"]["properties"]) == {"query", "filters", "top_k"}
        typo = client.post("/workflows/guess-number/runs", json={"targt": 7})
        assert typo.status_code == 422
        assert typo.json()["detail"] == (
            "Invalid field 'targt': GuessNumberStart has no field 'targt'; its fields are "
            "target, first_guess."
        )
        assert typo.json()["errors"][0]["loc"] == ["body", "targt"]
        question = client.post("/workflows/rag/runs", json={"question": "x"})
        assert question.status_code == 422 and "its fields are query" in question.json()["detail"]
        numbers = client.post("/workflows/accumulate/runs", json={"numbers": "abc"})
        assert numbers.status_code == 422 and "got 'abc'" in numbers.json()["detail"]
        far = client.post("/workflows/guess-number/runs", json={"target": 700})
        assert far.status_code == 422 and "less than or equal to 100" in far.json()["detail"]
        capfd.readouterr()
        for body in ({"target": 37}, {"numbers": [1, 2]}):
            name = "guess-number" if "target" in body else "accumulate"
            done = client.post(f"/workflows/{name}/runs", params={"wait": True}, json=body)
            assert done.json()["status"] == "completed", done.json()
        assert capfd.readouterr().out == ""


def test_durable_run_with_non_json_state_says_how_to_fix_it(tmp_path):
    """Checkpoints need JSON: the run's error names durability, --no-durable and serializer=."""
    from batonflow.core.checkpoints import SqliteCheckpointStore

    from .flows import OpaqueStateFlow as OpaqueStreamFlow

    db = tmp_path / "runs.db"
    durable = create_app(
        {"opaque": OpaqueStreamFlow(timeout=10)},
        store=RunStore(db),
        checkpoints=SqliteCheckpointStore(db),
    )
    with BackgroundServer(durable) as server, httpx.Client(base_url=server.url) as client:
        row = client.post("/workflows/opaque/runs", params={"wait": True}, json={}).json()
    assert row["status"] == "failed"
    assert row["error"].startswith("SerializationError: Cannot serialize state['payload']")
    assert "This server is durable: it checkpoints every step" in row["error"]
    assert "batonflow serve --no-durable" in row["error"]
    assert "serializer=PickleSerializer()" in row["error"]
    plain = create_app({"opaque": OpaqueStreamFlow(timeout=10)}, store=RunStore(":memory:"))
    with BackgroundServer(plain) as server, httpx.Client(base_url=server.url) as client:
        row = client.post("/workflows/opaque/runs", params={"wait": True}, json={}).json()
    assert row["status"] == "completed" and row["result"] == "done"
    from batonflow.core.serialization import PickleSerializer

    db2 = tmp_path / "pickled.db"
    pickled = create_app(
        {"opaque": OpaqueStreamFlow(timeout=10, serializer=PickleSerializer())},
        store=RunStore(db2),
        checkpoints=SqliteCheckpointStore(db2),
    )
    with BackgroundServer(pickled) as server, httpx.Client(base_url=server.url) as client:
        row = client.post("/workflows/opaque/runs", params={"wait": True}, json={}).json()
    assert row["status"] == "completed", row


def test_human_answer_must_fit_the_declared_fields(client):
    """Over HTTP an answer without 'response', or with an unknown field, is a 422."""
    run_id = client.post("/workflows/approval/runs", json={"topic": "v3"}).json()["run_id"]
    wait_status(client, run_id, {"waiting"})
    wrong = client.post(
        f"/runs/{run_id}/events", json={"type": "HumanResponseEvent", "data": {"wrong": 1}}
    )
    assert wrong.status_code == 422
    assert wrong.json()["detail"] == (
        "HumanResponseEvent has no field 'wrong'; its fields are response: send "
        '{"type": "HumanResponseEvent", "data": {"response": ...}}.'
    )
    empty = client.post(f"/runs/{run_id}/events", json={"type": "HumanResponseEvent"})
    assert empty.status_code == 422
    assert empty.json()["detail"].startswith("HumanResponseEvent needs 'response'")
    assert empty.json()["errors"][0]["loc"] == ["body", "data", "response"]
    ok = client.post(
        f"/runs/{run_id}/events", json={"type": "HumanResponseEvent", "data": {"response": "ok"}}
    )
    assert ok.status_code == 202
    assert wait_status(client, run_id, {"completed"})["result"] == "v3: ok"
