"""Checkpoints: stores (in memory, SQLite) and the WorkflowCheckpointer."""

import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
from batonflow.core.checkpoints import (
    Checkpoint,
    CheckpointStore,
    InMemoryCheckpointStore,
    RunRecord,
    SqliteCheckpointStore,
    WorkflowCheckpointer,
)
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
        ("checkpoints", 3)
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
            7,
            r"holds checkpoints of a newer batonflow \(schema version 7, this one reads up to 3\)",
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


class JokeEvent(Event):
    joke: str


class Calls:
    def __init__(self) -> None:
        self.names: list[str] = []


class JokeFlow(Workflow):
    """The seed's JokeFlow with a fake LLM (counts the steps it runs)."""

    def __init__(self, calls: Calls, **kw) -> None:
        super().__init__(**kw)
        self.calls = calls

    @step
    async def generate_joke(self, ctx: Context, ev: StartEvent) -> JokeEvent:
        self.calls.names.append("generate_joke")
        await ctx.store.set("topic", ev.topic)
        return JokeEvent(joke=f"a joke about {ev.topic}")

    @step
    async def critique_joke(self, ctx: Context, ev: JokeEvent) -> StopEvent:
        self.calls.names.append("critique_joke")
        topic = await ctx.store.get("topic")
        return StopEvent(result=f"critique of {ev.joke!r} on {topic}")


async def test_seed_checkpoint_example() -> None:
    """The seed: run, list checkpoints, run_from the first one (only later steps re-run)."""
    calls = Calls()
    w = JokeFlow(calls, timeout=60, verbose=False)
    w_cptr = WorkflowCheckpointer(workflow=w)
    handler = w_cptr.run(topic="Pirates")
    first_result = await handler

    cps = w_cptr.checkpoints[handler.run_id]
    assert [c.step_name for c in cps] == ["generate_joke", "critique_joke"]
    assert cps[0].input_event_type.endswith(":StartEvent")
    assert cps[0].output_event_types == (f"{__name__}:JokeEvent",)
    assert cps[0].created_at <= cps[1].created_at and [c.seq for c in cps] == [1, 2]

    calls.names.clear()
    ckpt = w_cptr.checkpoints[handler.run_id][0]
    handler2 = w_cptr.run_from(topic="Ships", checkpoint=ckpt)
    assert await handler2 == first_result  # continues the Pirates run: the state came back
    assert calls.names == ["critique_joke"]
    assert handler2.run_id != handler.run_id
    assert [c.step_name for c in w_cptr.checkpoints[handler2.run_id]] == ["critique_joke"]


async def test_compat_field_names() -> None:
    """LlamaIndex's Checkpoint field names are available."""
    w_cptr = WorkflowCheckpointer(workflow=JokeFlow(Calls()))
    handler = w_cptr.run(topic="x")
    await handler
    cp = w_cptr.checkpoints[handler.run_id][0]
    assert (cp.id_, cp.last_completed_step, cp.ctx_state) == (cp.id, cp.step_name, cp.ctx_data)


async def test_disable_and_enable_checkpoint() -> None:
    """A disabled step writes no checkpoint until enabled again."""
    w_cptr = WorkflowCheckpointer(workflow=JokeFlow(Calls()))
    w_cptr.disable_checkpoint("generate_joke")
    assert w_cptr.enabled_checkpoints == {"critique_joke"}
    h1 = w_cptr.run(topic="a")
    await h1
    assert [c.step_name for c in w_cptr.checkpoints[h1.run_id]] == ["critique_joke"]
    w_cptr.enable_checkpoint("generate_joke")
    h2 = w_cptr.run(topic="b")
    await h2
    assert len(w_cptr.checkpoints[h2.run_id]) == 2


async def test_disabled_steps_argument_and_unknown_step() -> None:
    """disabled_steps= works; an unknown step name lists the real ones."""
    w_cptr = WorkflowCheckpointer(workflow=JokeFlow(Calls()), disabled_steps=["critique_joke"])
    assert w_cptr.enabled_checkpoints == {"generate_joke"}
    with pytest.raises(
        CheckpointError, match=r"JokeFlow has no step 'nope'; its steps are: .*generate_joke"
    ):
        w_cptr.disable_checkpoint("nope")


