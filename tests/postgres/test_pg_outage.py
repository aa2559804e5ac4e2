"""PostgresCheckpointStore through a database outage: a server of its own, restarted.

Calls made while the server restarts fail fast with ``StoreUnreachableError`` (its
``retry_after`` says when to try again) and succeed once it is back; errors that are not about
reachability are not retried; once ``outage_seconds`` have passed the error gives up.
"""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from batonflow.core.durable._records import Checkpoint, RunRecord
from batonflow.core.errors import CheckpointError, StoreUnreachableError
from batonflow.postgres import PostgresCheckpointStore
from pg_server import PostgresServer, kill_postmaster, restart_fast, running_server, start_server


@pytest.fixture(scope="module")
def own_server():
    """A server these tests may restart and kill (the session's is shared)."""
    with running_server(synchronous_commit=True) as server:
        yield server


@pytest.fixture
def store(own_server: PostgresServer):
    with psycopg.connect(own_server.url(), autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS outage WITH (FORCE)")
        conn.execute("CREATE DATABASE outage")
    store = PostgresCheckpointStore(own_server.url("outage"), min_size=2)
    yield store
    store.close()


def _until_reachable(call, deadline: float = 60.0, *, gave_up: bool = False):
    """``call()``, tried again after each ``retry_after`` until it works; and how many times
    it reported the outage. ``gave_up``: the budget may be spent (no ``retry_after``)."""
    end = time.monotonic() + deadline
    refused = 0
    while True:
        try:
            return call(), refused
        except StoreUnreachableError as exc:
            assert gave_up or exc.retry_after is not None, exc
            assert time.monotonic() < end, f"still unreachable: {exc}"
            refused += 1
            time.sleep(exc.retry_after or 0.1)


def _checkpoint(run_id: str, seq: int) -> Checkpoint:
    return Checkpoint(
        f"{run_id}:{seq}", run_id, "Flow", "s", None, (), time.time(), {"n": seq}, seq
    )


@pytest.mark.parametrize(
    "outage",
    [
        pytest.param(lambda server: restart_fast(server), id="restart-fast"),
        pytest.param(
            lambda server: (kill_postmaster(server), time.sleep(1.0), start_server(server)),
            id="postmaster-killed",
        ),
    ],
)
def test_calls_during_a_restart_succeed_after_it(store, own_server, outage):
    """Writes and reads issued while the server restarts all land once it is back."""
    now = time.time()
    store.create_run(RunRecord("r1", "Flow", "running", now, now))
    store.put(_checkpoint("r1", 1))
    thread = threading.Thread(target=outage, args=(own_server,))
    thread.start()
    seq = 2
    seen_outage = 0
    while thread.is_alive() or seq < 6:
        _, refused = _until_reachable(lambda s=seq: store.put(_checkpoint("r1", s)))
        _, more = _until_reachable(lambda s=seq: store.append_event("r1", "event", f'"e{s}"'))
        seen_outage += refused + more
        seq += 1
    thread.join()
    assert [c.seq for c in store.list("r1")] == list(range(1, seq))
    assert [e.body for e in store.events("r1")] == [f'"e{n}"' for n in range(2, seq)]
    assert seen_outage, "no call met the outage: the test proved nothing"


def test_an_error_that_is_not_about_reachability_is_not_retried(store):
    """A unique violation (a checkpoint taken) fails at once, as a plain CheckpointError."""
    now = time.time()
    store.create_run(RunRecord("r2", "Flow", "running", now, now))
    store.put(_checkpoint("r2", 1))
    other = Checkpoint("other", "r2", "Flow", "s", None, (), time.time(), {}, 1)
    with pytest.raises(CheckpointError) as info:
        store.put(other)
    assert not isinstance(info.value, StoreUnreachableError)


def test_the_budget_ends_with_a_clear_error(own_server):
    """Past outage_seconds the error gives up (no retry_after) and says what to do."""
    with psycopg.connect(own_server.url(), autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS budget WITH (FORCE)")
        conn.execute("CREATE DATABASE budget")
    store = PostgresCheckpointStore(own_server.url("budget"), outage_seconds=1.0)
    try:
        store.runs()
        kill_postmaster(own_server)
        try:
            deadline = time.monotonic() + 30
            while True:
                with pytest.raises(StoreUnreachableError) as info:
                    store.runs()
                if info.value.retry_after is None:
                    break
                assert time.monotonic() < deadline
                time.sleep(info.value.retry_after)
            assert "has been unreachable for" in str(info.value)
            assert "outage_seconds=1" in str(info.value)
            assert str(info.value).endswith("BATONFLOW_OUTAGE_SECONDS).")
        finally:
            start_server(own_server)
        rows, _ = _until_reachable(store.runs, gave_up=True)
        assert rows == []
    finally:
        store.close()
