"""The WorkflowCheckpointer: recording a run's checkpoints, continuing and resuming from them."""

import json
from pathlib import Path

import pytest
from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
from batonflow.core.checkpoints import (
    InMemoryCheckpointStore,
    SqliteCheckpointStore,
    WorkflowCheckpointer,
)
from batonflow.core.errors import CheckpointError, IncompatibleRunError


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
    """A checkpoint whose next step no longer exists says which step is missing (checked
    before anything runs: IncompatibleRunError, a CheckpointError)."""
    src = WorkflowCheckpointer(workflow=JokeFlow(Calls()))
    handler = src.run(topic="t")
    await handler
    changed = WorkflowCheckpointer(workflow=ChangedJokeFlow(workflow_name="JokeFlow"))
    with pytest.raises(
        IncompatibleRunError, match=r"cannot continue with this code.*step 'critique_joke'"
    ):
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


async def test_run_from_on_a_replaced_workflow_lists_its_checkpoints() -> None:
    """``cptr.workflow = JokeFlow()`` then ``run_from``: the new run lists the steps it ran
    (LlamaIndex's checkpointing notebook), and later runs are recorded as well."""
    calls = Calls()
    cptr = WorkflowCheckpointer(JokeFlow(calls))
    first = cptr.run(topic="chemistry")
    await first
    (after_joke,) = cptr.filter_checkpoints(last_completed_step="generate_joke")
    cptr.workflow = JokeFlow(calls)
    again = cptr.run_from(checkpoint=after_joke)
    assert await again == "critique of 'a joke about chemistry' on chemistry"
    assert [c.last_completed_step for c in cptr.checkpoints[again.run_id]] == ["critique_joke"]
    later = cptr.run(topic="biology")
    await later
    assert len(cptr.checkpoints[later.run_id]) == 2
    cptr.detach()
    assert cptr.workflow._listeners == ()