async def test_filter_checkpoints() -> None:
    """filter_checkpoints combines run, step and event-type criteria (classes or names)."""
    w_cptr = WorkflowCheckpointer(workflow=JokeFlow(Calls()))
    h1 = w_cptr.run(topic="a")
    await h1
    h2 = w_cptr.run(topic="b")
    await h2
    assert len(w_cptr.filter_checkpoints()) == 4
    assert len(w_cptr.filter_checkpoints(run_id=h1.run_id)) == 2
    by_step = w_cptr.filter_checkpoints(last_completed_step="critique_joke")
    assert {c.run_id for c in by_step} == {h1.run_id, h2.run_id}
    assert all(
        c.step_name == "generate_joke"
        for c in w_cptr.filter_checkpoints(input_event_type=StartEvent)
    )
    assert len(w_cptr.filter_checkpoints(output_event_type=JokeEvent)) == 2
    assert len(w_cptr.filter_checkpoints(output_event_type="JokeEvent")) == 2
    assert len(w_cptr.filter_checkpoints(run_id=h2.run_id, input_event_type="JokeEvent")) == 1
    assert w_cptr.filter_checkpoints(input_event_type="StopEvent") == []


async def test_only_checkpointer_runs_are_recorded() -> None:
    """A run started on the workflow directly writes no checkpoint."""
    w = JokeFlow(Calls())
    w_cptr = WorkflowCheckpointer(workflow=w)
    handler = w.run(topic="direct")
    await handler
    assert handler.run_id not in w_cptr.checkpoints and w_cptr.store.runs() == []


class FlakyEvent(Event):
    n: int


class Flaky(Workflow):
    """Step two fails while ``broken`` is set (a stand-in for a crash)."""

    def __init__(self, calls: Calls, broken: bool, **kw) -> None:
        super().__init__(**kw)
        self.calls = calls
        self.broken = broken

    @step
    async def one(self, ctx: Context, ev: StartEvent) -> FlakyEvent:
        self.calls.names.append("one")
        await ctx.store.set("seen", [ev.n])
        return FlakyEvent(n=ev.n + 1)

    @step
    async def two(self, ctx: Context, ev: FlakyEvent) -> StopEvent:
        self.calls.names.append("two")
        if self.broken:
            raise ConnectionError("network down")
        return StopEvent(result={"n": ev.n, "seen": await ctx.store.get("seen")})


async def test_failed_run_is_recorded_and_resumes_durably(tmp_path: Path) -> None:
    """A failed run is recorded; a new checkpointer on the same file resumes it after step one."""
    path = tmp_path / "runs.db"
    calls = Calls()
    with SqliteCheckpointStore(path) as store:
        cptr = WorkflowCheckpointer(workflow=Flaky(calls, broken=True), store=store)
        handler = cptr.run(n=1, run_id="job-1")
        with pytest.raises(ConnectionError):
            await handler
        record = store.run("job-1")
        assert record.status == "failed" and record.error == "ConnectionError: network down"
    calls.names.clear()
    with SqliteCheckpointStore(path) as store:
        cptr = WorkflowCheckpointer(workflow=Flaky(calls, broken=False), store=store)
        handler = cptr.resume("job-1")
        assert handler.run_id == "job-1"
        assert await handler == {"n": 2, "seen": [1]}
        assert calls.names == ["two"]
        assert store.run("job-1").status == "completed"
        assert json.loads(store.run("job-1").result) == {"n": 2, "seen": [1]}
        assert [c.seq for c in store.list("job-1")] == [1, 2]  # the run record holds its start


