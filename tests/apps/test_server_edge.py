"""The HTTP edge over real HTTP: every client mistake is a 4xx, no cross-site or rebound requests."""

from __future__ import annotations

import asyncio
import socket

import pytest
from batonflow.apps._uvicorn import PortInUseError, bind_socket

from .sse import wait_status

JSON = {"content-type": "application/json"}
DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize(
    "body, needle",
    [
        pytest.param(DEEP, "nests deeper than 100 levels", id="100k-deep-array"),
        pytest.param(
            b'{"a": ' * 5000 + b"1" + b"}" * 5000, "nests deeper than 100", id="5k-objects"
        ),
        pytest.param(b'{"x": NaN}', "contains NaN, which is not JSON", id="nan"),
        pytest.param(b'{"x": [-Infinity]}', "contains -Infinity, which is not JSON", id="infinity"),
        pytest.param(b"{oops", "is not valid JSON", id="garbage"),
    ],
)
def test_bad_json_bodies_are_422_also_with_wait(client, body, needle):
    """Deep nesting, NaN/Infinity and garbage are 422s, never a 500 or a started run."""
    for path in ("/workflows/echo/runs?wait=true", "/workflows/echo/runs"):
        response = client.post(path, content=body, headers=JSON)
        assert response.status_code == 422, response.text
        assert needle in response.json()["detail"]
    assert client.get("/runs").json()["runs"] == []


def test_bad_json_answers_are_422(client):
    """An event posted to a waiting run is checked the same way."""
    run_id = client.post("/workflows/approval/runs", json={}).json()["run_id"]
    wait_status(client, run_id, {"waiting"})
    response = client.post(f"/runs/{run_id}/events", content=DEEP, headers=JSON)
    assert response.status_code == 422 and "nests deeper" in response.json()["detail"]
    assert client.get(f"/runs/{run_id}").json()["status"] == "waiting"


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"content-type": "text/plain"}, id="text-plain"),
        pytest.param({"content-type": "application/x-www-form-urlencoded"}, id="form"),
        pytest.param({}, id="no-content-type"),
    ],
)
def test_without_token_non_json_bodies_are_415(client, headers):
    """Without a token a body not declared JSON is refused: web pages cannot start runs."""
    response = client.post("/workflows/echo/runs", content=b'{"a": 1}', headers=headers)
    assert response.status_code == 415
    assert "'Content-Type: application/json'" in response.json()["detail"]
    assert client.get("/runs").json()["runs"] == []
    empty = client.post("/workflows/echo/runs?wait=true", headers=headers)  # no body: no fields
    assert empty.status_code == 200


def test_with_token_a_text_plain_json_body_is_taken(start_server):
    """With a token (no cross-site risk) the content type is not checked; JSON still is."""
    _, client = start_server(token="t")
    auth = {"Authorization": "Bearer t", "content-type": "text/plain"}
    response = client.post("/workflows/echo/runs?wait=true", content=b'{"a": 1}', headers=auth)
    assert response.status_code == 200 and response.json()["result"] == {"a": 1}
    nan = client.post("/workflows/echo/runs?wait=true", content=b'{"a": NaN}', headers=auth)
    assert nan.status_code == 422


@pytest.mark.parametrize("value", ["-1", "abc", str(10**20), "1.5", ""])
def test_bad_resume_positions_are_422(client, value):
    """Last-Event-ID or ?after= that is negative, not a number or too big is a 422."""
    run_id = client.post("/workflows/echo/runs?wait=true", json={}).json()["run_id"]
    header = client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": value})
    assert header.status_code == 422
    assert "Last-Event-ID must be a sequence number from 0 to" in header.json()["detail"]
    query = client.get(f"/runs/{run_id}/events", params={"after": value})
    assert query.status_code == 422
    ok = client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": str(2**63 - 1)})
    assert ok.status_code == 200


def test_an_answer_to_an_ended_run_is_409(client):
    """Answering a run that completed is a 409 naming its status."""
    run_id = client.post("/workflows/echo/runs?wait=true", json={}).json()["run_id"]
    answer = {"type": "HumanResponseEvent", "data": {"response": "late"}}
    response = client.post(f"/runs/{run_id}/events", json=answer)
    assert response.status_code == 409 and "is completed" in response.json()["detail"]


