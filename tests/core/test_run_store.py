"""The run store protocol, run against every backend (a PostgreSQL one joins the params)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from batonflow.core import (
    CheckpointError,
    CheckpointStore,
    HumanResponseEvent,
    InMemoryCheckpointStore,
    InputRequiredEvent,
    RunConflictError,
    SqliteCheckpointStore,
    StartEvent,
    StopEvent,
    StoreCorruptError,
    StoreReadOnlyError,
    Workflow,
    WorkflowCheckpointer,
    step,
)
from batonflow.core.checkpoints import Checkpoint, RunRecord
from batonflow.core.durable._sql_schema import TABLES, create_table
from batonflow.core.durable._sqlite_schema import store_error
from batonflow.core.durable._sqlite_store import SCHEMA_VERSION


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CheckpointStore]:
    """Each backend of the protocol, empty (PostgreSQL on the tests' throw-away server)."""
    if request.param == "memory":
        yield InMemoryCheckpointStore()
        return
    if request.param == "postgres":
        pytest.importorskip("psycopg", reason="pip install 'batonflow[postgres]'")
        from batonflow.core import open_store

        pg_store = open_store(request.getfixturevalue("postgres_url"))
        yield pg_store
        pg_store.close()  # type: ignore[attr-defined]
        return
    with SqliteCheckpointStore(tmp_path / "runs.db") as sqlite_store:
        yield sqlite_store


def record(run_id: str = "r1", status: str = "running") -> RunRecord:
    return RunRecord(run_id, "Flow", status, 1.0, 1.0, start_event='{"x":1}', input='{"x":1}')


def checkpoint(seq: int, state: dict[str, str | None], *, delta: bool | None) -> Checkpoint:
    data = {"state": {"version": 1, "state_type": None, "state_data": state}, "queue": []}
    return Checkpoint(
        f"c{seq}", "r1", "Flow", f"s{seq}", None, (), 1.0, data, seq=seq, state_changes=delta
    )


async def test_a_run_is_recorded_once_with_its_start(store: CheckpointStore) -> None:
    """create_run keeps the start event and input; the same id again is a RunConflictError."""
    store.create_run(record())
    got = store.run("r1")
    assert got is not None and (got.status, got.start_event, got.input) == (
        "running",
        '{"x":1}',
        '{"x":1}',
    )
    with pytest.raises(RunConflictError, match=r"Run 'r1' exists already .* resume it"):
        store.create_run(record())


async def test_unknown_status_is_refused(store: CheckpointStore) -> None:
    """Only the one vocabulary is accepted."""
    store.create_run(record())
    with pytest.raises(ValueError, match=r"Unknown run status 'timed_out'; use one of running"):
        store.set_status("r1", "timed_out")


async def test_event_log_gives_each_entry_one_seq(store: CheckpointStore) -> None:
    """Entries are numbered from 1 in order; reading after a seq gives the rest."""
    store.create_run(record())
    assert [store.append_event("r1", "event", json.dumps({"n": n})) for n in range(3)] == [1, 2, 3]
    assert [(e.seq, json.loads(e.body)["n"]) for e in store.events("r1", after=1)] == [
        (2, 1),
        (3, 2),
    ]
    assert [e.seq for e in store.events("r1", after=0, limit=1)] == [1]
    assert store.events("other") == []


async def test_a_question_takes_exactly_one_answer(store: CheckpointStore) -> None:
    """A waiting run accepts one answer (it becomes running); the next is a RunConflictError."""
    store.create_run(record())
    with pytest.raises(RunConflictError, match="not waiting for an answer"):
        store.post_event("r1", "a0", answer=True)
    seq = store.append_event("r1", "event", "{}", waiting=True)
    waiting = store.run("r1")
    assert waiting is not None and (waiting.status, waiting.waiting_seq) == ("waiting", seq)
    assert store.post_event("r1", "a1", answer=True) == 1
    assert store.run("r1").status == "running"  # type: ignore[union-attr]
    with pytest.raises(RunConflictError, match="answered already"):
        store.post_event("r1", "a2", answer=True)
    assert store.post_event("r1", "plain") == 2  # other events are queued in order
    # The next question takes its own answer.
    store.append_event("r1", "event", "{}", waiting=True)
    assert store.post_event("r1", "a3", answer=True) == 3
    assert [(i.seq, i.body) for i in store.inbox("r1", after=1)] == [(2, "plain"), (3, "a3")]


async def test_events_for_ended_or_unknown_runs_are_refused(store: CheckpointStore) -> None:
    """The inbox only takes events for a run that is still going on."""
    with pytest.raises(RunConflictError, match="is not in the store"):
        store.post_event("nope", "x")
    store.create_run(record())
    store.set_status("r1", "completed", result="1")
    with pytest.raises(RunConflictError, match=r"Run 'r1' is completed; events can only"):
        store.post_event("r1", "x")


async def test_a_checkpoint_stores_only_changed_keys_and_reads_back_whole(
    store: CheckpointStore,
) -> None:
    """Delta checkpoints rebuild the full state of each checkpoint; a full one starts over."""
    store.create_run(record())
    store.put(checkpoint(1, {"a": "1", "b": "2"}, delta=False))
    store.put(checkpoint(2, {"b": "3"}, delta=True))
    store.put(checkpoint(3, {"a": None, "c": "4"}, delta=True))
    store.put(checkpoint(4, {"z": "9"}, delta=False))
    states = [c.ctx_data["state"]["state_data"] for c in store.list("r1")]
    assert states == [{"a": "1", "b": "2"}, {"a": "1", "b": "3"}, {"b": "3", "c": "4"}, {"z": "9"}]
    assert store.get("c2").ctx_data["state"]["state_data"] == {"a": "1", "b": "3"}
    latest = store.latest("r1")
    assert latest is not None and latest.ctx_data["state"]["state_data"] == {"z": "9"}
    assert latest.ctx_data["queue"] == []


async def test_one_answer_wins_among_concurrent_ones(tmp_path: Path) -> None:
    """Ten connections answering one question at once: exactly one is accepted."""
    path = tmp_path / "runs.db"
    with SqliteCheckpointStore(path) as first:
        first.create_run(record())
        first.append_event("r1", "event", "{}", waiting=True)
    stores = [SqliteCheckpointStore(path) for _ in range(10)]
    won: list[int] = []
    lost: list[str] = []
    barrier = threading.Barrier(len(stores))

    def answer(s: SqliteCheckpointStore, i: int) -> None:
        barrier.wait()
        try:
            won.append(s.post_event("r1", f"answer {i}", answer=True))
        except RunConflictError as exc:
            lost.append(str(exc))

    threads = [threading.Thread(target=answer, args=(s, i)) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for s in stores:
        s.close()
    assert len(won) == 1 and len(lost) == 9
    with SqliteCheckpointStore(path) as check:
        assert len(check.inbox("r1")) == 1


async def test_memory_store_keeps_a_bounded_number_of_finished_runs() -> None:
    """max_finished evicts the oldest ended runs; running ones stay."""
    store = InMemoryCheckpointStore(max_finished=2)
    store.create_run(record("live"))
    for i in range(5):
        store.create_run(record(f"r{i}"))
        store.append_event(f"r{i}", "event", "{}")
        store.set_status(f"r{i}", "completed")
    assert sorted(r.run_id for r in store.runs()) == ["live", "r3", "r4"]
    assert store.events("r0") == []
    with pytest.raises(ValueError, match="max_finished=-1 is negative"):
        InMemoryCheckpointStore(max_finished=-1)


async def test_database_file_is_private(tmp_path: Path) -> None:
    """A new store file is readable by its owner only."""
    SqliteCheckpointStore(tmp_path / "runs.db").close()
    assert stat.S_IMODE((tmp_path / "runs.db").stat().st_mode) == 0o600


async def test_garbage_pages_are_a_store_error(tmp_path: Path) -> None:
    """A file whose pages were overwritten gives StoreCorruptError from list/latest/runs."""
    path = tmp_path / "runs.db"
    with SqliteCheckpointStore(path) as s:
        for i in range(1, 50):
            s.put(checkpoint(i, {"k": "v" * 500}, delta=None))
    raw = bytearray(path.read_bytes())
    for offset in range(4096, len(raw), 1):
        raw[offset] = (offset * 7) % 256
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError) as caught:
        with SqliteCheckpointStore(path) as s:
            s.list("r1")
            s.latest("r1")
            s.runs()
    assert isinstance(caught.value, StoreCorruptError), caught.value
    assert "move it away or pass another path" in str(caught.value)


async def test_read_only_database_is_named_read_only(tmp_path: Path) -> None:
    """SQLite's "readonly" refusal becomes a StoreReadOnlyError with the fix."""
    path = tmp_path / "runs.db"
    SqliteCheckpointStore(path).close()
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    with pytest.raises(sqlite3.OperationalError) as caught:
        conn.execute("INSERT INTO run_events VALUES ('r', 1, 'event', '{}')")
    conn.close()
    error = store_error(path, caught.value, "write a checkpoint")
    assert isinstance(error, StoreReadOnlyError)
    assert str(error).endswith("make the file and its folder writable, or pass another path.")


def _v1_file(path: Path) -> None:
    """A version-1 run store, as the first release wrote it (engine and server tables)."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL);
        INSERT INTO schema_version VALUES ('checkpoints', 1);
        CREATE TABLE checkpoint_runs (run_id TEXT PRIMARY KEY, workflow_name TEXT NOT NULL,
            status TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
            result TEXT, error TEXT);
        CREATE TABLE checkpoints (id TEXT PRIMARY KEY, run_id TEXT NOT NULL,
            seq INTEGER NOT NULL, workflow_name TEXT NOT NULL, step_name TEXT,
            input_event_type TEXT, output_event_types TEXT NOT NULL, created_at REAL NOT NULL,
            ctx_data TEXT NOT NULL, final_event TEXT, UNIQUE (run_id, seq));
        INSERT INTO checkpoint_runs VALUES ('lib', 'Flow', 'timed_out', 1, 2, NULL, 'Timeout');
        INSERT INTO checkpoints VALUES ('c1', 'lib', 0, 'Flow', NULL, NULL, '[]', 1, '{}', NULL);
        CREATE TABLE server_runs (run_id TEXT PRIMARY KEY, workflow TEXT NOT NULL,
            status TEXT NOT NULL, start TEXT NOT NULL, result TEXT, error TEXT, snapshot TEXT,
            traceparent TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL);
        INSERT INTO server_runs VALUES ('srv', 'hitl', 'waiting', '{"topic":"x"}', NULL, NULL,
            '{"format":"batonflow.context"}', '00-abc-def-01', 3, 4);
        CREATE TABLE server_events (run_id TEXT NOT NULL, seq INTEGER NOT NULL,
            kind TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, seq));
        INSERT INTO server_events VALUES ('srv', 1, 'event', '{"type":"InputRequiredEvent"}');
        CREATE TABLE flow_refs (run_id TEXT PRIMARY KEY, flow TEXT NOT NULL, pid INTEGER);
        INSERT INTO flow_refs VALUES ('lib', 'pkg.mod:Flow', 42);
        """
    )
    conn.commit()
    conn.close()


