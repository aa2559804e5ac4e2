"""Checkpoint stores: the protocol, in memory and SQLite (its file, schema, locks, processes)."""

import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from batonflow.core.checkpoints import (
    Checkpoint,
    CheckpointStore,
    InMemoryCheckpointStore,
    RunRecord,
    SqliteCheckpointStore,
)
from batonflow.core.durable._sqlite_store import SCHEMA_VERSION
from batonflow.core.errors import CheckpointError

ROOT = Path(__file__).resolve().parents[2]


def make_checkpoint(run_id="r1", seq=1, step_name="s", ctx=None, cid=None) -> Checkpoint:
    return Checkpoint(
        id=cid or f"{run_id}-{seq}",
        run_id=run_id,
        workflow_name="W",
        step_name=step_name,
        input_event_type="m:In",
        output_event_types=("m:Out", "m:Other"),
        created_at=1000.0 + seq,
        ctx_data=ctx if ctx is not None else {"state": {"n": seq}, "queue": [{"step": "x"}]},
        seq=seq,
    )


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path: Path):
    if request.param == "memory":
        yield InMemoryCheckpointStore()
    else:
        s = SqliteCheckpointStore(tmp_path / "runs.db")
        yield s
        s.close()


# -- stores ------------------------------------------------------------------------------------


async def test_store_satisfies_protocol(store) -> None:
    """Both stores implement the CheckpointStore protocol."""
    assert isinstance(store, CheckpointStore)


async def test_store_round_trips_checkpoints_in_order(store) -> None:
    """put then list/latest/get give back equal checkpoints, oldest first."""
    cps = [make_checkpoint(seq=i) for i in (1, 2, 3)]
    for cp in cps:
        store.put(cp)
    assert store.list("r1") == cps
    assert store.latest("r1") == cps[-1]
    assert store.get("r1-2") == cps[1]
    assert store.list("nope") == [] and store.latest("nope") is None


async def test_store_get_unknown_checkpoint(store) -> None:
    """An unknown checkpoint id is a CheckpointError saying how to list them."""
    with pytest.raises(CheckpointError, match=r"No checkpoint 'zzz' .*store.list\(run_id\)"):
        store.get("zzz")


async def test_store_rejects_duplicate_seq(store) -> None:
    """Two checkpoints with the same run and seq are refused."""
    store.put(make_checkpoint(seq=1))
    with pytest.raises(CheckpointError, match=r"already has checkpoint .* seq 1"):
        store.put(make_checkpoint(seq=1, cid="other"))


async def test_store_tracks_run_status(store) -> None:
    """Runs are 'running' after a put, then carry status, result and error from finish_run."""
    store.put(make_checkpoint(run_id="a"))
    store.put(make_checkpoint(run_id="b"))
    assert [r.status for r in store.runs()] == ["running", "running"]
    store.finish_run("a", "completed", result='"ok"')
    store.finish_run("b", "failed", error="ValueError: bad")
    done = store.run("a")
    assert isinstance(done, RunRecord) and (done.status, done.result) == ("completed", '"ok"')
    assert [r.run_id for r in store.runs(status="failed")] == ["b"]
    assert store.run("b").error == "ValueError: bad"
    assert store.runs(workflow_name="Other") == []
    store.put(make_checkpoint(run_id="a", seq=2))  # a put leaves the status alone
    assert store.run("a").status == "completed"
    store.set_status("a", "running")  # a late write: an ended run never changes again
    store.finish_run("a", "failed", error="late", end="{}")
    assert (store.run("a").status, store.run("a").result) == ("completed", '"ok"')
    assert store.events("a") == []
    store.acquire("b")  # resuming the failed run makes it run again
    assert store.run("b").status == "running" and store.run("b").error is None


async def test_store_delete_forgets_run(store) -> None:
    """delete removes a run's checkpoints and record."""
    store.put(make_checkpoint(seq=1))
    store.delete("r1")
    assert store.list("r1") == [] and store.run("r1") is None
    with pytest.raises(CheckpointError):
        store.get("r1-1")


async def test_sqlite_store_persists_across_instances(tmp_path: Path) -> None:
    """A new store on the same file sees earlier checkpoints (the durable part)."""
    path = tmp_path / "deep" / "runs.db"
    with SqliteCheckpointStore(path) as first:
        first.put(make_checkpoint(seq=1))
        first.finish_run("r1", "completed", result="1")
    with SqliteCheckpointStore(path) as second:
        assert second.latest("r1") == make_checkpoint(seq=1)
        assert second.run("r1").status == "completed"


async def test_sqlite_store_uses_wal_mode(tmp_path: Path) -> None:
    """The file is in WAL mode with a schema_version row for checkpoints."""
    SqliteCheckpointStore(tmp_path / "runs.db").close()
    conn = sqlite3.connect(tmp_path / "runs.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT component, version FROM schema_version").fetchall() == [
        ("checkpoints", SCHEMA_VERSION)
    ]
    conn.close()


async def test_sqlite_store_shares_a_file_with_other_tables(tmp_path: Path) -> None:
    """The store coexists with other components' tables in the same file."""
    conn = sqlite3.connect(tmp_path / "runs.db")
    conn.execute("CREATE TABLE server_runs (id TEXT)")
    conn.commit()
    conn.close()
    with SqliteCheckpointStore(tmp_path / "runs.db") as s:
        s.put(make_checkpoint())
        assert len(s.list("r1")) == 1


async def test_sqlite_store_rejects_a_file_that_is_not_sqlite(tmp_path: Path) -> None:
    """A corrupt file is a CheckpointError that says what to do."""
    path = tmp_path / "runs.db"
    path.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(
        CheckpointError,
        match=r"is corrupt or not a SQLite database .* move it away or pass another path",
    ):
        SqliteCheckpointStore(path)