async def test_run_dying_in_first_step_resumes_from_start_snapshot() -> None:
    """The run's record lets a run that never completed a step resume (StartEvent kept)."""

    class Boom(Workflow):
        broken = True

        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            if self.broken:
                raise RuntimeError("died")
            return StopEvent(result=ev.topic)

    w = Boom()
    cptr = WorkflowCheckpointer(workflow=w)
    handler = cptr.run(topic="kept")
    with pytest.raises(RuntimeError):
        await handler
    assert cptr.checkpoints[handler.run_id] == []  # no step completed
    w.broken = False
    assert await cptr.resume(handler.run_id) == "kept"


async def test_resume_completed_run_returns_result_without_rerunning() -> None:
    """Resuming a finished run gives its result again and runs no step."""
    calls = Calls()
    cptr = WorkflowCheckpointer(workflow=JokeFlow(calls))
    handler = cptr.run(topic="t")
    result = await handler
    calls.names.clear()
    assert await cptr.resume(handler.run_id) == result
    assert calls.names == []


async def test_resume_unknown_run() -> None:
    """Resuming a run the store does not know is a CheckpointError."""
    cptr = WorkflowCheckpointer(workflow=JokeFlow(Calls()))
    with pytest.raises(
        CheckpointError,
        match=r"No checkpoint for run 'ghost' .*pass the store the run was recorded in",
    ):
        cptr.resume("ghost")


async def test_checkpoint_of_another_workflow_is_refused() -> None:
    """run_from with a checkpoint recorded by another workflow names both."""
    src = WorkflowCheckpointer(workflow=JokeFlow(Calls()))
    handler = src.run(topic="t")
    await handler
    other = WorkflowCheckpointer(workflow=Flaky(Calls(), broken=False))
    with pytest.raises(
        CheckpointError,
        match=r"recorded by workflow 'JokeFlow', not 'Flaky'; continue it with a JokeFlow instance",
    ):
        other.run_from(checkpoint=src.checkpoints[handler.run_id][0])


class ChangedJokeFlow(Workflow):
    """Same workflow name as JokeFlow, but critique_joke was renamed."""

    @step
    async def generate_joke(self, ev: StartEvent) -> JokeEvent:
        return JokeEvent(joke="j")

    @step
    async def review_joke(self, ev: JokeEvent) -> StopEvent:
        return StopEvent(result="r")


async def test_checkpoint_of_changed_workflow_names_missing_step() -> None:
    """A checkpoint whose next step no longer exists says which step is missing."""
    src = WorkflowCheckpointer(workflow=JokeFlow(Calls()))
    handler = src.run(topic="t")
    await handler
    changed = WorkflowCheckpointer(workflow=ChangedJokeFlow(workflow_name="JokeFlow"))
    with pytest.raises(CheckpointError, match=r"cannot be restored: .*'critique_joke'"):
        changed.run_from(checkpoint=src.checkpoints[handler.run_id][0])


async def test_checkpointer_uses_given_store_and_serializer(tmp_path: Path) -> None:
    """store= and checkpoint_serializer= are used (ctx_data is plain JSON)."""
    from batonflow.core.serialization import PickleSerializer

    store = InMemoryCheckpointStore()
    cptr = WorkflowCheckpointer(
        workflow=JokeFlow(Calls()), store=store, checkpoint_serializer=PickleSerializer()
    )
    handler = cptr.run(topic="t")
    await handler
    assert cptr.serializer.__class__ is PickleSerializer
    cp = store.latest(handler.run_id)
    assert json.loads(json.dumps(cp.ctx_data)) == cp.ctx_data
    assert cp.ctx_data["serializer"].endswith("PickleSerializer")


async def test_cancelled_run_is_recorded() -> None:
    """A cancelled run ends with status 'cancelled'."""
    import asyncio

    class Slow(Workflow):
        @step
        async def first(self, ev: StartEvent) -> JokeEvent:
            return JokeEvent(joke="j")

        @step
        async def wait(self, ev: JokeEvent) -> StopEvent:
            await asyncio.sleep(30)
            return StopEvent(result=None)

    cptr = WorkflowCheckpointer(workflow=Slow())
    handler = cptr.run()
    while not cptr.checkpoints[handler.run_id]:
        await asyncio.sleep(0.001)
    await handler.cancel_run()
    record = cptr.store.run(handler.run_id)
    assert record.status == "cancelled"