async def test_a_version_1_file_is_migrated_into_the_one_store(tmp_path: Path) -> None:
    """Opening a v1 file moves the server's records into the store, in the new vocabulary."""
    path = tmp_path / "runs.db"
    _v1_file(path)
    with SqliteCheckpointStore(path) as s:
        lib, srv = s.run("lib"), s.run("srv")
        assert lib is not None and (lib.status, lib.flow_ref, lib.pid) == (
            "failed",
            "pkg.mod:Flow",
            42,
        )
        assert srv is not None and (srv.workflow_name, srv.status, srv.owner) == (
            "hitl",
            "waiting",
            "server",
        )
        assert (json.loads(srv.input or ""), srv.traceparent) == ({"topic": "x"}, "00-abc-def-01")
        assert [e.seq for e in s.events("srv")] == [1]
        latest = s.latest("srv")  # the waiting snapshot is the checkpoint a resume starts from
        assert latest is not None and latest.ctx_data == {"format": "batonflow.context"}
        assert [c.seq for c in s.list("lib")] == [0]
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    version = conn.execute("SELECT version FROM schema_version").fetchone()[0]
    conn.close()
    assert version == SCHEMA_VERSION and not {"server_runs", "server_events", "flow_refs"} & tables
    conn = sqlite3.connect(path)
    columns = {
        table: [row[1] for row in conn.execute(f"PRAGMA table_info({table})")] for table in TABLES
    }
    conn.close()
    # The migrated file has the columns of a fresh one, in the same order.
    assert columns == {table: [name for name, _ in cols] for table, cols in TABLES.items()}


