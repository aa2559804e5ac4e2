"""Fixtures of the core tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from batonflow.core.checkpoints import CheckpointStore, InMemoryCheckpointStore
from batonflow.core.stores import open_store


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path) -> Iterator[CheckpointStore]:
    """A fresh, empty run store of each backend (PostgreSQL on tests/pg_server.py's server)."""
    if request.param == "memory":
        s: CheckpointStore = InMemoryCheckpointStore()
    elif request.param == "sqlite":
        s = open_store(tmp_path / "runs.db")
    else:
        s = open_store(request.getfixturevalue("postgres_url"))
    yield s
    s.close()