class Chunk(Event):
    index: int
    text: str


class Scored(Event):
    index: int
    score: int


class Again(Event):
    round: int


class Pipeline(Workflow):
    """Fan-out, join, state and a loop: every kind of in-flight data a checkpoint must keep."""

    def __init__(self, calls: Calls, **kw) -> None:
        super().__init__(**kw)
        self.calls = calls

    @step
    async def split(self, ctx: Context, ev: StartEvent | Again) -> Chunk | None:
        self.calls.names.append("split")
        round_ = ev.round if isinstance(ev, Again) else 0
        words = (await ctx.store.get("text", default=None)) or ev.text
        await ctx.store.set("text", words)
        await ctx.store.set("round", round_)
        for i, word in enumerate(words.split()):
            ctx.send_event(Chunk(index=i, text=word))
        return None

    @step(num_workers=2)
    async def score(self, ctx: Context, ev: Chunk) -> Scored:
        self.calls.names.append("score")
        async with ctx.store.edit_state() as state:
            state["scored"] = state.get("scored", 0) + 1
        return Scored(index=ev.index, score=len(ev.text) * (1 + await ctx.store.get("round")))

    @step
    async def total(self, ctx: Context, ev: Scored) -> Again | StopEvent | None:
        got = ctx.collect_events(ev, [Scored] * 3)
        if got is None:
            return None
        self.calls.names.append("total")
        round_ = await ctx.store.get("round")
        if round_ < 1:
            return Again(round=round_ + 1)
        return StopEvent(
            result={"scores": [e.score for e in got], "scored": await ctx.store.get("scored")}
        )


async def test_every_checkpoint_continues_to_the_same_result() -> None:
    """Restoring any checkpoint in a fresh workflow and continuing gives the same result."""
    calls = Calls()
    cptr = WorkflowCheckpointer(workflow=Pipeline(calls))
    handler = cptr.run(text="one three eleven")
    expected = await handler
    full_run = list(calls.names)
    snapshots = cptr.store.list(handler.run_id)
    assert [c.seq for c in snapshots] == list(range(1, len(snapshots) + 1))
    # one per step execution: 2 split, 6 score, 6 total
    assert len(snapshots) == 2 + 6 + 6
    remaining: list[int] = []
    for cp in snapshots:
        calls.names.clear()
        fresh = WorkflowCheckpointer(workflow=Pipeline(calls))
        assert await fresh.run_from(checkpoint=cp) == expected, cp.step_name
        remaining.append(len(calls.names))
    # Nothing before a checkpoint runs again: the work left shrinks to nothing.
    assert remaining[0] == len(full_run) - 1 and remaining[-1] == 0
    assert remaining == sorted(remaining, reverse=True)


async def test_concurrent_runs_share_one_sqlite_store(tmp_path: Path) -> None:
    """Concurrent checkpointed runs keep their own consecutive checkpoints in one file."""
    import asyncio

    with SqliteCheckpointStore(tmp_path / "runs.db") as store:
        cptr = WorkflowCheckpointer(workflow=Pipeline(Calls()), store=store)
        handlers = [cptr.run(text=f"a bb ccc{i}") for i in range(10)]
        results = await asyncio.gather(*handlers)
        assert [r["scores"][:2] for r in results] == [[2, 4]] * 10
        for h in handlers:
            seqs = [c.seq for c in store.list(h.run_id)]
            assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) > 5
            assert store.run(h.run_id).status == "completed"


async def test_detach_stops_recording() -> None:
    """After detach() the workflow's runs write no checkpoints."""
    w = JokeFlow(Calls())
    cptr = WorkflowCheckpointer(workflow=w)
    cptr.detach()
    handler = cptr.run(topic="t")
    await handler
    assert cptr.checkpoints[handler.run_id] == []
    assert cptr.store.list(handler.run_id) == []  # the run's record holds its start event
    assert cptr.store.run(handler.run_id).start_event is not None


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
