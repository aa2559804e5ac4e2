"""Idempotent starts through WorkflowCheckpointer: one run per key, on every backend.

In memory, SQLite and PostgreSQL alike: a start given a key that started a run already is
refused with ``DuplicateStartError`` naming that run, also when several stores race on the
key from threads; a key reused for another start is an ``IdempotencyKeyError``; a deleted run
frees its key; stores of the previous schema version get the key's column and index.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from pathlib import Path

import pytest
from batonflow.core import (
    DuplicateStartError,
    IdempotencyKeyError,
    InMemoryCheckpointStore,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowCheckpointer,
    step,
)
from batonflow.core.durable._records import RunRecord
from batonflow.core.durable._sqlite_store import SCHEMA_VERSION
from batonflow.core.errors import RunConflictError
from batonflow.core.stores import open_store


class Echo(Workflow):
    """Returns its start field ``text``."""

    @step
    async def echo(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=ev.text)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_at(request, tmp_path):
    """Opens stores of one backend on one place (one database shared by all it opens)."""
    if request.param == "postgres":
        where = request.getfixturevalue("postgres_url")
    else:
        where = str(tmp_path / "runs.db")
    memory = InMemoryCheckpointStore()
    opened = []

    def open_one():
        store = memory if request.param == "memory" else open_store(where)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()


async def test_a_key_starts_one_run(store_at):
    """The same start sent twice with one key starts one run; the second names it."""
    cptr = WorkflowCheckpointer(Echo(), store=store_at())
    handler = cptr.start(text="hi", idempotency_key="order-17")
    with pytest.raises(DuplicateStartError, match=r"key 'order-17' started run \w+ already") as e:
        cptr.start(text="hi", idempotency_key="order-17")
    assert e.value.run_id == handler.run_id and e.value.handler is handler
    assert await handler == "hi"
    with pytest.raises(DuplicateStartError) as again:
        cptr.start(text="hi", idempotency_key="order-17")
    assert again.value.handler is None  # it ended: its record is the answer
    assert again.value.record.status == "completed"
    assert again.value.record.idempotency_key == "order-17"
    assert [r.run_id for r in cptr.store.runs()] == [handler.run_id]


async def test_a_key_reused_for_another_start_is_refused(store_at):
    """A key names one start: other start fields under it are an IdempotencyKeyError."""
    cptr = WorkflowCheckpointer(Echo(), store=store_at())
    first = cptr.start(text="hi", idempotency_key="k")
    with pytest.raises(
        IdempotencyKeyError,
        match=r"key 'k' started run \w+ of other start fields; .* Send this start with a new key",
    ):
        cptr.start(text="other", idempotency_key="k")
    await first
    assert len(cptr.store.runs()) == 1


async def test_a_deleted_run_frees_its_key(store_at):
    """The key holds for as long as its run is kept."""
    cptr = WorkflowCheckpointer(Echo(), store=store_at())
    first = cptr.start(text="hi", idempotency_key="k")
    await first
    cptr.store.delete(first.run_id)
    second = cptr.start(text="hi", idempotency_key="k")
    assert second.run_id != first.run_id
    assert await second == "hi"


@pytest.mark.parametrize(
    ("key", "named"),
    [
        pytest.param("", "empty", id="empty"),
        pytest.param("k" * 256, "256 characters long", id="long"),
        pytest.param("a\x00b", "a NUL character", id="nul"),
        pytest.param(17, "is a int", id="number"),
    ],
)
async def test_a_bad_key_is_refused_before_anything_is_recorded(key, named):
    """A key that is not 1 to 255 characters of text is a ValueError; nothing is recorded."""
    cptr = WorkflowCheckpointer(Echo())
    with pytest.raises(ValueError, match=named):
        cptr.start(text="hi", idempotency_key=key)
    assert cptr.store.runs() == []


def test_stores_racing_on_one_key_record_one_run(store_at):
    """Eight stores (eight processes' connections) creating runs with one key at once: the
    store's unique key lets exactly one through."""
    stores = [store_at() for _ in range(8)]
    barrier = threading.Barrier(len(stores))
    won: list[str] = []
    refused: list[BaseException] = []

    def create(store) -> None:
        now = time.time()
        record = RunRecord(uuid.uuid4().hex, "Echo", "running", now, now, idempotency_key="k")
        barrier.wait()
        try:
            store.create_run(record)
            won.append(record.run_id)
        except RunConflictError as exc:
            refused.append(exc)

    threads = [threading.Thread(target=create, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(won) == 1 and len(refused) == 7
    assert all("idempotency key 'k' exists already" in str(e) for e in refused)
    assert stores[0].run_for_key("k").run_id == won[0]


async def test_a_version_3_sqlite_file_gets_the_key(tmp_path: Path):
    """A file of schema version 3 (no key or parent columns) opens as version 4 and keeps one
    run per key; its runs stay readable."""
    path = tmp_path / "runs.db"
    with open_store(path) as store:
        WorkflowCheckpointer(Echo(), store=store).start(text="old")
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        DROP INDEX checkpoint_runs_by_idempotency_key;
        DROP INDEX checkpoint_runs_by_parent;
        ALTER TABLE checkpoint_runs DROP COLUMN idempotency_key;
        ALTER TABLE checkpoint_runs DROP COLUMN parent_run_id;
        ALTER TABLE checkpoint_runs DROP COLUMN parent_seq;
        UPDATE schema_version SET version = 3;
        """
    )
    conn.close()
    with open_store(path) as store:
        assert [(r.idempotency_key, r.parent_run_id) for r in store.runs()] == [(None, None)]
        cptr = WorkflowCheckpointer(Echo(), store=store)
        handler = cptr.start(text="new", idempotency_key="k")
        with pytest.raises(DuplicateStartError):
            cptr.start(text="new", idempotency_key="k")
        assert await handler == "new"
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()