class _Asks(Workflow):
    """Counts a step, asks a question, then returns the answer."""

    @step
    async def count(self, ev: StartEvent) -> InputRequiredEvent:
        return InputRequiredEvent(prefix="go?")

    @step
    async def answer(self, ev: HumanResponseEvent) -> StopEvent:
        return StopEvent(result=ev.response)


def _as_version_2(path: Path) -> None:
    """Rewrite the file as version 2 had it: ``checkpoints.id`` its primary key (an index of
    every id), the ids random hex as version 2's checkpointer made them."""
    v2_table = create_table("checkpoints", name="checkpoints_v2").replace(
        "id TEXT NOT NULL", "id TEXT PRIMARY KEY", 1
    )
    columns = ", ".join(name for name, _ in TABLES["checkpoints"])
    conn = sqlite3.connect(path)
    conn.executescript(
        f"""
        {v2_table};
        INSERT INTO checkpoints_v2 ({columns}) SELECT lower(hex(randomblob(16))),
            {columns.split(", ", 1)[1]} FROM checkpoints;
        DROP TABLE checkpoints;
        ALTER TABLE checkpoints_v2 RENAME TO checkpoints;
        UPDATE schema_version SET version = 2;
        """
    )
    conn.close()


def _indexes(path: Path) -> dict[str, tuple[str, int]]:
    """The checkpoints table's indexes: name -> (origin, partial)."""
    conn = sqlite3.connect(path)
    rows = conn.execute("PRAGMA index_list(checkpoints)").fetchall()
    conn.close()
    return {row[1]: (row[3], row[4]) for row in rows}


