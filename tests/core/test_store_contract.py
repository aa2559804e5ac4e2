"""The run-store contract, run against every backend: in memory, SQLite, PostgreSQL.

One set of tests for every :class:`CheckpointStore`, so the backends cannot drift. The
PostgreSQL case runs on the throw-away server of ``tests/pg_server.py``.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import replace

import pytest
from batonflow.core.checkpoints import (
    CheckpointStore,
    SqliteCheckpointStore,
)
from batonflow.core.durable._records import Checkpoint, RunRecord, checkpoint_id
from batonflow.core.durable._sql_schema import TABLES
from batonflow.core.errors import CheckpointError, RunConflictError
from batonflow.core.stores import open_store


def _record(run_id: str | None = None, status: str = "running", **kw) -> RunRecord:
    now = time.time()
    return RunRecord(run_id or uuid.uuid4().hex, "Flow", status, now, now, **kw)


def _checkpoint(run_id: str, seq: int, state: dict | None = None, changes=None) -> Checkpoint:
    ctx = {"state": {"state_data": state or {}}, "queue": [seq]}
    return Checkpoint(
        id=f"{run_id}-{seq}",
        run_id=run_id,
        workflow_name="Flow",
        step_name=f"step{seq}",
        input_event_type="m:In",
        output_event_types=("m:Out",),
        created_at=time.time(),
        ctx_data=ctx,
        seq=seq,
        state_changes=changes,
    )


def test_every_backend_is_a_checkpoint_store(store):
    """Each backend satisfies the protocol the engine, CLI and server program against."""
    assert isinstance(store, CheckpointStore)


def test_a_run_is_recorded_once(store):
    """create_run records the run with its input; a second run with that id is a conflict."""
    record = _record(input='{"topic": "x"}', owner="server", traceparent="00-ab-cd-01")
    store.create_run(record)
    got = store.run(record.run_id)
    assert got is not None
    assert (got.status, got.input, got.owner, got.traceparent) == (
        "running",
        '{"topic": "x"}',
        "server",
        "00-ab-cd-01",
    )
    with pytest.raises(RunConflictError, match="exists already"):
        store.create_run(record)
    assert store.run("nope") is None


def test_checkpoints_come_back_in_order(store):
    """put/list/latest/get round-trip checkpoints; a taken seq or an unknown id is an error."""
    run_id = uuid.uuid4().hex
    store.create_run(_record(run_id))
    for seq in (0, 1, 2):
        store.put(_checkpoint(run_id, seq, {"k": f'"{seq}"'}))
    assert [c.seq for c in store.list(run_id)] == [0, 1, 2]
    latest = store.latest(run_id)
    assert latest is not None and latest.seq == 2
    assert latest.ctx_data["queue"] == [2]
    assert latest.output_event_types == ("m:Out",)
    assert store.get(f"{run_id}-1").step_name == "step1"
    with pytest.raises(CheckpointError):
        store.put(_checkpoint(run_id, 2))
    with pytest.raises(CheckpointError, match="No checkpoint"):
        store.get("missing")
    assert store.list("unknown") == []
    assert store.latest("unknown") is None


def test_state_changes_rebuild_the_whole_state(store):
    """Checkpoints that carry only changed keys read back as the full state at that point."""
    run_id = uuid.uuid4().hex
    store.create_run(_record(run_id))
    store.put(_checkpoint(run_id, 0, {"a": "1", "b": "2"}, changes=False))
    store.put(_checkpoint(run_id, 1, {"b": "3"}, changes=True))
    store.put(_checkpoint(run_id, 2, {"a": None, "c": "4"}, changes=True))
    states = [c.ctx_data["state"]["state_data"] for c in store.list(run_id)]
    assert states == [{"a": "1", "b": "2"}, {"a": "1", "b": "3"}, {"b": "3", "c": "4"}]
    store.put(_checkpoint(run_id, 3, {"z": "9"}, changes=False))  # a whole state again
    latest = store.latest(run_id)
    assert latest is not None and latest.ctx_data["state"]["state_data"] == {"z": "9"}


def test_the_event_log_numbers_each_event_once(store):
    """append_event gives 1, 2, 3...; events(after) reads from a position; waiting marks it."""
    run_id = uuid.uuid4().hex
    store.create_run(_record(run_id))
    assert [store.append_event(run_id, "event", f'{{"n": {i}}}') for i in range(3)] == [1, 2, 3]
    assert [e.seq for e in store.events(run_id, after=1)] == [2, 3]
    assert [e.body for e in store.events(run_id, after=0, limit=1)] == ['{"n": 0}']
    seq = store.append_event(run_id, "event", '{"ask": 1}', waiting=True)
    record = store.run(run_id)
    assert record is not None and (record.status, record.waiting_seq) == ("waiting", seq)


def test_one_answer_per_question(store):
    """Only one answer to a waiting run's question is accepted; the rest are conflicts."""
    run_id = uuid.uuid4().hex
    store.create_run(_record(run_id))
    with pytest.raises(RunConflictError, match="not waiting"):
        store.post_event(run_id, '{"answer": 0}', answer=True)
    store.append_event(run_id, "event", '{"ask": 1}', waiting=True)
    first = store.post_event(run_id, '{"answer": 1}', answer=True)
    with pytest.raises(RunConflictError, match="not waiting"):
        store.post_event(run_id, '{"answer": 2}', answer=True)
    assert [(i.seq, i.body) for i in store.inbox(run_id)] == [(first, '{"answer": 1}')]
    record = store.run(run_id)
    assert record is not None and record.status == "running"
    assert store.post_event(run_id, '{"other": 1}') == first + 1  # plain events always go in


