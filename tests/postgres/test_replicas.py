"""Two server replicas on one PostgreSQL database, over real HTTP, in one process.

Each replica is a :func:`create_app` on its own :class:`PostgresCheckpointStore` (its own
replica id and connection pool), served from a thread. Killing a replica for real (SIGKILL)
is in ``test_failover.py``; here: any replica answers and streams any run.
"""

from __future__ import annotations

import threading

import httpx
import pytest
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.postgres import PostgresCheckpointStore
from replica_flows import ApprovalFlow
from sse_client import read_sse, wait_status


@pytest.fixture
def replicas(postgres_url):
    """Two replicas ``a`` and ``b`` serving ApprovalFlow from one database; their clients."""
    servers = []
    clients = []
    for name in ("a", "b"):
        store = PostgresCheckpointStore(postgres_url, replica_id=name, lease_seconds=5)
        app = create_app({"approval": ApprovalFlow(timeout=None)}, checkpoints=store)
        server = BackgroundServer(app).__enter__()
        servers.append((server, store))
        clients.append(httpx.Client(base_url=server.url, timeout=20))
    yield clients
    for client in clients:
        client.close()
    for server, store in servers:
        server.__exit__(None, None, None)
        store.close()


def test_a_run_started_on_one_replica_is_answered_and_streamed_on_the_other(replicas):
    """Start on a, answer on b (a delivers it through NOTIFY), stream the whole run from b."""
    a, b = replicas
    run_id = a.post("/workflows/approval/runs", json={"topic": "ship"}).json()["run_id"]
    wait_status(b, run_id, {"waiting"})
    assert b.get("/runs").json()["runs"][0]["run_id"] == run_id
    answer = {"type": "HumanResponseEvent", "data": {"response": "yes"}}
    assert b.post(f"/runs/{run_id}/events", json=answer).status_code == 202
    assert b.post(f"/runs/{run_id}/events", json=answer).status_code == 409  # one answer
    done = wait_status(b, run_id, {"completed"})
    assert done["result"] == "ship: yes"
    events = read_sse(b, f"/runs/{run_id}/events")
    assert [m["event"] for m in events][-1] == "end"
    ids = [int(m["id"]) for m in events]
    assert ids == list(range(1, len(ids) + 1))
    assert events[0]["data"]["type"] == "InputRequiredEvent"


def test_a_stream_followed_on_the_other_replica_sees_the_run_finish(replicas):
    """A reader on b follows a run held by a, live, until its end entry."""
    a, b = replicas
    run_id = a.post("/workflows/approval/runs", json={"topic": "live"}).json()["run_id"]
    wait_status(a, run_id, {"waiting"})
    got: list[list[dict]] = []
    reader = threading.Thread(
        target=lambda: got.append(read_sse(b, f"/runs/{run_id}/events", params={"after": 0}))
    )
    reader.start()
    answer = {"type": "HumanResponseEvent", "data": {"response": "ok"}}
    assert a.post(f"/runs/{run_id}/events", json=answer).status_code == 202
    reader.join(20)
    assert not reader.is_alive(), "the reader on b never saw the run end"
    (events,) = got
    assert events[-1]["event"] == "end" and events[-1]["data"]["result"] == "live: ok"


def test_resuming_a_stream_on_another_replica_has_no_gap_and_no_repeat(replicas):
    """Read the first events on a, reconnect to b with Last-Event-ID: the rest, once each."""
    a, b = replicas
    run_id = a.post("/workflows/approval/runs", json={"topic": "resume"}).json()["run_id"]
    wait_status(a, run_id, {"waiting"})
    first = read_sse(a, f"/runs/{run_id}/events", stop_after=1)
    answer = {"type": "HumanResponseEvent", "data": {"response": "go"}}
    assert a.post(f"/runs/{run_id}/events", json=answer).status_code == 202
    wait_status(a, run_id, {"completed"})
    rest = read_sse(b, f"/runs/{run_id}/events", headers={"Last-Event-ID": first[-1]["id"]})
    whole = read_sse(a, f"/runs/{run_id}/events")
    assert [m["id"] for m in first + rest] == [m["id"] for m in whole]
