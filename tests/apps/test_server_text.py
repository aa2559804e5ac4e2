"""Ids, filters and bodies with NUL characters or lone surrogates, over real HTTP, on SQLite
and on a real PostgreSQL server: the same clear 4xx on both, never a 500 or a dropped
connection; a NUL character in a JSON body is data, and comes back as it was sent."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.core import StartEvent, StopEvent, Workflow, step
from batonflow.core.checkpoints import SqliteCheckpointStore

from .conftest import served_flows
from .sse import read_sse, wait_status

JSON = {"content-type": "application/json"}
#: Run ids no store can hold, as they go in a URL path: a NUL character, and the UTF-8 bytes
#: of a lone surrogate (which the server decodes as U+FFFD).
IMPOSSIBLE_IDS = ["a%00b", "%00", "%ED%A0%80"]
#: Every route that takes a run id.
RUN_ROUTES = [
    ("GET", "/runs/{id}"),
    ("GET", "/runs/{id}/events"),
    ("GET", "/runs/{id}/steps"),
    ("GET", "/runs/{id}/state"),
    ("GET", "/runs/{id}/drawing"),
    ("POST", "/runs/{id}/events"),
    ("POST", "/runs/{id}/cancel"),
    ("POST", "/runs/{id}/resume"),
    ("POST", "/runs/{id}/fork"),
    ("GET", "/runs/{id}/lineage"),
    ("GET", "/runs/{id}/journal"),
    ("GET", "/runs/{id}/checkpoints/1"),
]


class QuoteFlow(Workflow):
    """Fails with an error that quotes its input."""

    @step
    async def quote(self, ev: StartEvent) -> StopEvent:
        raise ValueError(f"cannot publish {ev.get('topic')}")


@pytest.fixture(params=["sqlite", "postgres"])
def client(request, tmp_path) -> Iterator[httpx.Client]:
    """A client of a durable server on SQLite or on PostgreSQL."""
    if request.param == "postgres":
        pytest.importorskip("psycopg", reason="pip install 'batonflow[postgres]'")
        from batonflow.postgres import PostgresCheckpointStore

        store: Any = PostgresCheckpointStore(request.getfixturevalue("postgres_url"))
    else:
        store = SqliteCheckpointStore(tmp_path / "runs.db")
    flows = {**served_flows(), "quote": QuoteFlow(timeout=10)}
    with (
        store,
        BackgroundServer(create_app(flows, checkpoints=store)) as server,
        httpx.Client(base_url=server.url, timeout=20) as c,
    ):
        yield c


def test_a_run_id_no_store_can_hold_is_404_on_every_route(client):
    """NUL or a surrogate's bytes in a run id: 404 on every route, and the connection stays."""
    answer = {"type": "HumanResponseEvent", "data": {"response": "y"}}
    for run_id in IMPOSSIBLE_IDS:
        for method, path in RUN_ROUTES:
            body = answer if path.endswith("/events") and method == "POST" else None
            response = client.request(method, path.format(id=run_id), json=body)
            assert response.status_code == 404, (method, path, run_id, response.text)
            assert "does not exist; GET /runs lists the known runs" in response.json()["detail"]
    assert client.get("/health").status_code == 200


def test_a_filter_no_name_can_match_is_422(client):
    """GET /runs?workflow= with a NUL character says so; ?status= is one of the statuses."""
    response = client.get("/runs", params={"workflow": "echo\x00"})
    assert response.status_code == 422, response.text
    assert response.json()["detail"] == (
        "The workflow filter 'echo\\x00' holds a NUL character at position 4, which no "
        "workflow name has; send a workflow's name (GET /workflows lists them) or leave it out."
    )
    bad_status = client.get("/runs", params={"status": "running\x00"})
    assert bad_status.status_code == 422 and "Unknown status" in bad_status.json()["detail"]
    assert client.get("/runs", params={"workflow": "echo"}).status_code == 200


