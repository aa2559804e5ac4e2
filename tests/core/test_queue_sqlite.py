"""The run queue on SQLite files: a version-6 file migrated, stores on one file racing claims."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from batonflow.core import RunLimits, SqliteCheckpointStore
from batonflow.core.durable._queue import QueueEntry
from batonflow.core.durable._records import RunRecord
from batonflow.core.durable._sqlite_store import SCHEMA_VERSION


def test_a_version_6_file_gets_the_queue(tmp_path: Path) -> None:
    """Its runs stay, and runs can be queued and claimed once it is opened."""
    path = tmp_path / "runs.db"
    now = time.time()
    with SqliteCheckpointStore(path) as store:
        store.create_run(RunRecord("old", "wf", "completed", now, now))
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE run_queue")
    conn.execute("UPDATE schema_version SET version = 6")
    conn.commit()
    conn.close()
    with SqliteCheckpointStore(path) as store:
        store.enqueue(RunRecord("new", "wf", "queued", now, now), QueueEntry(), None)
        claimed = store.claim_queued("wf", RunLimits(concurrency=1), 1)
        assert [r.run_id for r in claimed] == ["new"]
        assert store.run("old").status == "completed"
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()


def test_stores_on_one_file_racing_claims_never_exceed_the_limit(tmp_path: Path) -> None:
    """Three stores on one SQLite file (three processes' connections) claim 200 queued runs
    at once: the runs counted running never pass the limit, and each run is claimed once."""

    path = tmp_path / "runs.db"
    now = time.time()
    stores = [SqliteCheckpointStore(path) for _ in range(3)]
    for i in range(200):
        record = RunRecord(f"r{i:03}", "wf", "queued", now + i, now + i)
        stores[i % 3].enqueue(record, QueueEntry(), None)
    limits = RunLimits(concurrency=4)
    claimed: list[str] = []
    most = [0]
    queued = [0]
    lock = threading.Lock()
    reader = sqlite3.connect(path, check_same_thread=False)

    def claimer(store: SqliteCheckpointStore) -> None:
        while True:
            got = store.claim_queued("wf", limits, 2)
            with lock:
                claimed.extend(r.run_id for r in got)
                counts = dict(
                    reader.execute(
                        "SELECT status, COUNT(*) FROM checkpoint_runs GROUP BY status"
                    ).fetchall()
                )
                most[0] = max(most[0], counts.get("running", 0))
                queued[0] = max(queued[0], counts.get("queued", 0))
                if len(claimed) == 200:
                    return
            for r in got:
                store.finish_run(r.run_id, "completed")
            if not got:
                time.sleep(0.001)
                with lock:
                    if len(claimed) == 200:
                        return

    threads = [threading.Thread(target=claimer, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    reader.close()
    for s in stores:
        s.close()
    assert sorted(claimed) == [f"r{i:03}" for i in range(200)]
    assert most[0] <= 4
    assert queued[0] >= 190  # counted while the runs waited queued
