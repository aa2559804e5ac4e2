"""A SQLite file of version 5 (before the run queue) opens at the current version with it."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from batonflow.core import RunLimits, SqliteCheckpointStore
from batonflow.core.durable._queue import QueueEntry
from batonflow.core.durable._records import RunRecord
from batonflow.core.durable._sqlite_store import SCHEMA_VERSION


def test_a_version_5_file_gets_the_queue(tmp_path: Path) -> None:
    """Its runs stay, and runs can be queued and claimed once it is opened."""
    path = tmp_path / "runs.db"
    now = time.time()
    with SqliteCheckpointStore(path) as store:
        store.create_run(RunRecord("old", "wf", "completed", now, now))
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE run_queue")
    conn.execute("UPDATE schema_version SET version = 5")
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
