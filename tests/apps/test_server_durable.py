"""Durable runs over real HTTP: recorded before they run, answers committed before 202."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.core.checkpoints import SqliteCheckpointStore
from batonflow.core.errors import SerializationError
from batonflow.core.serialization import JsonSerializer
from full_disk import Disk

from . import flows
from .sse import read_sse, wait_status
from .test_server_restart import ServerProcess


class NoTabsSerializer(JsonSerializer):
    """A workflow serializer that cannot encode text with a tab in it."""

    def serialize(self, value: Any) -> str:
        text = super().serialize(value)
        if "\\t" in text:
            raise SerializationError("Cannot serialize a tab: this serializer writes none.")
        return text


def test_input_that_cannot_be_recorded_is_a_422_and_nothing_runs(tmp_path: Path) -> None:
    """A start event the workflow's serializer cannot encode: 422 naming the cause, no run
    listed, no step ran; a start it can encode runs."""
    log = tmp_path / "log.txt"
    db = tmp_path / "runs.db"
    app = create_app(
        {"slow": flows.SlowAnswerFlow(timeout=None, serializer=NoTabsSerializer())},
        store=RunStore(db),
        checkpoints=SqliteCheckpointStore(db),
    )
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=20) as c:
        started = c.post("/workflows/slow/runs", json={"log": str(log), "note": "a\tb"})
        assert started.status_code == 422, started.text
        assert "Cannot serialize a tab" in started.json()["detail"]
        assert started.json()["cause"] == "SerializationError"
        assert c.get("/runs").json()["runs"] == []
        assert not log.exists()
        fine = c.post("/workflows/slow/runs", json={"log": str(log), "note": "ab"})
        assert fine.status_code == 202
        wait_status(c, fine.json()["run_id"], {"waiting"})
    assert log.read_text() == "asked\n"


def test_start_fields_nested_too_deeply_are_refused_before_anything_runs() -> None:
    """Fields too deep to record (called in Python, no HTTP body limit) raise; nothing runs."""
    import asyncio

    from batonflow.core import InMemoryCheckpointStore, WorkflowCheckpointer

    deep: dict = {"leaf": 1}
    for _ in range(2000):
        deep = {"n": deep}

    async def main() -> None:
        store = InMemoryCheckpointStore()
        cptr = WorkflowCheckpointer(flows.EchoFlow(), store=store)
        with pytest.raises(SerializationError, match="nested too deeply"):
            cptr.run(deep=deep)
        await asyncio.sleep(0.05)
        assert store.runs() == []

    asyncio.run(main())


def test_concurrent_answers_one_wins_the_others_get_409(client: httpx.Client) -> None:
    """Ten answers sent at once to one waiting run: one 202, nine 409, one answering step."""
    run_id = client.post("/workflows/approval/runs", json={"topic": "race"}).json()["run_id"]
    wait_status(client, run_id, {"waiting"})
    codes: list[int] = []
    barrier = threading.Barrier(10)

    def answer(i: int) -> None:
        with httpx.Client(base_url=str(client.base_url), timeout=20) as own:
            barrier.wait()
            body = {"type": "HumanResponseEvent", "data": {"response": f"a{i}"}}
            codes.append(own.post(f"/runs/{run_id}/events", json=body).status_code)

    threads = [threading.Thread(target=answer, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(codes) == [202] + [409] * 9
    done = wait_status(client, run_id, {"completed"})
    assert done["result"].startswith("race: a")
    later = client.post(
        f"/runs/{run_id}/events", json={"type": "HumanResponseEvent", "data": {"response": "x"}}
    )
    assert later.status_code == 409 and "is completed" in later.json()["detail"]


@pytest.mark.slow
def test_an_accepted_answer_survives_a_kill_before_it_is_used(tmp_path: Path) -> None:
    """202 then SIGKILL while the answering step runs: the restarted server finishes the run
    with that answer, without asking again."""
    db = tmp_path / "runs.db"
    log = tmp_path / "log.txt"
    server = ServerProcess(db)
    c = server.client
    run_id = c.post("/workflows/slowanswer/runs", json={"log": str(log), "delay": 1.5}).json()[
        "run_id"
    ]
    wait_status(c, run_id, {"waiting"})
    sent = c.post(
        f"/runs/{run_id}/events", json={"type": "HumanResponseEvent", "data": {"response": "go"}}
    )
    assert sent.status_code == 202, sent.text
    server.kill()  # the answering step is sleeping
    server = ServerProcess(db)
    try:
        done = wait_status(server.client, run_id, {"completed", "failed"}, timeout=30)
        assert done["status"] == "completed" and done["result"] == "answer: go", done
        assert log.read_text() == "asked\n"  # the question was not asked again
        types = [m["data"].get("type") for m in read_sse(server.client, f"/runs/{run_id}/events")]
        assert types.count("InputRequiredEvent") == 1, types
    finally:
        server.kill()


def test_full_disk_is_a_507_nothing_runs_and_it_works_once_space_is_back(
    full_disk: Disk,
) -> None:
    """A start on a full disk: 507 with the cause, no run; after freeing space it runs."""
    db = full_disk.path / "runs.db"
    log = full_disk.path.parent / "log.txt"
    store = SqliteCheckpointStore(db)
    app = create_app(
        {"slow": flows.SlowAnswerFlow(timeout=None)}, store=RunStore(db), checkpoints=store
    )
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=20) as c:
        full_disk.fill()
        body = {"log": str(log), "delay": 0.0, "pad": "x" * 20000}
        full = c.post("/workflows/slow/runs", json=body)
        assert full.status_code == 507, full.text
        assert full.json()["cause"] == "StoreFullError"
        fix = "Free space" if full_disk.mechanism == "tmpfs" else "file-size limit"
        assert "is full" in full.json()["detail"] and fix in full.json()["detail"]
        assert not log.exists()
        full_disk.free()
        ok = c.post("/workflows/slow/runs", json=body)
        assert ok.status_code == 202, ok.text
        run_id = ok.json()["run_id"]
        wait_status(c, run_id, {"waiting"})
        sent = c.post(
            f"/runs/{run_id}/events",
            json={"type": "HumanResponseEvent", "data": {"response": "y"}},
        )
        assert sent.status_code == 202
        assert wait_status(c, run_id, {"completed"})["result"] == "answer: y"
        assert json.loads(json.dumps(c.get("/runs").json()))["runs"][0]["run_id"] == run_id


def test_a_run_whose_end_is_not_written_stays_resumable_and_ends_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A run's ended status and its ``end`` entry are one write. When that write does not
    commit (the database refuses it here, as a kill at that moment would), the run is still
    in progress, never ended without an end for its readers; the next server ends it once."""
    import sqlite3
    import time

    db = tmp_path / "runs.db"
    SqliteCheckpointStore(db).close()  # the schema
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TRIGGER refuse_end BEFORE INSERT ON run_events WHEN NEW.kind = 'end' "
            "BEGIN SELECT RAISE(ABORT, 'the process died here'); END"
        )
    store = SqliteCheckpointStore(db)
    app = create_app({"echo": flows.EchoFlow()}, checkpoints=store)
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=20) as c:
        run_id = c.post("/workflows/echo/runs", json={"x": 1}).json()["run_id"]
        deadline = time.monotonic() + 15
        while "the store refused it" not in caplog.text:
            assert time.monotonic() < deadline, caplog.text
            time.sleep(0.02)
        assert c.get(f"/runs/{run_id}").json()["status"] == "running"
    store.close()
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER refuse_end")
    store = SqliteCheckpointStore(db)
    app = create_app({"echo": flows.EchoFlow()}, checkpoints=store)
    try:
        with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=20) as c:
            done = wait_status(c, run_id, {"completed", "failed"})
            assert done["status"] == "completed" and done["result"] == {"x": 1}, done
            ends = [m for m in read_sse(c, f"/runs/{run_id}/events") if m["event"] == "end"]
            assert len(ends) == 1 and ends[0]["data"]["status"] == "completed"
    finally:
        store.close()


def test_cancelling_a_run_another_process_runs_says_so(tmp_path: Path) -> None:
    """A run in progress in a `batonflow run` process on the same store is not this server's
    to cancel: the 409 says where it runs, not that it is not in progress."""
    import time

    from batonflow.core.durable._records import RunRecord

    store = SqliteCheckpointStore(tmp_path / "runs.db")
    now = time.time()
    store.create_run(
        RunRecord("cli-run", "echo", "running", now, now, owner="cli", pid=os.getpid())
    )
    app = create_app({"echo": flows.EchoFlow()}, checkpoints=store)
    try:
        with BackgroundServer(app) as server, httpx.Client(base_url=server.url) as c:
            refused = c.post("/runs/cli-run/cancel")
            assert refused.status_code == 409
            assert "in another process" in refused.json()["detail"], refused.text
            assert c.get("/runs/cli-run").json()["status"] == "running"
    finally:
        store.close()