def test_concurrent_answers_have_one_winner(store):
    """Ten answers sent at once from ten threads: exactly one is accepted."""
    run_id = uuid.uuid4().hex
    store.create_run(_record(run_id))
    store.append_event(run_id, "event", '{"ask": 1}', waiting=True)
    results: list[str] = []
    barrier = threading.Barrier(10)

    def answer(i: int) -> None:
        barrier.wait()
        try:
            store.post_event(run_id, f'{{"answer": {i}}}', answer=True)
            results.append("ok")
        except RunConflictError:
            results.append("conflict")

    threads = [threading.Thread(target=answer, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["conflict"] * 9 + ["ok"]
    assert len(store.inbox(run_id)) == 1


def test_events_to_an_ended_or_unknown_run_are_refused(store):
    """An ended run takes no more events; neither does a run the store never saw."""
    run_id = uuid.uuid4().hex
    store.create_run(_record(run_id))
    store.set_status(run_id, "completed", result='"done"')
    with pytest.raises(RunConflictError, match="completed"):
        store.post_event(run_id, "{}")
    with pytest.raises(RunConflictError, match="not in the store"):
        store.post_event("unknown", "{}")


@pytest.mark.parametrize("ended", ["completed", "failed", "cancelled"])
def test_an_ended_run_never_changes_again(store, ended):
    """A late status write or end entry leaves an ended run's status, result and log alone."""
    run_id = uuid.uuid4().hex
    store.create_run(_record(run_id))
    store.append_event(run_id, "event", "{}")
    store.finish_run(run_id, ended, result='"kept"', end='{"status": "first"}')
    for status in ("interrupted", "running", "completed", "failed"):
        store.finish_run(run_id, status, result="late", error="late", end='{"late": 1}')
        store.set_status(run_id, status, result="late")
    record = store.run(run_id)
    assert record is not None and (record.status, record.result) == (ended, '"kept"')
    assert [(e.kind, e.body) for e in store.events(run_id)] == [
        ("event", "{}"),
        ("end", '{"status": "first"}'),
    ]


def test_resuming_reopens_a_stopped_run_but_never_a_completed_one(store):
    """acquire() (what a resume does first) makes an interrupted or failed run run again and
    leaves a completed one as it is."""
    stopped, failed, done = (uuid.uuid4().hex for _ in range(3))
    for run_id, status in ((stopped, "interrupted"), (failed, "failed"), (done, "completed")):
        store.create_run(_record(run_id))
        store.set_status(run_id, status, result='"r"', error="E: e")
        store.acquire(run_id)
    assert [store.run(r).status for r in (stopped, failed, done)] == [
        "running",
        "running",
        "completed",
    ]
    assert store.run(done).result == '"r"' and store.run(failed).error is None


def test_status_result_filters_and_delete(store):
    """set_status records the outcome; runs() filters and limits; delete forgets everything."""
    ids = [uuid.uuid4().hex for _ in range(3)]
    for i, run_id in enumerate(ids):
        store.create_run(_record(run_id))
        store.put(_checkpoint(run_id, 0))
        store.append_event(run_id, "event", "{}")
        time.sleep(0.002 * (i + 1))
    store.set_status(ids[0], "failed", error="ValueError: boom")
    store.set_status(ids[1], "completed", result="42")
    failed = store.run(ids[0])
    assert failed is not None and (failed.status, failed.error) == ("failed", "ValueError: boom")
    assert [r.run_id for r in store.runs(status="running")] == [ids[2]]
    assert [r.run_id for r in store.runs(workflow_name="Flow", limit=2)] == ids[1:]
    with pytest.raises(ValueError, match="Unknown run status 'bogus'"):
        store.set_status(ids[2], "bogus")
    store.delete(ids[2])
    assert store.run(ids[2]) is None
    assert store.list(ids[2]) == [] and store.events(ids[2]) == [] and store.inbox(ids[2]) == []


def test_state_changes_in_the_llama_index_layout(store):
    """The same rebuild when the untyped state sits under ``state_data._data`` (version 2)."""
    run_id = uuid.uuid4().hex

    def cp(seq: int, data: dict, changes: bool) -> Checkpoint:
        ctx = {"state": {"state_type": "DictState", "state_data": {"_data": data}}}
        return Checkpoint(
            f"{run_id}-{seq}", run_id, "Flow", "s", None, (), time.time(), ctx, seq,
            state_changes=changes,
        )  # fmt: skip

    store.create_run(_record(run_id))
    store.put(cp(0, {"a": "1"}, False))
    store.put(cp(1, {"b": "2", "a": None}, True))
    latest = store.latest(run_id)
    assert latest is not None
    assert latest.ctx_data["state"] == {
        "state_type": "DictState",
        "state_data": {"_data": {"b": "2"}},
    }
    assert [c.ctx_data["state"]["state_data"]["_data"] for c in store.list(run_id)] == [
        {"a": "1"},
        {"b": "2"},
    ]


def test_limits_mean_the_same_everywhere(store):
    """limit=0 gives no runs and no events; a negative limit is refused with the fix."""
    run_id = uuid.uuid4().hex
    store.create_run(_record(run_id))
    store.append_event(run_id, "event", "{}")
    assert store.runs(limit=0) == []
    assert store.events(run_id, limit=0) == []
    assert [r.run_id for r in store.runs(limit=5)] == [run_id]
    with pytest.raises(ValueError, match=r"limit=-1 is negative; pass a count, or None"):
        store.runs(limit=-1)
    with pytest.raises(ValueError, match=r"limit=-2 is negative; pass a count, or None"):
        store.events(run_id, limit=-2)


def test_a_deleted_run_checkpointed_again_is_recorded_again(store):
    """After delete, a checkpoint of the same run id records the run again as running."""
    run_id = uuid.uuid4().hex
    store.create_run(_record(run_id))
    store.put(_checkpoint(run_id, 0))
    store.delete(run_id)
    store.put(_checkpoint(run_id, 0))
    record = store.run(run_id)
    assert record is not None and record.status == "running"
    assert [c.seq for c in store.list(run_id)] == [0]


def test_refusals_read_the_same_on_every_backend(store):
    """A taken run id, a taken checkpoint seq and an unknown checkpoint name the fix alike."""
    run_id = uuid.uuid4().hex
    store.create_run(_record(run_id))
    with pytest.raises(RunConflictError, match=r"exists already in .*; start it with a new run_id"):
        store.create_run(_record(run_id))
    store.put(_checkpoint(run_id, 0))
    with pytest.raises(
        CheckpointError,
        match=rf"Run {run_id} already has checkpoint {run_id}-0 or seq 0; .* the run's next seq",
    ):
        store.put(_checkpoint(run_id, 0))
    with pytest.raises(CheckpointError, match=r"No checkpoint 'gone' in .*store.list\(run_id\)"):
        store.get("gone")


def test_a_checkpoint_is_found_by_a_made_or_a_given_id(store):
    """get() finds the checkpointer's "<run_id>:<seq>" ids and ids of any other form; an id
    that is another checkpoint's made id is refused, and a given id is unique."""
    run_id = uuid.uuid4().hex
    made = replace(_checkpoint(run_id, 1), id=checkpoint_id(run_id, 1))
    given = _checkpoint(run_id, 2)  # "<run_id>-2"
    padded = replace(_checkpoint(run_id, 3), id=f"{run_id}:03")  # not the made text: given
    colons = replace(_checkpoint("a:b:7", 0), id=checkpoint_id("a:b:7", 0))
    for checkpoint in (made, given, padded, colons):
        store.put(checkpoint)
    assert made.id == f"{run_id}:1"
    assert [store.get(c.id).seq for c in (made, given, padded)] == [1, 2, 3]
    assert store.get("a:b:7:0").run_id == "a:b:7"
    for missing in (f"{run_id}:4", f"{run_id}:01", f"{run_id}-1", "a:b:7:1"):
        with pytest.raises(CheckpointError, match="No checkpoint"):
            store.get(missing)
    with pytest.raises(
        CheckpointError,
        match=rf"Checkpoint id '{run_id}:1' names checkpoint 1 of run '{run_id}', but it is "
        rf"checkpoint 5 of run '{run_id}'; .* give it '{run_id}:5' or an id of another form\.",
    ):
        store.put(replace(_checkpoint(run_id, 5), id=f"{run_id}:1"))
    with pytest.raises(CheckpointError, match=rf"already has checkpoint {run_id}-2 or seq 6"):
        store.put(replace(_checkpoint(run_id, 6), id=given.id))
    assert [c.id for c in store.list(run_id)] == [made.id, given.id, padded.id]
    assert store.latest(run_id) == padded


def columns_of(store) -> dict[str, list[str]]:
    """Each run-store table's columns, in order, as the backend's catalogue has them."""
    found = {}
    for table in TABLES:
        if isinstance(store, SqliteCheckpointStore):
            rows = store._query(f"PRAGMA table_info({table})", ())
            found[table] = [row[1] for row in rows]
        else:
            rows = store._query(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                "AND table_schema = current_schema() ORDER BY ordinal_position",
                (table,),
            )
            found[table] = [row[0] for row in rows]
    return found


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_every_sql_backend_has_the_one_schema(backend, request, tmp_path):
    """A fresh SQLite file and a PostgreSQL database hold the same columns in the same order
    (PostgreSQL has two more, last: the lease's fencing token and the id of the claim or
    release that last changed the lease, which only replicas use)."""
    wanted = {table: [name for name, _ in columns] for table, columns in TABLES.items()}
    if backend == "postgres":
        wanted["checkpoint_runs"] += ["lease_token", "lease_change", "lease_since"]
    where = tmp_path / "runs.db" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    with open_store(where) as store:
        assert columns_of(store) == wanted


def test_the_end_of_a_run_is_written_with_its_status(store):
    """finish_run(end=) appends the run's last log entry and records how it ended."""
    store.create_run(_record("r"))
    store.append_event("r", "event", '{"n": 1}')
    store.finish_run("r", "completed", result='"ok"', end='{"status": "completed"}')
    assert [(e.seq, e.kind, e.body) for e in store.events("r")] == [
        (1, "event", '{"n": 1}'),
        (2, "end", '{"status": "completed"}'),
    ]
    record = store.run("r")
    assert record is not None and (record.status, record.result) == ("completed", '"ok"')


@pytest.fixture(params=["sqlite", "postgres"])
def durable_store(request, tmp_path):
    """A fresh, empty store of each backend that outlives its process (what a crash can split)."""
    if request.param == "sqlite":
        s = open_store(tmp_path / "runs.db")
    else:
        s = open_store(request.getfixturevalue("postgres_url"))
    yield s
    s.close()


def _refuse_completing(request, tmp_path) -> None:
    """Make the database itself refuse to mark a run completed (a trigger), as a crash would."""
    if request.node.callspec.params["durable_store"] == "sqlite":
        import sqlite3

        with sqlite3.connect(tmp_path / "runs.db") as conn:
            conn.execute(
                "CREATE TRIGGER refuse BEFORE UPDATE ON checkpoint_runs "
                "WHEN NEW.status = 'completed' BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
    else:
        import psycopg

        with psycopg.connect(request.getfixturevalue("postgres_url"), autocommit=True) as conn:
            conn.execute(
                "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN "
                "IF NEW.status = 'completed' THEN RAISE EXCEPTION 'refused'; END IF; "
                "RETURN NEW; END $$ LANGUAGE plpgsql"
            )
            conn.execute(
                "CREATE TRIGGER refuse BEFORE UPDATE ON checkpoint_runs "
                "FOR EACH ROW EXECUTE FUNCTION refuse()"
            )


def test_a_finish_that_fails_writes_neither_its_status_nor_its_end(
    durable_store, request, tmp_path
):
    """The status and the end entry commit together or not at all (durable backends)."""
    store = durable_store
    store.create_run(_record("r"))
    store.append_event("r", "event", "{}")
    _refuse_completing(request, tmp_path)
    with pytest.raises(CheckpointError):
        store.finish_run("r", "completed", result='"ok"', end='{"status": "completed"}')
    assert [e.kind for e in store.events("r")] == ["event"]
    record = store.run("r")
    assert record is not None and record.status == "running"


def test_an_event_log_alone_does_not_make_a_run(store):
    """Events logged for a run never recorded are kept, but no run appears until one is."""
    store.append_event("bare", "event", "{}", waiting=True)
    assert [e.seq for e in store.events("bare")] == [1]
    assert store.run("bare") is None and store.runs() == []
    with pytest.raises(RunConflictError, match="not in the store"):
        store.post_event("bare", "{}")
    store.set_status("bare", "completed")  # nothing to update
    assert store.run("bare") is None
    store.create_run(_record("bare"))
    record = store.run("bare")
    assert record is not None and record.status == "running"
    assert [e.seq for e in store.events("bare")] == [1]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_closed_sql_store_says_so(backend, request, tmp_path):
    """Reading a closed SQL store is refused with the fix: create a new store of that kind."""
    where = tmp_path / "runs.db" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    store = open_store(where)
    store.close()
    name = type(store).__name__
    with pytest.raises(CheckpointError, match=rf"is closed.*; create a new {name}\.$"):
        store.runs()
