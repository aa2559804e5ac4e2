"""Schema version 9 of the SQLite run store: a run's parent step and parent kind (child runs).

A file of version 8 (without the two columns) opens as version 9; its runs stay readable and
a child run recorded in it keeps its parent link."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from batonflow.core.durable._records import RunRecord
from batonflow.core.durable._sqlite_store import SCHEMA_VERSION
from batonflow.core.stores import open_store


def test_a_version_8_sqlite_file_gets_the_parent_columns(tmp_path: Path) -> None:
    """Version 8 to 9: the old run reads with no parent kind; a child keeps its link."""
    path = tmp_path / "runs.db"
    now = time.time()
    with open_store(path) as store:
        store.create_run(RunRecord("old", "Flow", "completed", now, now))
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        ALTER TABLE checkpoint_runs DROP COLUMN parent_step;
        ALTER TABLE checkpoint_runs DROP COLUMN parent_kind;
        UPDATE schema_version SET version = 8;
        """
    )
    conn.close()
    with open_store(path) as store:
        assert store.run("old").parent_kind is None
        child = RunRecord(
            "kid",
            "Child",
            "running",
            now,
            now,
            parent_run_id="old",
            parent_step="s",
            parent_kind="child",
        )
        store.create_run(child)
        assert store.children("old") == [child]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()
