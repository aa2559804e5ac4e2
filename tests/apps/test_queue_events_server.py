"""Events sent to a queued run over HTTP (SQLite): accepted, then delivered once it runs.

``POST /runs/{id}/events`` on a run waiting in the queue commits the event to its inbox
(``202``, status ``queued``); the run is given its events, in order, when it starts. An answer
to a queued run is refused (``409``: it asked nothing yet); a queued run cancelled never gets
its events.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.client import Client
from batonflow.core import RunLimits
from push_flow import PushFlow

from .flows import ApprovalFlow
from .queued import started, wait_until


@pytest.fixture
def server(tmp_path) -> Iterator[tuple[str, httpx.Client]]:
    """A server of ``collect`` (PushFlow) and ``approval``, one run of each at a time."""
    one = RunLimits(concurrency=1)
    app = create_app(
        {"collect": PushFlow(timeout=None), "approval": ApprovalFlow(timeout=None)},
        store=RunStore(tmp_path / "runs.db"),
        limits={"collect": one, "approval": one},
    )
    background = BackgroundServer(app).start()
    with httpx.Client(base_url=background.url, timeout=20) as client:
        yield background.url, client
    background.stop()


def _push(client: httpx.Client, run_id: str, item: str) -> httpx.Response:
    return client.post(f"/runs/{run_id}/events", json={"type": "Push", "data": {"item": item}})


def _status(client: httpx.Client, run_id: str) -> str:
    return str(client.get(f"/runs/{run_id}").json()["status"])


def test_events_sent_to_a_queued_run_reach_it_once_it_runs(server) -> None:
    """Start, push at once: the pushes wait with the queued run and reach it in order."""
    url, client = server
    holder = client.post("/workflows/collect/runs", json={}).json()["run_id"]
    wait_until(lambda: _status(client, holder) == "running", what="the holder running")
    fed = client.post("/workflows/collect/runs", json={}).json()["run_id"]
    sent = _push(client, fed, "a")
    assert sent.status_code == 202, sent.text
    assert sent.json()["status"] == "queued" and sent.json()["sent"] == "Push"
    with Client(url, timeout=20) as api:
        assert api.send_event(fed, "Push", {"item": "b"}).status == "queued"
    dropped = client.post("/workflows/collect/runs", json={}).json()["run_id"]
    assert _push(client, dropped, "x").status_code == 202
    assert client.post(f"/runs/{dropped}/cancel").json()["status"] == "cancelled"
    for item in "123":
        assert _push(client, holder, item).status_code == 202
    wait_until(lambda: _status(client, fed) == "running", what="the queued run starting")
    assert _push(client, fed, "c").status_code == 202
    wait_until(lambda: _status(client, fed) == "completed", what="the fed run ending")
    assert client.get(f"/runs/{fed}").json()["result"] == ["a", "b", "c"]
    assert client.get(f"/runs/{holder}").json()["result"] == ["1", "2", "3"]
    assert _status(client, dropped) == "cancelled"
    late = _push(client, dropped, "y")
    assert late.status_code == 409 and "cancelled" in late.json()["detail"]


def test_an_answer_to_a_queued_run_is_refused(server) -> None:
    """A queued run asked no question: an answer gets 409 saying so, and nothing is kept."""
    _, client = server
    started(client, {"topic": "a"})
    queued = client.post("/workflows/approval/runs", json={"topic": "b"}).json()["run_id"]
    answer = client.post(
        f"/runs/{queued}/events", json={"type": "HumanResponseEvent", "data": {"response": "ok"}}
    )
    assert answer.status_code == 409, answer.text
    assert "is queued: it has not started" in answer.json()["detail"]
    assert _status(client, queued) == "queued"
