"""PostgresCheckpointStore beyond the shared contract: URLs, errors, leases and fencing."""

from __future__ import annotations

import threading
import time
import uuid

import psycopg
import pytest
from batonflow.core.durable._records import Checkpoint, RunRecord
from batonflow.core.errors import CheckpointError, StoreCorruptError
from batonflow.core.stores import open_store
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres._sql import SCHEMA_VERSION
from batonflow.postgres.store import LeaseLostError


def _record(run_id: str, owner: str = "server") -> RunRecord:
    now = time.time()
    return RunRecord(run_id, "Flow", "running", now, now, owner=owner)


def _checkpoint(run_id: str, seq: int) -> Checkpoint:
    return Checkpoint(f"{run_id}-{seq}", run_id, "Flow", "s", None, (), time.time(), {}, seq)


def _expire(url: str, run_id: str) -> None:
    """Make a run's lease run out now, as if its replica had stopped renewing it."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE checkpoint_runs SET lease_until = lease_until - 3600 WHERE run_id = %s",
            (run_id,),
        )


def test_open_store_picks_the_backend_by_scheme(postgres_url, tmp_path):
    """postgresql:// and postgres:// open PostgreSQL; paths and sqlite:/// open SQLite."""
    with open_store(postgres_url) as pg:
        assert isinstance(pg, PostgresCheckpointStore)
    with open_store(postgres_url.replace("postgresql://", "postgres://")) as pg:
        assert isinstance(pg, PostgresCheckpointStore)
    with open_store(postgres_url.replace("postgresql://", "postgresql+psycopg://")) as pg:
        assert isinstance(pg, PostgresCheckpointStore)
    sqlite = open_store(f"sqlite:///{tmp_path}/a.db")
    assert sqlite.path == tmp_path / "a.db"  # type: ignore[attr-defined]
    sqlite.close()


def test_unknown_scheme_names_the_fix():
    """A URL whose scheme no backend registers says what to do."""
    with pytest.raises(CheckpointError, match=r"No run store is installed for mysql:// URLs"):
        open_store("mysql://x@localhost/db")


def test_unreachable_server_is_a_clear_error(postgres_server):
    """A refused connection gives one CheckpointError naming the URL and libpq's reason, no
    password, at once: not after the pool's retries for ``connect_timeout`` seconds."""
    url = f"postgresql://u:secret@127.0.0.1:{postgres_server.port + 1}/db"
    with pytest.raises(CheckpointError, match=r"Cannot connect to PostgreSQL") as info:
        PostgresCheckpointStore(url, connect_timeout=600)
    assert "secret" not in str(info.value)
    assert "u:***@" in str(info.value)
    assert "refused" in str(info.value).lower()  # the pool's timeout would not say why
    assert "\n" not in str(info.value)
    # libpq's hint line ("Is the server running ...?") is a sentence of its own.
    assert "refused Is" not in str(info.value)


def test_a_database_that_does_not_exist_is_named(postgres_url):
    """A wrong database name in a working server's URL says so at once."""
    url = postgres_url.rsplit("/", 1)[0] + "/no_such_db_7f"
    with pytest.raises(CheckpointError, match=r'database "no_such_db_7f" does not exist'):
        PostgresCheckpointStore(url, connect_timeout=600)


def test_schema_is_created_once_by_racing_replicas(postgres_url):
    """Five stores opening one empty database at once all succeed, with one schema row."""
    errors: list[BaseException] = []
    stores: list[PostgresCheckpointStore] = []

    def open_one() -> None:
        try:
            stores.append(PostgresCheckpointStore(postgres_url))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in stores:
        s.close()
    assert errors == []
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT component, version FROM batonflow_schema").fetchall() == [
            ("checkpoints", SCHEMA_VERSION)
        ]


