"""Leases across a database restart: a replica is not taken for dead because nobody could
renew anything while PostgreSQL was down.

A replica renews its leases every third of the lease; a restart that outlasts the lease lets
them all expire at once, so without a grace the first replica whose heartbeat comes after the
restart would take over every other replica's runs, and their steps in flight would run twice.
After a restart every holder gets one lease length to renew before its runs count as expired.
"""

from __future__ import annotations

import time
import uuid

import psycopg
import pytest
from batonflow.core.durable._records import RunRecord
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres._sql import SCHEMA_VERSION
from pg_server import PostgresServer, restart_fast, running_server

LEASE = 4.0


@pytest.fixture(scope="module")
def own_server():
    """A server these tests may restart (the session's is shared)."""
    with running_server(synchronous_commit=True) as server:
        yield server


@pytest.fixture
def url(own_server: PostgresServer) -> str:
    with psycopg.connect(own_server.url(), autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS leases WITH (FORCE)")
        conn.execute("CREATE DATABASE leases")
    return own_server.url("leases")


def _runs(store: PostgresCheckpointStore, count: int) -> list[str]:
    ids = [uuid.uuid4().hex for _ in range(count)]
    now = time.time()
    for run_id in ids:
        store.create_run(RunRecord(run_id, "Flow", "running", now, now, owner="server"))
    return ids


def _claim(store: PostgresCheckpointStore) -> list[str]:
    """claim_expired, asked again while the store reports the restart."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return sorted(r.run_id for r in store.claim_expired())
        except Exception:
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_leases_that_expired_in_a_restart_are_not_taken_until_their_holder_had_a_lease(
    own_server, url
):
    """Right after a restart longer than the lease nothing is claimed; a holder that renews
    within a lease keeps its runs; one that does not renew loses them after that lease."""
    a = PostgresCheckpointStore(url, replica_id="a", lease_seconds=LEASE)
    b = PostgresCheckpointStore(url, replica_id="b", lease_seconds=LEASE)
    c = PostgresCheckpointStore(url, replica_id="c", lease_seconds=LEASE)
    try:
        kept = _runs(a, 3)
        lost = _runs(b, 2)
        until = max(a.lease_of(run_id)[1] or 0 for run_id in kept + lost)  # seconds left
        time.sleep(max(until - LEASE / 4, 0))
        restart_fast(own_server)
        started = _server_seconds(url, "EXTRACT(EPOCH FROM pg_postmaster_start_time())")
        # Every lease ran out while nobody could renew (the restart came just before).
        deadline = time.monotonic() + 30
        while not all((_lease_left(a, run_id)) < 0 for run_id in kept + lost):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # A's heartbeat comes first after the restart (it renews), C's claim right after:
        # C finds nothing, though all five leases are past their end.
        assert sorted(_renewed(a)) == sorted(kept)
        assert _claim(c) == []
        assert _server_seconds(url, "EXTRACT(EPOCH FROM clock_timestamp())") < started + LEASE
        # B did not renew within a lease of the restart: its runs are C's now; A's are not.
        while _server_seconds(url, "EXTRACT(EPOCH FROM clock_timestamp())") < started + LEASE:
            time.sleep(0.1)
        assert _claim(c) == sorted(lost)
        assert {a.lease_of(run_id)[0] for run_id in kept} == {"a"}
    finally:
        a.close()
        b.close()
        c.close()


def _renewed(store: PostgresCheckpointStore) -> list[str]:
    deadline = time.monotonic() + 30
    while True:
        try:
            return store.renew_leases()
        except Exception:
            assert time.monotonic() < deadline
            time.sleep(0.1)


def _server_seconds(url: str, expression: str) -> float:
    """A time on the database server's clock (the one leases are measured by)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                return float(conn.execute(f"SELECT {expression}").fetchone()[0])
        except psycopg.OperationalError:
            assert time.monotonic() < deadline
            time.sleep(0.1)


def _lease_left(store: PostgresCheckpointStore, run_id: str) -> float:
    deadline = time.monotonic() + 30
    while True:
        try:
            return store.lease_of(run_id)[1] or 0.0
        except Exception:
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_a_lease_granted_after_the_restart_has_no_grace(own_server, url):
    """The grace is for leases a restart kept from being renewed: one granted (with a short
    lease) after the server started runs out as usual, however recent the restart."""
    restart_fast(own_server)
    a = PostgresCheckpointStore(url, replica_id="a", lease_seconds=0.2)
    c = PostgresCheckpointStore(url, replica_id="c", lease_seconds=LEASE)
    try:
        runs = _runs(a, 2)
        deadline = time.monotonic() + 30
        while not all(_lease_left(a, run_id) < 0 for run_id in runs):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        started = _server_seconds(url, "EXTRACT(EPOCH FROM pg_postmaster_start_time())")
        assert _server_seconds(url, "EXTRACT(EPOCH FROM clock_timestamp())") < started + LEASE
        assert _claim(c) == sorted(runs)
    finally:
        a.close()
        c.close()


def test_a_version_5_database_is_migrated_to_lease_times(own_server, url):
    """A version-5 database (no lease_since) gets the column; its old leases run out as
    before (no grace), new ones are timed."""
    a = PostgresCheckpointStore(url, replica_id="a", lease_seconds=0.2)
    (old,) = _runs(a, 1)
    a.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE checkpoint_runs DROP COLUMN lease_since")
        conn.execute("UPDATE batonflow_schema SET version = 5")
    c = PostgresCheckpointStore(url, replica_id="c", lease_seconds=LEASE)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SELECT version FROM batonflow_schema").fetchone() == (
                SCHEMA_VERSION,
            )
        time.sleep(0.3)
        assert _claim(c) == [old]
        with psycopg.connect(url, autocommit=True) as conn:
            since, until = conn.execute(
                "SELECT lease_since, lease_until FROM checkpoint_runs WHERE run_id = %s", (old,)
            ).fetchone()
        assert since is not None and until - since == pytest.approx(LEASE)
    finally:
        c.close()
