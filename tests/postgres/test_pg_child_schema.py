"""Schema version 12 of the PostgreSQL run store: a run's parent step and kind (child runs)."""

from __future__ import annotations

import time

import psycopg
from batonflow.core.durable._records import RunRecord
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres._sql import SCHEMA_VERSION


def test_a_version_11_database_gets_the_parent_columns(postgres_url: str) -> None:
    """Version 11 to 12: the old run reads with no parent kind; a child keeps its link."""
    now = time.time()
    with PostgresCheckpointStore(postgres_url) as store:
        store.create_run(RunRecord("old", "Flow", "completed", now, now))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for column in ("parent_step", "parent_kind"):
            conn.execute(f"ALTER TABLE checkpoint_runs DROP COLUMN {column}")
        conn.execute("UPDATE batonflow_schema SET version = 11")
    with PostgresCheckpointStore(postgres_url) as store:
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
        assert [r.run_id for r in store.children("old")] == ["kid"]
        assert store.run("kid").parent_step == "s"
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM batonflow_schema").fetchone() == (SCHEMA_VERSION,)
