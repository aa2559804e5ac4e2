"""A server without a token takes changes only from its own origin, over real HTTP.

A page on another port of the same machine (a dev server, a notebook) is another origin: its
POSTs, with a body or without, are refused on every route that changes something, while the
server's own pages and clients that are not browsers (no ``Origin``, no ``Sec-Fetch-Site``) are
served as before.
"""

from __future__ import annotations

import httpx
import pytest
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer

from .flows import flaky_app
from .sse import wait_status

#: Origins of pages that are not the server's own: ``{port}`` is the server's, ``{other}``
#: another port of the same machine.
FOREIGN = (
    "http://127.0.0.1:{other}",
    "http://localhost:{other}",
    "http://[::1]:{other}",
    "http://127.0.0.1",
    "https://127.0.0.1:{port}",
    "null",
)
#: ``Sec-Fetch-Site`` of a page of another origin, sent without ``Origin``.
FOREIGN_SITES = ("same-site", "cross-site")


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _foreign_headers(url: str) -> list[dict[str, str]]:
    port = _port(url)
    origins = [o.format(port=port, other=port + 1) for o in FOREIGN]
    return [{"origin": o} for o in origins] + [{"sec-fetch-site": s} for s in FOREIGN_SITES]


def _own_headers(url: str) -> list[dict[str, str]]:
    """The server's own pages (either loopback name), and clients that are not browsers."""
    port = _port(url)
    return [
        {"origin": f"http://127.0.0.1:{port}"},
        {"origin": f"http://localhost:{port}", "sec-fetch-site": "same-origin"},
        {},
    ]


def _refused(response: httpx.Response, headers: dict[str, str]) -> None:
    assert response.status_code == 403, (headers, response.text)
    detail = response.json()["detail"]
    assert "refused" in detail and "--token" in detail, detail


def test_starting_a_run_from_another_origin_is_refused(start_server):
    """POST /workflows/{name}/runs, with a JSON body or none, from another origin starts nothing."""
    # --allowed-host '*' serves any host name; the same-origin rule holds all the same.
    for hosts in ([], ["*"]):
        url, client = start_server(allowed_hosts=hosts, store=RunStore(":memory:"))
        for headers in _foreign_headers(url):
            _refused(client.post("/workflows/echo/runs", json={}, headers=headers), headers)
            _refused(client.post("/workflows/echo/runs?wait=true", headers=headers), headers)
        assert client.get("/runs").json()["runs"] == []
        for headers in _own_headers(url):
            started = client.post("/workflows/echo/runs?wait=true", headers=headers)
            assert started.status_code == 200, (headers, started.text)
        assert len(client.get("/runs").json()["runs"]) == len(_own_headers(url))


def test_cancelling_a_run_from_another_origin_is_refused(start_server):
    """POST /runs/{id}/cancel, a body-less POST, from another origin leaves the run running."""
    url, client = start_server()
    run_id = client.post("/workflows/sleepy/runs", json={"seconds": 60}).json()["run_id"]
    wait_status(client, run_id, {"running"})
    for headers in _foreign_headers(url):
        _refused(client.post(f"/runs/{run_id}/cancel", headers=headers), headers)
    assert client.get(f"/runs/{run_id}").json()["status"] == "running"
    cancelled = client.post(f"/runs/{run_id}/cancel", headers=_own_headers(url)[0])
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    other = client.post("/workflows/sleepy/runs", json={"seconds": 60}).json()["run_id"]
    assert client.post(f"/runs/{other}/cancel").status_code == 200  # curl, the client, the CLI


def test_answering_a_run_from_another_origin_is_refused(start_server):
    """POST /runs/{id}/events from another origin is not taken: the run still waits."""
    url, client = start_server()
    run_id = client.post("/workflows/approval/runs", json={}).json()["run_id"]
    wait_status(client, run_id, {"waiting"})
    answer = {"type": "HumanResponseEvent", "data": {"response": "yes"}}
    for headers in _foreign_headers(url):
        _refused(client.post(f"/runs/{run_id}/events", json=answer, headers=headers), headers)
        _refused(client.post(f"/runs/{run_id}/events", headers=headers), headers)
    assert client.get(f"/runs/{run_id}").json()["status"] == "waiting"
    taken = client.post(f"/runs/{run_id}/events", json=answer, headers=_own_headers(url)[1])
    assert taken.status_code == 202, taken.text
    wait_status(client, run_id, {"completed"})


def test_resuming_a_run_from_another_origin_is_refused(tmp_path):
    """POST /runs/{id}/resume from another origin starts no new run."""
    with (
        BackgroundServer(flaky_app(tmp_path / "runs.db")) as server,
        httpx.Client(base_url=server.url, timeout=20) as c,
    ):
        run_id = c.post("/workflows/flaky/runs", json={"topic": "x"}).json()["run_id"]
        wait_status(c, run_id, {"failed"})
        for headers in _foreign_headers(server.url):
            _refused(c.post(f"/runs/{run_id}/resume", headers=headers), headers)
        assert [r["run_id"] for r in c.get("/runs").json()["runs"]] == [run_id]
        resumed = c.post(f"/runs/{run_id}/resume", headers=_own_headers(server.url)[0])
        assert resumed.status_code == 200, resumed.text
        wait_status(c, resumed.json()["run_id"], {"completed"})


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
def test_other_changing_methods_from_another_origin_are_refused(start_server, method):
    """PUT, PATCH and DELETE from another origin are refused before any route is looked up."""
    url, client = start_server()
    run_id = client.post("/workflows/echo/runs?wait=true", json={}).json()["run_id"]
    for headers in _foreign_headers(url):
        _refused(client.request(method, f"/runs/{run_id}", headers=headers), headers)
    assert client.request(method, f"/runs/{run_id}").status_code == 405  # no such route
    assert client.get(f"/runs/{run_id}").json()["status"] == "completed"


def test_reads_from_another_port_are_still_served(start_server):
    """GETs change nothing: a page's Origin on another loopback port is only checked by host."""
    url, client = start_server()
    headers = {"origin": f"http://localhost:{_port(url) + 1}", "sec-fetch-site": "same-site"}
    assert client.get("/runs", headers=headers).status_code == 200
    assert client.get("/health", headers=headers).status_code == 200


def test_with_a_token_the_token_decides(start_server):
    """A server with a token takes a POST from another port that carries the token."""
    url, client = start_server(token="t")
    headers = {"origin": f"http://localhost:{_port(url) + 1}", "authorization": "Bearer t"}
    started = client.post("/workflows/echo/runs?wait=true", headers=headers)
    assert started.status_code == 200, started.text
    refused = client.post("/workflows/echo/runs", headers={"origin": headers["origin"]})
    assert refused.status_code == 401