async def test_a_version_2_file_is_migrated_and_its_runs_resume(tmp_path: Path) -> None:
    """A version-2 file (an index of every checkpoint id, random ids) opens as version 4: no
    primary key on id, the old ids still found by get(), and a run it held resumes, its new
    checkpoints with made ids that no index of ids holds."""
    path = tmp_path / "runs.db"
    with SqliteCheckpointStore(path) as store:
        first = WorkflowCheckpointer(_Asks(timeout=None), store=store)
        handler = first.run(run_id="r")
        while store.run("r").status != "waiting":  # type: ignore[union-attr]
            await asyncio.sleep(0.005)
        first.release("r")  # the record stays "waiting", as after a server's shutdown
        await handler.cancel_run()
    _as_version_2(path)
    assert "pk" in {origin for origin, _ in _indexes(path).values()}
    with SqliteCheckpointStore(path) as store:
        old = store.list("r")
        assert len(old) == 2 and all(len(c.id) == 32 and ":" not in c.id for c in old)
        assert [store.get(c.id) for c in old] == old
        cptr = WorkflowCheckpointer(_Asks(timeout=None), store=store)
        cptr.send_event("r", HumanResponseEvent(response="yes"), answer=True)
        assert await cptr.resume("r") == "yes"
        every = store.list("r")
        assert [c.id for c in every[:2]] == [c.id for c in old]
        assert [c.id for c in every[2:]] == [f"r:{c.seq}" for c in every[2:]]
        assert [store.get(c.id).seq for c in every] == [c.seq for c in every]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
    # Only the two old ids are in the index of ids; the made ones are found by (run_id, seq).
    indexed = conn.execute(
        "SELECT id FROM checkpoints INDEXED BY checkpoints_by_other_id "
        "WHERE id <> run_id || ':' || CAST(seq AS TEXT) ORDER BY seq"
    ).fetchall()
    conn.close()
    assert indexed == [(c.id,) for c in old]
    assert _indexes(path) == {
        "checkpoints_by_other_id": ("c", 1),
        "sqlite_autoindex_checkpoints_1": ("u", 0),
    }


async def test_a_durable_step_writes_no_index_of_ids_and_get_searches(tmp_path: Path) -> None:
    """The checkpointer's checkpoints are in the (run_id, seq) index only (none in the index
    of given ids), and get() of either kind of id searches an index instead of the table."""
    path = tmp_path / "runs.db"
    with SqliteCheckpointStore(path) as store:
        cptr = WorkflowCheckpointer(_Asks(timeout=None), store=store)
        handler = cptr.run(run_id="r")
        while store.run("r").status != "waiting":  # type: ignore[union-attr]
            await asyncio.sleep(0.005)
        cptr.send_event("r", HumanResponseEvent(response="yes"), answer=True)
        assert await handler == "yes"
        assert [c.id for c in store.list("r")] == ["r:1", "r:2", "r:3"]
        plans = {
            name: " ".join(row[3] for row in store._query(f"EXPLAIN QUERY PLAN {sql}", args))
            for name, sql, args in (
                ("made", store.sql.get_made_checkpoint, ("r", 1, "r:1")),
                ("given", store.sql.get_checkpoint, ("c1",)),
            )
        }
    assert plans == {
        "made": "SEARCH checkpoints USING INDEX sqlite_autoindex_checkpoints_1 (run_id=? AND seq=?)",
        "given": "SEARCH checkpoints USING INDEX checkpoints_by_other_id (id=?)",
    }
    conn = sqlite3.connect(path)
    indexed = conn.execute(
        "SELECT count(*) FROM checkpoints INDEXED BY checkpoints_by_other_id "
        "WHERE id <> run_id || ':' || CAST(seq AS TEXT)"
    ).fetchone()
    conn.close()
    assert indexed == (0,)