def test_hosts_other_than_the_bound_address_are_refused(start_server):
    """DNS rebinding: a Host that is not this server's address is a 400; loopback names work."""
    url, client = start_server()
    port = url.rsplit(":", 1)[1]
    evil = client.get("/workflows", headers={"host": f"evil.example:{port}"})
    assert evil.status_code == 400
    assert "Host 'evil.example:" in evil.json()["detail"]
    assert "--allowed-host NAME" in evil.json()["detail"]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost"):
        assert client.get("/workflows", headers={"host": host}).status_code == 200, host
    _, named = start_server(allowed_hosts=["batonflow.internal"])
    assert named.get("/health", headers={"host": "batonflow.internal:80"}).status_code == 200
    assert named.get("/health", headers={"host": "other.internal"}).status_code == 400
    _, tokened = start_server(token="t")
    assert tokened.get("/health", headers={"host": "evil.example"}).status_code == 200


@pytest.mark.parametrize(
    "origin, status",
    [
        pytest.param("https://evil.example", 403, id="cross-site"),
        pytest.param("null", 403, id="sandboxed"),
        pytest.param("http://127.0.0.1:{port}", 202, id="same-origin"),
        pytest.param("http://localhost:{port}", 202, id="localhost"),
    ],
)
def test_cross_site_origins_are_refused(start_server, origin, status):
    """A browser's cross-site Origin is a 403; the server's own pages may post."""
    url, client = start_server()
    origin = origin.format(port=url.rsplit(":", 1)[1])
    response = client.post("/workflows/echo/runs", json={}, headers={"origin": origin})
    assert response.status_code == status, response.text
    if status == 403:
        assert "Cross-site request from" in response.json()["detail"]


async def test_listening_socket_makes_connections_without_nagle():
    """Connections accepted on bind_socket() get TCP_NODELAY (a proto-0 socket does not)."""

    async def nodelay_of(sock: socket.socket) -> int:
        seen: list[int] = []

        async def on_connect(reader, writer):
            raw = writer.get_extra_info("socket")
            seen.append(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connect, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname())
            while not seen:
                await asyncio.sleep(0.01)
            writer.close()
        return seen[0]

    assert await nodelay_of(bind_socket("127.0.0.1", 0)) == 1
    plain = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    plain.bind(("127.0.0.1", 0))
    plain.listen()
    assert await nodelay_of(plain) == 0  # the bug the explicit IPPROTO_TCP fixes


def test_a_port_in_use_is_a_clear_error():
    """Binding a taken port raises PortInUseError naming the port and --port 0."""
    taken = bind_socket("127.0.0.1", 0)
    port = taken.getsockname()[1]
    try:
        with pytest.raises(
            PortInUseError, match=f"Port {port} on 127.0.0.1 is already in use.*--port 0"
        ):
            bind_socket("127.0.0.1", port)
    finally:
        taken.close()


def _slow_start_app(seconds: float):
    """An ASGI app whose lifespan start-up takes ``seconds`` (as resuming many runs can)."""
    import contextlib

    from fastapi import FastAPI

    @contextlib.asynccontextmanager
    async def lifespan(app):
        await asyncio.sleep(seconds)
        yield

    return FastAPI(lifespan=lifespan)


def test_background_server_waits_for_a_slow_start_up_within_its_timeout():
    """A slow lifespan start-up is waited for, up to start_timeout (30 s by default)."""
    from batonflow.apps.server import BackgroundServer

    with BackgroundServer(_slow_start_app(0.5), start_timeout=10) as server:
        assert server.url.startswith("http://127.0.0.1:")


def test_background_server_start_timeout_is_a_clear_error():
    """A start-up longer than start_timeout raises, naming the timeout and what to pass."""
    from batonflow.apps.server import BackgroundServer

    server = BackgroundServer(_slow_start_app(3), start_timeout=0.2)
    try:
        with pytest.raises(RuntimeError, match=r"within 0\.2 seconds; pass a larger start_timeout"):
            server.start()
    finally:
        server.stop()
    with pytest.raises(ValueError, match="start_timeout must be a positive number"):
        BackgroundServer(_slow_start_app(0), start_timeout=0)