@pytest.mark.parametrize(
    ("version", "match"),
    [
        pytest.param(0, r"holds checkpoints of an older batonflow \(schema version 0", id="older"),
        pytest.param(
            99,
            r"holds checkpoints of a newer batonflow \(schema version 99, this one reads up to "
            rf"{SCHEMA_VERSION}\)",
            id="newer",
        ),
    ],
)
async def test_sqlite_store_rejects_other_schema_versions(
    tmp_path: Path, version: int, match: str
) -> None:
    """A checkpoint schema of another version is refused with the fix."""
    SqliteCheckpointStore(tmp_path / "runs.db").close()
    conn = sqlite3.connect(tmp_path / "runs.db")
    conn.execute(
        "UPDATE schema_version SET version = ? WHERE component = 'checkpoints'", (version,)
    )
    conn.commit()
    conn.close()
    with pytest.raises(CheckpointError, match=match):
        SqliteCheckpointStore(tmp_path / "runs.db")


async def test_sqlite_store_rejects_foreign_schema_version_table(tmp_path: Path) -> None:
    """Another program's schema_version table is detected."""
    conn = sqlite3.connect(tmp_path / "runs.db")
    conn.execute("CREATE TABLE schema_version (v INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(CheckpointError, match=r"schema_version table that is not batonflow's"):
        SqliteCheckpointStore(tmp_path / "runs.db")


async def test_sqlite_store_reports_corrupt_rows(tmp_path: Path) -> None:
    """A checkpoint row whose JSON is damaged is named in a CheckpointError."""
    with SqliteCheckpointStore(tmp_path / "runs.db") as s:
        s.put(make_checkpoint())
        s._conn.execute("UPDATE checkpoints SET ctx_data = '{broken'")
        with pytest.raises(
            CheckpointError,
            match=r"Checkpoint 'r1-1' of run 'r1' .* is corrupt .*store.delete\(run_id\)",
        ):
            s.latest("r1")


async def test_sqlite_store_rejects_non_json_ctx_data(tmp_path: Path) -> None:
    """ctx_data that is not JSON is refused at put."""
    with SqliteCheckpointStore(tmp_path / "runs.db") as s:
        with pytest.raises(CheckpointError, match=r"ctx_data that is not JSON .*ctx.to_dict\(\)"):
            s.put(make_checkpoint(ctx={"x": object()}))
        looped: dict[str, object] = {}
        looped["self"] = looped
        with pytest.raises(CheckpointError, match=r"ctx_data that is not JSON .*ctx.to_dict\(\)"):
            s.put(make_checkpoint(ctx={"x": [looped]}))
        assert s.list("r1") == []


async def test_sqlite_store_closed(tmp_path: Path) -> None:
    """Using a closed store is a clear error."""
    s = SqliteCheckpointStore(tmp_path / "runs.db")
    s.close()
    with pytest.raises(CheckpointError, match=r"is closed .*create a new SqliteCheckpointStore"):
        s.list("r1")


async def test_sqlite_store_unwritable_path(tmp_path: Path) -> None:
    """A path that cannot be created is a CheckpointError."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(
        CheckpointError, match=r"Cannot open the checkpoint database .* pass a writable path"
    ):
        SqliteCheckpointStore(blocker / "runs.db")


async def test_sqlite_store_is_thread_safe(tmp_path: Path) -> None:
    """Several threads writing through one store lose nothing."""
    with SqliteCheckpointStore(tmp_path / "runs.db") as s:

        def write(t: int) -> None:
            for i in range(50):
                s.put(make_checkpoint(run_id=f"t{t}", seq=i))

        threads = [threading.Thread(target=write, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert [len(s.list(f"t{t}")) for t in range(4)] == [50, 50, 50, 50]


async def test_sqlite_store_is_safe_across_processes(tmp_path: Path) -> None:
    """Two processes writing to one file at once both get every checkpoint in."""
    path = tmp_path / "runs.db"
    script = textwrap.dedent(
        f"""
        import sys
        from batonflow.core.checkpoints import Checkpoint, SqliteCheckpointStore
        s = SqliteCheckpointStore({str(path)!r})
        tag = sys.argv[1]
        for i in range(150):
            s.put(Checkpoint(id=f"{{tag}}{{i}}", run_id=tag, workflow_name="W", step_name="s",
                             input_event_type=None, output_event_types=(), created_at=0.0,
                             ctx_data={{"i": i}}, seq=i))
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, tag], cwd=ROOT, stderr=subprocess.PIPE)
        for tag in ("p", "q")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode()
    with SqliteCheckpointStore(path) as s:
        assert len(s.list("p")) == 150 and len(s.list("q")) == 150
        assert s.latest("q").ctx_data == {"i": 149}


# -- checkpointer --------------------------------------------------------------------------------


def test_sqlite_store_waits_for_a_fresh_file_locked_by_another_process(tmp_path: Path) -> None:
    """Opening a new file while another connection writes to it waits instead of failing."""
    path = tmp_path / "runs.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # what a second process does while setting the file up
    release = threading.Timer(0.2, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        with SqliteCheckpointStore(path, busy_timeout=10) as s:
            s.put(make_checkpoint(run_id="r", seq=0))
            assert len(s.list("r")) == 1
    finally:
        release.join()
        holder.close()


def test_sqlite_store_locked_too_long_says_so(tmp_path: Path) -> None:
    """A file locked past busy_timeout is reported as locked, not as corrupt."""
    path = tmp_path / "runs.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(CheckpointError, match=r"stayed locked by another process for 0\.05 s"):
            SqliteCheckpointStore(path, busy_timeout=0.05)
    finally:
        holder.execute("COMMIT")
        holder.close()
