"""Schedules in the run store: stored, listed, removed, and each firing claimed exactly once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from batonflow.core.checkpoints import InMemoryCheckpointStore, SqliteCheckpointStore
from batonflow.core.durable._schedules import (
    Firing,
    ScheduleExistsError,
    ScheduleRecord,
    ScheduleStore,
)
from batonflow.core.durable._sqlite_store import SCHEMA_VERSION
from firing_race import race_for_firings


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    if request.param == "memory":
        yield InMemoryCheckpointStore()
    else:
        with SqliteCheckpointStore(tmp_path / "runs.db") as s:
            yield s


def _nightly(name: str = "nightly") -> ScheduleRecord:
    return ScheduleRecord(name, "report", "0 3 * * *", {"topic": "x", "n": [1]}, "once", 100.0)


def test_a_schedule_is_stored_listed_and_removed(store) -> None:
    """add_schedule keeps every field; schedules() lists by name; remove_schedule forgets it."""
    assert isinstance(store, ScheduleStore)
    store.add_schedule(_nightly("b"))
    store.add_schedule(_nightly("a"))
    assert store.schedules() == [_nightly("a"), _nightly("b")]
    assert store.remove_schedule("a") is True
    assert store.remove_schedule("a") is False
    assert [s.name for s in store.schedules()] == ["b"]


def test_adding_a_taken_name_is_refused(store) -> None:
    """A second schedule of the same name is an error naming it and the way out."""
    store.add_schedule(_nightly())
    other = ScheduleRecord("nightly", "other", "* * * * *", {}, "skip", 200.0)
    with pytest.raises(ScheduleExistsError, match=r"'nightly' exists already; remove it first"):
        store.add_schedule(other)
    assert store.schedules() == [_nightly()]


def test_a_firing_is_claimed_once_and_links_its_run(store) -> None:
    """The first claimant of (schedule, time) holds it; the run it links is found by id."""
    assert store.claim_firing("nightly", 1000, "a") is True
    assert store.claim_firing("nightly", 1000, "b") is False
    assert store.claim_firing("nightly", 1000, "a") is True  # asked again: still a's
    assert store.claim_firing("nightly", 2000, "b") is True
    store.link_firing("nightly", 1000, "run-1")
    assert store.firings(schedule="nightly") == [
        Firing("nightly", 1000, "run-1"),
        Firing("nightly", 2000, None),
    ]
    assert store.firings(run_ids=["run-1", "other"]) == [Firing("nightly", 1000, "run-1")]
    assert store.firings(run_ids=[]) == []


def test_two_sqlite_stores_on_one_file_racing_claim_each_firing_once(tmp_path: Path) -> None:
    """Eight threads on two stores of one file race for the same 20 firings: one winner each."""
    path = tmp_path / "runs.db"
    stores = [SqliteCheckpointStore(path), SqliteCheckpointStore(path)]
    won = race_for_firings(stores, threads=8, firings=20, schedule="every")
    for s in stores:
        s.close()
    assert sorted(at for at, _ in won) == list(range(20))


def test_a_version_3_file_gets_the_schedule_tables(tmp_path: Path) -> None:
    """A file written before schedules (version 3) opens at the current version with them."""
    path = tmp_path / "runs.db"
    SqliteCheckpointStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE schedules")
    conn.execute("DROP TABLE schedule_firings")
    conn.execute("UPDATE schema_version SET version = 3")
    conn.commit()
    conn.close()
    with SqliteCheckpointStore(path) as store:
        store.add_schedule(_nightly())
        assert store.schedules() == [_nightly()]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()
