"""A server with no free connection slot: a replica waits for one, then says what to do.

Many replicas on one database can take every connection the server (``max_connections``) or
the replicas' role (``CONNECTION LIMIT``) allows. The server then refuses a new connection at
start-up with "too many clients" or "too many connections for role". A starting store waits
for a slot (another replica may be closing) up to its ``connect_timeout``, then fails naming
the full server and the settings to change, not "check that the server runs". A replica's
``LISTEN`` connection refused that way says so, and listens once a slot is free. Here the
role's ``CONNECTION LIMIT`` is 2 and the test holds both slots.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from batonflow.core.durable._records import RunRecord
from batonflow.core.errors import CheckpointError
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres.leases import Replication


@dataclass
class Limited:
    """A role allowed two connections, its database, and what the server logs."""

    url: str
    role: str
    server: object

    def refusals(self) -> int:
        """How often the server has refused the role a connection so far."""
        log = self.server.log.read_text(errors="replace")  # type: ignore[attr-defined]
        return log.count(f'too many connections for role "{self.role}"')

    def hold(self, count: int = 2) -> list[psycopg.Connection]:
        """Take ``count`` of the role's slots."""
        return [psycopg.connect(self.url) for _ in range(count)]

    def release_after_refusal(self, held: list[psycopg.Connection]) -> threading.Thread:
        """Close ``held`` once the server refused the role one more connection."""
        before = self.refusals()

        def release() -> None:
            deadline = time.monotonic() + 60
            while self.refusals() == before and time.monotonic() < deadline:
                time.sleep(0.02)
            for conn in held:
                conn.close()

        thread = threading.Thread(target=release, daemon=True)
        thread.start()
        return thread


@pytest.fixture
def limited(postgres_server) -> Iterator[Limited]:
    """A role with ``CONNECTION LIMIT 2`` owning a fresh database."""
    name = "bf_lim_" + uuid.uuid4().hex[:10]
    admin = postgres_server.url()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{name}" LOGIN CONNECTION LIMIT 2')  # type: ignore[call-overload]
        conn.execute(f'CREATE DATABASE "{name}" OWNER "{name}"')  # type: ignore[call-overload]
    host, port = postgres_server.host, postgres_server.port
    try:
        yield Limited(f"postgresql://{name}@{host}:{port}/{name}", name, postgres_server)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[call-overload]
            conn.execute(f'DROP ROLE IF EXISTS "{name}"')  # type: ignore[call-overload]


def _record(run_id: str) -> RunRecord:
    now = time.time()
    return RunRecord(run_id, "Flow", "running", now, now, owner="server")


def test_a_starting_store_waits_for_a_free_slot(limited):
    """A store opened while every slot is taken waits, and opens once one is free."""
    held = limited.hold()
    releaser = limited.release_after_refusal(held)
    store = PostgresCheckpointStore(limited.url, replica_id="late", max_size=1, connect_timeout=60)
    try:
        store.create_run(_record("r1"))
        assert store.run("r1").status == "running"
    finally:
        store.close()
        releaser.join(5)


def test_a_full_server_is_named_with_the_settings_to_change(limited):
    """Past connect_timeout, the error names the full server and what to change."""
    held = limited.hold()
    try:
        with pytest.raises(CheckpointError) as caught:
            PostgresCheckpointStore(limited.url, replica_id="late", connect_timeout=1)
    finally:
        for conn in held:
            conn.close()
    message = str(caught.value)
    assert "had no free connection for 1 s" in message
    assert f'too many connections for role "{limited.role}"' in message
    assert message.endswith(
        "each replica opens up to 9 connections (a pool of 8 and one to LISTEN): raise the "
        "server's max_connections (or the role's or the database's CONNECTION LIMIT), or run "
        "fewer replicas on this database."
    )
    assert "check that the server runs" not in message


async def test_a_refused_listen_connection_says_why_and_listens_later(limited, caplog):
    """A replica whose LISTEN connection finds no free slot logs why, then listens."""
    store = PostgresCheckpointStore(limited.url, replica_id="crowded", max_size=1)
    held = limited.hold(1)  # with the store's one connection, the role's two slots
    releaser = limited.release_after_refusal(held)
    replication = Replication(store, on_takeover=lambda record: None, interval=60)
    caplog.set_level(logging.WARNING, logger="batonflow.postgres")
    try:
        await replication.start()
        await asyncio.wait_for(replication.listening.wait(), 60)
    finally:
        await replication.stop()
        store.close()
        releaser.join(5)
    refused = [r.getMessage() for r in caplog.records if "LISTEN" in r.getMessage()]
    assert refused, "the refused LISTEN connection was not logged"
    assert refused[0].startswith(
        "LISTEN connection of replica crowded refused: the server has no free connection ("
    )
    assert "raise the server's max_connections" in refused[0]
