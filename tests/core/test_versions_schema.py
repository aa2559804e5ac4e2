"""The run's version column: a SQLite file of schema version 5 is migrated to 6, and its runs,
recorded before versions, are checked by their checkpoints."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from batonflow.core import IncompatibleRunError, SqliteCheckpointStore, WorkflowCheckpointer
from batonflow.core.durable._sqlite_store import SCHEMA_VERSION
from versioned_flows import CALLS, answer, make_flow, park


def _as_version_5(path: Path) -> None:
    """Make the file at ``path`` what schema version 5 wrote: no workflow_version column."""
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE checkpoint_runs DROP COLUMN workflow_version")
    conn.execute("UPDATE schema_version SET version = 5")
    conn.commit()
    conn.close()


async def test_a_version_5_file_gets_the_version_column(tmp_path: Path) -> None:
    """Runs of a version-5 file keep going after the migration: one the new code can
    continue completes, one it cannot is refused; new runs record their version."""
    path = tmp_path / "runs.db"
    with SqliteCheckpointStore(path) as store:
        old = WorkflowCheckpointer(make_flow()(), store=store)
        fits, breaks = await park(old), await park(old)
    _as_version_5(path)
    with SqliteCheckpointStore(path) as store:
        record = store.run(fits)
        assert record is not None and record.workflow_version is None
        same = WorkflowCheckpointer(make_flow()(), store=store)
        assert same.check(fits).ok  # no version recorded: its checkpoint says it fits
        assert await answer(same, fits, "ok") == "ok"
        renamed = WorkflowCheckpointer(make_flow(second="dispatch")(), store=store)
        CALLS.clear()
        with pytest.raises(IncompatibleRunError, match="step 'ship'"):
            renamed.resume(breaks)
        assert CALLS == []
        new_run = await park(renamed)
        record = store.run(new_run)
        assert record is not None and record.workflow_version == renamed.workflow.version
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()
