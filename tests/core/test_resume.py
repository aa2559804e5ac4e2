"""Context snapshots: to_dict/from_dict round trips, resume, bad payloads, step boundaries."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from batonflow.core import (
    Context,
    ContextSerdeError,
    Event,
    SerializationError,
    StartEvent,
    StepBoundary,
    StopEvent,
    Workflow,
    step,
)


class Split(Event):
    part: int


class PartDone(Event):
    part: int
    value: int


class Summed(Event):
    total: int
    rounds: int


class Pipeline(Workflow):
    """Fan-out with send_event, a collect_events join, state, and a loop: every kind of queue."""

    @step
    async def start(self, ctx: Context, ev: StartEvent) -> Split | None:
        await ctx.store.set("seen", [])
        for part in range(ev.parts):
            ctx.send_event(Split(part=part))
        return None

    @step(num_workers=2)
    async def work(self, ctx: Context, ev: Split) -> PartDone:
        async with ctx.store.edit_state() as state:
            state["seen"] = [*state["seen"], ev.part]
        return PartDone(part=ev.part, value=ev.part * 10)

    @step
    async def join(self, ctx: Context, ev: PartDone) -> Summed | None:
        parts = ctx.collect_events(ev, [PartDone] * 3)
        if parts is None:
            return None
        return Summed(total=sum(p.value for p in parts), rounds=0)

    @step
    async def again(self, ctx: Context, ev: Summed) -> Summed | StopEvent:
        if ev.rounds < 3:
            return Summed(total=ev.total + 1, rounds=ev.rounds + 1)
        seen = sorted(await ctx.store.get("seen"))
        return StopEvent(result={"total": ev.total, "seen": seen})


EXPECTED = {"total": 33, "seen": [0, 1, 2]}


async def test_snapshot_at_every_step_boundary_resumes_to_the_same_result() -> None:
    """Restore each step-boundary snapshot in a fresh workflow: every one ends the same."""
    w = Pipeline()
    snapshots: list[tuple[str, dict[str, Any]]] = []

    def listener(boundary: StepBoundary) -> None:
        data = boundary.ctx.to_dict()
        snapshots.append((boundary.step_name, json.loads(json.dumps(data))))

    w.add_step_listener(listener)
    assert await w.run(parts=3) == EXPECTED
    steps = [name for name, _ in snapshots]
    assert steps.count("work") == 3 and steps.count("join") == 3 and steps.count("again") == 4
    for name, data in snapshots:
        fresh = Pipeline()
        ctx = Context.from_dict(fresh, data)
        if data["is_running"]:
            assert await fresh.run(ctx=ctx) == EXPECTED, f"resume after {name}"


async def test_boundary_snapshot_holds_just_produced_events() -> None:
    """At a boundary the step's outputs are queued, and its own input is no longer in progress."""
    w = Pipeline()
    seen: list[dict[str, Any]] = []

    def listener(boundary: StepBoundary) -> None:
        if boundary.step_name == "join" and boundary.output_events:
            seen.append(boundary.ctx.to_dict())

    w.add_step_listener(listener)
    await w.run(parts=3)
    (data,) = seen
    assert [q["step"] for q in data["queue"]] == ["again"]
    assert all(p["step"] != "join" for p in data["in_progress"])


async def test_listener_error_fails_the_run() -> None:
    """A listener that raises (a checkpoint that cannot be written) fails the run."""
    w = Pipeline()

    def listener(boundary: StepBoundary) -> None:
        raise OSError("disk full")

    w.add_step_listener(listener)
    with pytest.raises(OSError, match="disk full"):
        await w.run(parts=3)
    w.remove_step_listener(listener)
    assert await w.run(parts=3) == EXPECTED


async def test_bound_method_listener_can_be_removed() -> None:
    """A bound method (a new object on every attribute access) is removed by equality."""

    class Recorder:
        def __init__(self) -> None:
            self.steps: list[str] = []

        def on_step(self, boundary: StepBoundary) -> None:
            self.steps.append(boundary.step_name)

    w = Pipeline()
    rec = Recorder()
    w.add_step_listener(rec.on_step)
    w.add_step_listener(rec.on_step)  # added once
    assert await w.run(parts=3) == EXPECTED
    seen = len(rec.steps)
    assert rec.steps.count("work") == 3  # called once per boundary
    w.remove_step_listener(rec.on_step)
    assert await w.run(parts=3) == EXPECTED
    assert len(rec.steps) == seen


async def test_to_dict_json_file_from_dict(tmp_path: Path) -> None:
    """Seed 000: save the context to a JSON file, restore it, keep counting."""

    class Counter(Workflow):
        @step
        async def bump(self, ctx: Context, ev: StartEvent) -> StopEvent:
            count = await ctx.store.get("count", default=0) + 1
            await ctx.store.set("count", count)
            return StopEvent(result=count)

    w = Counter()
    handler = w.run()
    assert await handler == 1
    state = await handler.ctx.to_dict()  # the seed awaits it; the plain call works too
    path = tmp_path / "workflow_state.json"
    with open(path, "w") as f:
        json.dump(state, f)
    with open(path) as f:
        state = json.load(f)
    new_ctx = Context.from_dict(Counter(), state)
    assert await w.run(ctx=new_ctx) == 2


