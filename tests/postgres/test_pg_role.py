"""The database and role docs/deploy.md creates are enough for replicas, and no more than that.

The SQL is read from the page, so the page and this test cannot drift apart. It runs as the
test server's superuser with unique names; then the role alone runs two replicas' stores.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from batonflow.core.durable._records import Checkpoint, RunRecord
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres.leases import Replication

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"


def deploy_sql() -> list[str]:
    """The statements of docs/deploy.md's SQL block that creates the role and database."""
    blocks = re.findall(r"^```sql\n(.*?)^```", DEPLOY.read_text(), re.DOTALL | re.MULTILINE)
    block = next(b for b in blocks if "CREATE ROLE" in b)
    return [s.strip() for s in block.split(";") if s.strip()]


@pytest.fixture
def role_url(postgres_server) -> Iterator[str]:
    """A database and role made by docs/deploy.md's SQL (unique names); the role's URL."""
    name = "bf_" + uuid.uuid4().hex[:10]
    admin = postgres_server.url()
    with psycopg.connect(admin, autocommit=True) as conn:
        for statement in deploy_sql():
            conn.execute(re.sub(r"\bbatonflow\b", name, statement))  # type: ignore[call-overload]
    host, port = postgres_server.host, postgres_server.port
    try:
        yield f"postgresql://{name}:change-me@{host}:{port}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'DROP ROLE IF EXISTS "{name}"')


def _record(run_id: str) -> RunRecord:
    now = time.time()
    return RunRecord(run_id, "Flow", "running", now, now, owner="server")


def _checkpoint(run_id: str, seq: int) -> Checkpoint:
    return Checkpoint(f"{run_id}-{seq}", run_id, "Flow", "s", None, (), time.time(), {}, seq)


def test_the_role_has_no_server_wide_privilege(role_url, postgres_server):
    """The role logs in and owns its database, and is neither superuser nor maker of
    databases or roles; other roles of the server cannot connect to its database."""
    with psycopg.connect(role_url) as conn:
        row = conn.execute(
            "SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, "
            "pg_get_userbyid(d.datdba) = current_user "
            "FROM pg_roles r, pg_database d "
            "WHERE r.rolname = current_user AND d.datname = current_database()"
        ).fetchone()
    assert row == (False, False, False, False, False, True)
    other = "bf_other_" + uuid.uuid4().hex[:8]
    database = role_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{other}" LOGIN')  # type: ignore[call-overload]
    try:
        url = f"postgresql://{other}@{postgres_server.host}:{postgres_server.port}/{database}"
        with pytest.raises(psycopg.OperationalError, match="permission denied for database"):
            psycopg.connect(url).close()
    finally:
        with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
            conn.execute(f'DROP ROLE "{other}"')  # type: ignore[call-overload]


async def test_two_replicas_migrate_claim_and_write_as_the_role(role_url):
    """As the role alone: the first store creates the schema, writes a run and its events;
    the second opens the same schema, takes the run over when its lease runs out, writes."""
    first = PostgresCheckpointStore(role_url, replica_id="first", lease_seconds=0.6)
    run_id = uuid.uuid4().hex
    first.create_run(_record(run_id))
    first.put(_checkpoint(run_id, 1))
    assert first.append_event(run_id, "event", '{"type": "Tick"}') == 1
    assert first.post_event(run_id, '{"answer": 1}') == 1
    second = PostgresCheckpointStore(role_url, replica_id="second", lease_seconds=0.6)
    taken = asyncio.Event()
    replication = Replication(second, on_takeover=lambda record: taken.set(), interval=0.1)
    try:
        await replication.start()
        await asyncio.wait_for(taken.wait(), 20)  # the first replica never renews its lease
        assert second.lease_of(run_id)[0] == "second"
        second.put(_checkpoint(run_id, 2))
        assert second.append_event(run_id, "event", '{"type": "Tock"}') == 2
        assert [c.seq for c in second.list(run_id)] == [1, 2]
        second.finish_run(run_id, "completed", result='"done"')
        assert second.run(run_id).status == "completed"
    finally:
        await replication.stop()
        first.close()
        second.close()