def test_nul_characters_in_start_fields_and_answers_come_back_as_sent(client):
    """A NUL character in JSON data is data: in the start, the state, the answer, the result."""
    fields = {"t": "a\x00b", "k\x00": ["\x00"]}
    done = client.post("/workflows/echo/runs?wait=true", json=fields)
    assert done.status_code == 200, done.text
    assert (done.json()["start"], done.json()["result"]) == (fields, fields)
    assert client.get(f"/runs/{done.json()['run_id']}").json()["result"] == fields

    run_id = client.post("/workflows/approval/runs", json={"topic": "x\x00y"}).json()["run_id"]
    wait_status(client, run_id, {"waiting"})
    answer = {"type": "HumanResponseEvent", "data": {"response": "o\x00k"}}
    assert client.post(f"/runs/{run_id}/events", json=answer).status_code == 202
    ended = wait_status(client, run_id, {"completed", "failed"})
    assert ended["result"] == "x\x00y: o\x00k", ended
    events = read_sse(client, f"/runs/{run_id}/events")
    assert events[-1]["data"]["result"] == "x\x00y: o\x00k"


def test_an_error_quoting_a_nul_character_is_recorded(client):
    """A step's error that quotes its NUL-holding input ends the run failed, the NUL escaped."""
    run_id = client.post("/workflows/quote/runs", json={"topic": "a\x00b"}).json()["run_id"]
    ended = wait_status(client, run_id, {"failed", "completed"})
    assert ended["status"] == "failed"
    assert ended["error"] == "ValueError: cannot publish a\\x00b"


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b'{"topic": "a\\ud800b"}', id="escaped-lone-surrogate"),
        pytest.param(b'{"topic": "\\udfff"}', id="escaped-low-surrogate"),
        pytest.param('{"topic": "a\udc80"}'.encode("utf-8", "surrogatepass"), id="raw-bytes"),
        pytest.param(b'{"a\\ud800": 1}', id="in-a-key"),
    ],
)
def test_a_lone_surrogate_in_a_json_body_is_422(client, raw):
    """Not Unicode text: refused before anything starts or is answered, on every POST."""
    refused = client.post("/workflows/approval/runs", content=raw, headers=JSON)
    assert refused.status_code == 422, refused.text
    assert "lone surrogate" in refused.json()["detail"]
    assert refused.json()["detail"].endswith(
        "send the character itself, or both halves of a surrogate pair."
    )
    assert client.get("/runs").json()["runs"] == []
    run_id = client.post("/workflows/approval/runs", json={}).json()["run_id"]
    wait_status(client, run_id, {"waiting"})
    answer = b'{"type": "HumanResponseEvent", "data": ' + raw + b"}"
    assert client.post(f"/runs/{run_id}/events", content=answer, headers=JSON).status_code == 422
    assert client.get(f"/runs/{run_id}").json()["status"] == "waiting"
    pair = client.post("/workflows/echo/runs?wait=true", json={"t": "\U0001f642"})
    assert pair.json()["result"] == {"t": "\U0001f642"}  # a surrogate pair is fine


@pytest.mark.parametrize(
    "value",
    [pytest.param(b"1\x00", id="nul"), pytest.param(b"\xed\xa0\x80", id="surrogate-bytes")],
)
def test_a_last_event_id_that_is_not_a_number_is_a_4xx(client, value):
    """A Last-Event-ID header with a NUL or non-text bytes is refused; the server goes on."""
    run_id = client.post("/workflows/echo/runs?wait=true", json={}).json()["run_id"]
    url = urlsplit(str(client.base_url))
    request = (
        f"GET /runs/{run_id}/events HTTP/1.1\r\nHost: {url.hostname}:{url.port}\r\n".encode()
        + b"Last-Event-ID: "
        + value
        + b"\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection((url.hostname, url.port), timeout=20) as sock:
        sock.sendall(request)
        head = sock.recv(4096).split(b"\r\n", 1)[0]
    status = int(head.split()[1])
    assert 400 <= status < 500, head
    assert client.get(f"/runs/{run_id}").json()["status"] == "completed"