async def test_finished_context_starts_a_new_run_with_the_state() -> None:
    """A restored context of a finished run starts a new run (new StartEvent) with its state."""

    class Counter(Workflow):
        @step
        async def bump(self, ctx: Context, ev: StartEvent) -> StopEvent:
            count = await ctx.store.get("count", default=0) + ev.by
            await ctx.store.set("count", count)
            return StopEvent(result=count)

    w = Counter()
    handler = w.run(by=2)
    await handler
    data = handler.ctx.to_dict()
    assert data["is_running"] is False
    ctx = Context.from_dict(w, data)
    assert await w.run(ctx=ctx, by=5) == 7


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        pytest.param([], "expected a dict, got list", id="not-a-dict"),
        pytest.param({"hello": 1}, "not a batonflow context snapshot", id="foreign"),
        pytest.param({"format": "batonflow.context", "version": 99}, "version 99", id="version"),
        pytest.param({"format": "batonflow.context", "version": 1}, "corrupt", id="truncated"),
    ],
)
async def test_bad_payloads_raise_context_serde_error(payload: Any, match: str) -> None:
    """A corrupt or foreign dict raises ContextSerdeError and says what to pass."""
    with pytest.raises(ContextSerdeError, match=match):
        Context.from_dict(Pipeline(), payload)


async def test_corrupt_event_is_rejected_and_context_untouched() -> None:
    """A snapshot with an undecodable event fails without half-restoring the context."""
    handler = Pipeline().run(parts=3)
    await handler
    data = json.loads(json.dumps(handler.ctx.to_dict()))
    data["is_running"] = True
    data["queue"] = [{"step": "work", "event": "{not json", "origin": None, "execution_id": None}]
    w = Pipeline()
    ctx = Context(w)
    await ctx.store.set("keep", 1)
    from batonflow.core.engine._snapshot import restore_into

    with pytest.raises(ContextSerdeError):
        restore_into(ctx, data, None)
    assert await ctx.store.get("keep") == 1
    assert ctx._snapshot is None


async def test_snapshot_of_changed_workflow_names_the_missing_step() -> None:
    """Restoring into a workflow without the snapshot's step names that step."""
    gate = asyncio.Event()

    class Two(Workflow):
        @step
        async def first(self, ev: StartEvent) -> Split:
            return Split(part=1)

        @step
        async def second(self, ev: Split) -> StopEvent:
            await gate.wait()
            return StopEvent()

    class Other(Workflow):
        @step
        async def first(self, ev: StartEvent) -> StopEvent:
            return StopEvent()

    handler = Two().run()
    await asyncio.sleep(0.01)
    data = handler.ctx.to_dict()
    gate.set()
    await handler
    with pytest.raises(ContextSerdeError, match=r"step 'second', which Other does not have"):
        Context.from_dict(Other(), data)


async def test_unserializable_state_value_names_the_key() -> None:
    """A value the serializer cannot encode fails to_dict with its key in the message."""

    class W(Workflow):
        @step
        async def only(self, ctx: Context, ev: StartEvent) -> StopEvent:
            await ctx.store.set("lock", threading.Lock())
            return StopEvent()

    handler = W().run()
    await handler
    with pytest.raises(SerializationError, match="lock"):
        handler.ctx.to_dict()


async def test_seed_000_style_context_of_class_and_instance_from_dict(tmp_path: Path) -> None:
    """``Context(WorkflowClass)`` then ``await new_ctx.from_dict(state)`` restores the state."""

    class Counter(Workflow):
        @step
        async def bump(self, ctx: Context, ev: StartEvent) -> StopEvent:
            count = await ctx.store.get("count", default=0) + 1
            await ctx.store.set("count", count)
            return StopEvent(result=count)

    w = Counter()
    handler = w.run()
    await handler
    state = await handler.ctx.to_dict()
    path = tmp_path / "workflow_state.json"
    path.write_text(json.dumps(state))
    new_ctx = Context(Counter)
    await new_ctx.from_dict(json.loads(path.read_text()))
    assert await new_ctx.store.get("count") == 1
    assert await w.run(ctx=new_ctx) == 2


async def test_strict_state_refuses_unencodable_values_at_set() -> None:
    """``Workflow(strict_state=True)``: ``ctx.store.set`` of an unencodable value fails at once."""

    class W(Workflow):
        @step
        async def only(self, ctx: Context, ev: StartEvent) -> StopEvent:
            with pytest.raises(SerializationError, match="lock"):
                await ctx.store.set("lock", threading.Lock())
            await ctx.store.set("fine", {"a": [1, 2]})
            return StopEvent(result=await ctx.store.get("fine"))

    assert await W(strict_state=True).run() == {"a": [1, 2]}


async def test_restored_context_round_trips_before_resuming() -> None:
    """A restored, not yet resumed context writes the same snapshot again (plus sent events)."""
    from batonflow.core import HumanResponseEvent, InputRequiredEvent

    class Ask(Workflow):
        @step
        async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
            answer = await ctx.wait_for_event(
                HumanResponseEvent, waiter_event=InputRequiredEvent(prefix="?")
            )
            return StopEvent(result=answer.response)

    handler = Ask().run()
    await asyncio.sleep(0.01)
    first = json.loads(json.dumps(handler.ctx.to_dict()))
    await handler.cancel_run()
    restored = Context.from_dict(Ask(), first)
    again = json.loads(json.dumps(restored.to_dict()))
    assert again["in_progress"] == first["in_progress"]
    assert again["waiters"] == first["waiters"]
    restored.send_event(HumanResponseEvent(response="queued"))
    third = restored.to_dict()
    assert third["queue"][-1]["external"] is True
    w = Ask()
    final = Context.from_dict(w, json.loads(json.dumps(third)))
    assert await w.run(ctx=final) == "queued"