def test_a_newer_schema_is_refused(postgres_url):
    """A database written by a newer batonflow is not touched."""
    PostgresCheckpointStore(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE batonflow_schema SET version = 99")
    with pytest.raises(StoreCorruptError, match="newer batonflow"):
        PostgresCheckpointStore(postgres_url)


def test_a_run_is_leased_to_the_replica_that_created_it(postgres_url):
    """create_run leases the run to its replica; another replica cannot write into it."""
    with (
        PostgresCheckpointStore(postgres_url, replica_id="a", lease_seconds=30) as a,
        PostgresCheckpointStore(postgres_url, replica_id="b", lease_seconds=30) as b,
    ):
        run_id = uuid.uuid4().hex
        a.create_run(_record(run_id))
        owner, left = a.lease_of(run_id)
        assert owner == "a" and left is not None and 25 < left <= 30
        a.put(_checkpoint(run_id, 0))
        with pytest.raises(LeaseLostError, match="held by replica 'a'"):
            b.put(_checkpoint(run_id, 1))
        with pytest.raises(LeaseLostError):
            b.append_event(run_id, "event", "{}")
        with pytest.raises(LeaseLostError):
            b.set_status(run_id, "completed")
        assert b.claim(run_id) is False  # the lease is alive
        assert b.post_event(run_id, '{"x": 1}') == 1  # any replica may post to the inbox
        assert a.renew_leases() == [run_id]


def test_an_expired_lease_is_taken_over_and_fences_the_old_holder(postgres_url):
    """After a replica stops renewing, another takes the run; the old one can no longer write."""
    with (
        PostgresCheckpointStore(postgres_url, replica_id="a") as a,
        PostgresCheckpointStore(postgres_url, replica_id="b") as b,
    ):
        run_id = uuid.uuid4().hex
        a.create_run(_record(run_id))
        assert b.claim_expired() == []
        _expire(postgres_url, run_id)
        taken = b.claim_expired()
        assert [r.run_id for r in taken] == [run_id]
        assert b.lease_of(run_id)[0] == "b"
        with pytest.raises(LeaseLostError, match="held by replica 'b'"):
            a.put(_checkpoint(run_id, 0))
        assert run_id not in a.renew_leases()
        b.put(_checkpoint(run_id, 0))
        b.set_status(run_id, "completed", result="1")
        assert b.lease_of(run_id) == (None, None)  # an ended run holds no lease


def test_only_runs_in_progress_of_the_given_owner_are_taken(postgres_url):
    """Ended runs and runs another kind of owner started (the CLI) are left alone."""
    with (
        PostgresCheckpointStore(postgres_url, replica_id="a") as a,
        PostgresCheckpointStore(postgres_url, replica_id="b") as b,
    ):
        done, cli, waiting = (uuid.uuid4().hex for _ in range(3))
        a.create_run(_record(done))
        a.create_run(_record(cli, owner="cli"))
        a.create_run(_record(waiting))
        a.append_event(waiting, "event", "{}", waiting=True)
        for run_id in (done, cli, waiting):
            _expire(postgres_url, run_id)
        a.set_status(done, "completed")
        assert [r.run_id for r in b.claim_expired()] == [waiting]


@pytest.mark.parametrize("round_", range(15))
def test_racing_replicas_take_each_expired_run_exactly_once(postgres_url, round_):
    """Three replicas claim the same expired runs at the same moment: each run goes to one."""
    with PostgresCheckpointStore(postgres_url, replica_id="dead") as dead:
        runs = [uuid.uuid4().hex for _ in range(6)]
        for run_id in runs:
            dead.create_run(_record(run_id))
            _expire(postgres_url, run_id)
    replicas = [PostgresCheckpointStore(postgres_url, replica_id=f"r{i}") for i in range(3)]
    got: dict[str, list[str]] = {}
    barrier = threading.Barrier(len(replicas))

    def claim(store: PostgresCheckpointStore) -> None:
        barrier.wait()
        got[store.replica_id or ""] = [r.run_id for r in store.claim_expired()]

    threads = [threading.Thread(target=claim, args=(s,)) for s in replicas]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in replicas:
        s.close()
    claimed = [run_id for ids in got.values() for run_id in ids]
    assert sorted(claimed) == sorted(runs)  # every run taken, none twice


def test_a_replica_takes_over_only_the_workflows_it_runs(postgres_url):
    """claim_expired(workflows=...) leaves runs of other workflows to replicas that serve them."""
    with (
        PostgresCheckpointStore(postgres_url, replica_id="dead") as dead,
        PostgresCheckpointStore(postgres_url, replica_id="b") as b,
    ):
        now = time.time()
        mine, theirs = uuid.uuid4().hex, uuid.uuid4().hex
        dead.create_run(RunRecord(mine, "flow-a", "running", now, now, owner="server"))
        dead.create_run(RunRecord(theirs, "flow-b", "running", now, now, owner="server"))
        _expire(postgres_url, mine)
        _expire(postgres_url, theirs)
        assert [r.run_id for r in b.claim_expired(workflows=["flow-a"])] == [mine]
        assert b.lease_of(theirs)[0] == "dead"


def test_a_version_2_database_is_migrated_and_keeps_its_ids(postgres_url):
    """A version-2 database (a primary key on checkpoints.id, random ids) is migrated to 3:
    no primary key, the old ids found through the index of given ids, made ids by run and seq."""
    run_id = uuid.uuid4().hex
    with PostgresCheckpointStore(postgres_url) as store:
        store.create_run(_record(run_id, owner="cli"))
        store.put(_checkpoint(run_id, 0))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        # Back to version 2: its index of every id, and the random ids its checkpointer made.
        conn.execute("DROP INDEX checkpoints_by_other_id")
        conn.execute("UPDATE checkpoints SET id = md5(random()::text)")
        conn.execute("ALTER TABLE checkpoints ADD PRIMARY KEY (id)")
        conn.execute("UPDATE batonflow_schema SET version = 2")
        (old_id,) = conn.execute("SELECT id FROM checkpoints").fetchone()
    with PostgresCheckpointStore(postgres_url) as store:
        assert store.get(old_id).seq == 0
        made = Checkpoint(f"{run_id}:1", run_id, "Flow", "s", None, (), time.time(), {}, 1)
        store.put(made)
        assert [c.id for c in store.list(run_id)] == [old_id, made.id]
        assert store.get(made.id).seq == 1
        with pytest.raises(CheckpointError, match="already has checkpoint"):
            store.put(Checkpoint(old_id, run_id, "Flow", "s", None, (), time.time(), {}, 2))
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM batonflow_schema").fetchone() == (SCHEMA_VERSION,)
        kinds = conn.execute(
            "SELECT contype FROM pg_constraint WHERE conrelid = 'checkpoints'::regclass"
        ).fetchall()
        assert ("p",) not in kinds
        (definition,) = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'checkpoints_by_other_id'"
        ).fetchone()
        assert "UNIQUE" in definition and "WHERE" in definition
