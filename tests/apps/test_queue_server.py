"""The server's run queue (SQLite): queued starts, limits, 429 with Retry-After, cancelling."""

from __future__ import annotations

import threading
import time

from batonflow.apps.run_store import RunStore
from batonflow.client import AsyncClient, Client
from batonflow.core import RunLimits

from .queued import started, wait_until


def test_concurrency_is_never_exceeded_and_every_run_ends(start_server, tmp_path) -> None:
    """30 queued starts: at most 2 run at once (counted in the store), and all complete."""
    store = RunStore(tmp_path / "runs.db")
    _, client = start_server(
        store=store,
        checkpoints=store.backend,
        limits={"sleepy": RunLimits(concurrency=2)},
    )
    ids = []
    for _ in range(30):
        answer = client.post("/workflows/sleepy/runs", json={"seconds": 0.05})
        assert answer.status_code == 202, answer.text
        ids.append(answer.json()["run_id"])
    most = 0

    def done() -> bool:
        nonlocal most
        statuses = [r.status for r in store.backend.runs(workflow_name="sleepy")]
        most = max(most, sum(s in ("running", "waiting") for s in statuses))
        return statuses.count("completed") == 30

    wait_until(done, what="30 runs completing")
    assert most <= 2


def test_full_queue_answers_429_and_records_nothing(start_server) -> None:
    """Past max_queued a start gets 429 with Retry-After and no run is recorded."""
    _, client = start_server(limits={"approval": RunLimits(concurrency=1, max_queued=2)})
    started(client, {"topic": "a"})
    queued = [client.post("/workflows/approval/runs", json={"topic": t}) for t in "bc"]
    assert [q.json()["status"] for q in queued] == ["queued", "queued"]
    assert queued[1].json()["queue"] == {"position": 2, "waiting_on": "concurrency"}
    refused = client.post("/workflows/approval/runs", json={"topic": "d"})
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "1"
    assert "queue of workflow 'approval' is full" in refused.json()["detail"]
    assert len(client.get("/runs", params={"workflow": "approval"}).json()["runs"]) == 3


def test_queued_run_cancelled_never_starts(start_server, tmp_path) -> None:
    """POST /runs/{id}/cancel on a queued run cancels it: it never starts."""
    store = RunStore(tmp_path / "runs.db")
    _, client = start_server(store=store, limits={"approval": RunLimits(concurrency=1)})
    first = started(client, {"topic": "a"})
    second = client.post("/workflows/approval/runs", json={"topic": "b"}).json()["run_id"]
    answer = client.post(f"/runs/{second}/cancel")
    assert answer.json() == {"run_id": second, "status": "cancelled"}
    client.post(
        f"/runs/{first}/events", json={"type": "HumanResponseEvent", "data": {"response": "ok"}}
    )
    wait_until(lambda: client.get(f"/runs/{first}").json()["status"] == "completed", what="the end")
    time.sleep(0.5)  # a queue pass or two: the cancelled run stays cancelled, never asked
    run = client.get(f"/runs/{second}").json()
    assert run["status"] == "cancelled" and "while queued" in run["error"]
    assert store.backend.latest(second) is None  # no step ran, not even the start snapshot
    assert [e.kind for e in store.backend.events(second)] == ["end"]


def test_priority_and_key_limits(start_server) -> None:
    """A higher ?priority starts first; a tenant at its key limit waits while others pass."""
    limits = RunLimits(concurrency=1, key_header="X-Tenant", key_concurrency=1)
    _, client = start_server(limits={"approval": limits})
    first = started(client, {"topic": "hold"}, headers={"X-Tenant": "a"})
    low = client.post("/workflows/approval/runs", json={"topic": "low"}).json()["run_id"]
    with Client(str(client.base_url)) as api:
        high = api.start("approval", {"topic": "high"}, queue_priority=5).run_id
    assert client.get(f"/runs/{high}").json()["queue"]["position"] == 1
    assert client.get(f"/runs/{low}").json()["queue"]["position"] == 2
    client.post(f"/runs/{first}/cancel")
    wait_until(
        lambda: client.get(f"/runs/{high}").json()["status"] == "waiting", what="high starts"
    )
    assert client.get(f"/runs/{low}").json()["status"] == "queued"


def test_client_honours_retry_after(start_server) -> None:
    """The client waits Retry-After on a 429 and starts the run once the queue has room."""
    url, client = start_server(limits={"approval": RunLimits(concurrency=1, max_queued=1)})
    first = started(client, {"topic": "a"})
    queued = client.post("/workflows/approval/runs", json={"topic": "b"}).json()["run_id"]
    timer = threading.Timer(1.5, lambda: client.post(f"/runs/{queued}/cancel"))
    timer.start()
    try:
        with Client(url, timeout=20) as api:
            run = api.start("approval", {"topic": "c"})
    finally:
        timer.join()
    assert run.status == "queued"
    assert run.queue == {"position": 1, "waiting_on": "concurrency"}
    topics = [
        r["start"]["topic"]
        for r in client.get("/runs", params={"workflow": "approval"}).json()["runs"]
    ]
    assert sorted(topics) == ["a", "b", "c"]  # one run for the start that was retried
    assert first != run.run_id


def test_a_schedule_firing_of_a_limited_workflow_is_queued(start_server) -> None:
    """A limited workflow's schedule firings wait in its queue and run under its limits."""
    _, client = start_server(limits={"typed": RunLimits(concurrency=1)})
    body = {"name": "tick", "cron": "* * * * * *", "workflow": "typed", "fields": {"n": 4}}
    assert client.post("/schedules", json=body).status_code == 201

    def fired_and_done() -> bool:
        runs = client.get("/runs", params={"workflow": "typed"}).json()["runs"]
        return any(r["schedule"] and r["status"] == "completed" for r in runs)

    wait_until(fired_and_done, what="a scheduled run completing")
    client.delete("/schedules/tick")


def test_an_idempotency_key_gets_its_queued_run(start_server) -> None:
    """A start sent again with its Idempotency-Key gets the queued run it made: one run."""
    _, client = start_server(limits={"approval": RunLimits(concurrency=1, max_queued=1)})
    started(client, {"topic": "a"})
    key = {"Idempotency-Key": "start-b"}
    first = client.post("/workflows/approval/runs", json={"topic": "b"}, headers=key)
    again = client.post("/workflows/approval/runs", json={"topic": "b"}, headers=key)
    assert first.status_code == 202 and again.status_code == 200
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json()["run_id"] == first.json()["run_id"]
    assert again.json()["status"] == "queued"
    assert len(client.get("/runs", params={"workflow": "approval"}).json()["runs"]) == 2


async def test_the_async_client_sends_a_queue_priority(start_server) -> None:
    """AsyncClient.start(queue_priority=...) puts the run ahead of older ones."""
    url, client = start_server(limits={"approval": RunLimits(concurrency=1)})
    started(client, {"topic": "hold"})
    older = client.post("/workflows/approval/runs", json={"topic": "older"}).json()["run_id"]
    async with AsyncClient(url) as api:
        urgent = await api.start("approval", {"topic": "urgent"}, queue_priority=1)
    assert urgent.queue == {"position": 1, "waiting_on": "concurrency"}
    assert client.get(f"/runs/{older}").json()["queue"]["position"] == 2
