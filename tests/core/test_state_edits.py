"""A state key that grows is checkpointed as the edit of its previous value, on every backend.

A durable run's checkpoint holds only the state keys its step changed; a key that changed is
stored as ``[head, tail, middle]`` against the text the reader rebuilds for the previous
checkpoint when that keeps most of it (``core/durable/_state_extensions.py``, ``state_mode``
2). These tests run random edit sequences durably and read every checkpoint back (``list``,
``get``, ``latest``, forks and ``run_from`` at each of them), comparing the state with the one
each step left, text for text; and they read the stored bytes to show that a list appended to
at every step stores each item once.
"""

from __future__ import annotations

import random

import pytest
from batonflow.core import (
    Context,
    Event,
    StartEvent,
    StopEvent,
    StoreCorruptError,
    Workflow,
    WorkflowCheckpointer,
    step,
)
from batonflow.core.durable._records import Checkpoint, state_values
from batonflow.core.durable._state_extensions import MIN_KEPT, edit, edited
from batonflow.core.durable._store import CheckpointStore
from batonflow.core.state import InMemoryStateStore

ITEM = "an item of the log, long enough to count (é, 😀), " * 2


class Turn(Event):
    """One more edit to make."""

    n: int


class RandomEdits(Workflow):
    """Makes ``steps`` random edits of its untyped state, one per step (seeded by ``seed``);
    ``self.left`` holds the encoded state each step left, by step number."""

    def __init__(self, seed: int, steps: int, fail_at: int | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.seed, self.steps, self.fail_at = seed, steps, fail_at
        self.left: dict[int, dict[str, str]] = {}

    @step
    async def begin(self, ctx: Context, ev: StartEvent) -> Turn:
        await ctx.store.set("log", [])
        await ctx.store.set("doc", {"title": "t", "parts": {}})
        return Turn(n=0)

    @step
    async def turn(self, ctx: Context, ev: Turn) -> Turn | StopEvent:
        if ev.n == self.fail_at:
            self.fail_at = None  # once: the resumed run goes on
            raise RuntimeError("the step failed")
        await _random_edit(ctx, random.Random(f"{self.seed}-{ev.n}"), ev.n)
        self.left[ev.n] = state_values(ctx.store.to_dict())
        if ev.n + 1 >= self.steps:
            return StopEvent(result=ev.n)
        return Turn(n=ev.n + 1)


async def _random_edit(ctx: Context, rng: random.Random, n: int) -> None:
    """One edit of many kinds: appends, nested members, replacements, deletions, set_state,
    clear."""
    kind = rng.choice(["append"] * 4 + ["member", "nested", "drop_first", "scalar", "delete"])
    state = ctx.store
    if kind == "append":
        await state.set("log", [*await state.get("log", []), f"{n}: {ITEM}"])
    elif kind == "member":
        async with state.edit_state() as s:
            s.setdefault("doc", {"parts": {}}).setdefault("parts", {})[f"p{n}"] = ITEM * 2
    elif kind == "nested":
        doc = await state.get("doc", {"parts": {}})
        parts = doc.setdefault("parts", {})
        if parts:
            parts[rng.choice(sorted(parts))] = f"rewritten at {n}"
        doc["title"] = f"title {n}"
        await state.set("doc", doc)
    elif kind == "drop_first":
        await state.set("log", (await state.get("log", []))[1:])
    elif kind == "scalar":
        await state.set(f"k{rng.randrange(3)}", rng.random())
    elif rng.random() < 0.3:
        await state.set_state({"log": [ITEM], "doc": {"parts": {}}})  # a whole state again
    elif rng.random() < 0.2:
        await state.clear()  # a whole state again, with no key
    else:
        async with state.edit_state() as s:
            s.pop(rng.choice(["log", "doc", "k0", "k1", "k2"]), None)


def _stored_state(checkpoint: Checkpoint) -> dict[str, str]:
    return state_values(checkpoint.ctx_data["state"])


async def _edited_run(store: CheckpointStore, seed: int, steps: int = 40):
    flow = RandomEdits(seed, steps)
    cptr = WorkflowCheckpointer(flow, store=store)
    handler = cptr.run()
    assert await handler == steps - 1
    run_id = str(handler.run_id)
    turns = [c for c in store.list(run_id) if c.step_name == "turn"]
    assert len(turns) == steps
    return cptr, flow, run_id, turns


@pytest.mark.parametrize("seed", range(6))
async def test_every_checkpoint_reads_back_the_state_its_step_left(store, seed):
    """list, get and latest rebuild, at every checkpoint, the exact texts of the state."""
    cptr, flow, run_id, turns = await _edited_run(store, seed)
    for n, checkpoint in enumerate(turns):
        assert _stored_state(checkpoint) == flow.left[n], f"checkpoint of step {n}"
        assert _stored_state(store.get(checkpoint.id)) == flow.left[n], f"get, step {n}"
    assert _stored_state(store.latest(run_id)) == flow.left[len(turns) - 1]
    if hasattr(store, "_query"):  # the sequence did store edits (state_mode 2)
        modes = store._query(
            f"SELECT state_mode FROM checkpoints WHERE run_id = {store.sql.param}", (run_id,)
        )
        assert (2,) in modes


async def test_forks_and_run_from_start_from_the_state_of_their_checkpoint(store):
    """A fork (and run_from) at any checkpoint continues with exactly the state there: it
    starts from it (its first snapshot), and its steps leave the states the parent's did."""
    steps = 12
    cptr, flow, run_id, turns = await _edited_run(store, seed=7, steps=steps)
    expected = dict(flow.left)  # the parent's; the forks' steps write flow.left again
    for n in (0, 3, 7, 10):
        fork = cptr.fork(run_id, at=turns[n].seq, state={"forked": n})
        assert await fork == steps - 1
        start, *rest = store.list(fork.run_id)
        assert start.step_name is None
        started = _stored_state(start)
        assert started.pop("forked") and started == expected[n]
        states = [_stored_state(c) for c in rest if c.step_name == "turn"]
        for k, state in enumerate(states, n + 1):
            state.pop("forked", None)  # set at the fork, unless a clear() dropped it
            assert state == expected[k], f"fork at {n}, step {k}"
    again = cptr.run_from(checkpoint=turns[5])
    assert await again == steps - 1
    assert _stored_state(store.latest(str(again.run_id))) == expected[steps - 1]


async def test_a_resumed_run_goes_on_from_the_state_of_its_last_checkpoint(store):
    """A run that failed half-way resumes from its last checkpoint's rebuilt state (its first
    checkpoint there is a whole state again): it leaves the states a run without the failure
    left, and every checkpoint of both reads them back."""
    steps = 30
    _, whole, _, _ = await _edited_run(store, seed=11, steps=steps)
    flow = RandomEdits(11, steps, fail_at=17)
    cptr = WorkflowCheckpointer(flow, store=store)
    handler = cptr.run()
    with pytest.raises(RuntimeError, match="the step failed"):
        await handler
    assert await cptr.resume(str(handler.run_id)) == steps - 1
    turns = [c for c in store.list(str(handler.run_id)) if c.step_name == "turn"]
    assert [_stored_state(c) for c in turns] == [whole.left[n] for n in range(steps)]
    if hasattr(store, "_query"):
        modes = store._query(
            f"SELECT state_mode FROM checkpoints WHERE run_id = {store.sql.param} "
            "AND state_mode IS NOT NULL ORDER BY seq",
            (str(handler.run_id),),
        )
        assert modes.count((0,)) >= 2  # the run's first checkpoint, the resumed run's first


def _stored_bytes(store: CheckpointStore, run_id: str) -> list[int]:
    """The bytes of each stored checkpoint's ``ctx_data``, in order, read from the database."""
    rows = store._query(  # type: ignore[attr-defined]
        f"SELECT ctx_data FROM checkpoints WHERE run_id = {store.sql.param} ORDER BY seq",  # type: ignore[attr-defined]
        (run_id,),
    )
    return [len(row[0].encode()) for row in rows]


class Appender(Workflow):
    """Appends one item to the state's ``log`` at each of ``steps`` steps."""

    def __init__(self, steps: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.steps = steps

    @step
    async def begin(self, ctx: Context, ev: StartEvent) -> Turn:
        return Turn(n=0)

    @step
    async def turn(self, ctx: Context, ev: Turn) -> Turn | StopEvent:
        await ctx.store.set("log", [*await ctx.store.get("log", []), f"{ev.n}: {ITEM}"])
        return StopEvent(result=ev.n) if ev.n + 1 >= self.steps else Turn(n=ev.n + 1)


async def test_a_list_appended_to_at_each_step_stores_each_item_once(store):
    """The stored state of each checkpoint holds the new item, not the whole list: the
    state bytes of 80 steps are about 4 times those of 20, not 16 times."""
    if not hasattr(store, "_query"):
        pytest.skip("the in-memory store keeps no bytes")
    totals = {}
    for steps in (20, 80):
        handler = WorkflowCheckpointer(Appender(steps), store=store).run()
        await handler
        sizes = _stored_bytes(store, str(handler.run_id))
        assert max(sizes[2:]) - min(sizes[2:]) < len(ITEM)  # each: the events and one item
        totals[steps] = sum(sizes)
        last = InMemoryStateStore.from_dict(store.latest(str(handler.run_id)).ctx_data["state"])
        assert len(await last.get("log")) == steps
    assert totals[80] < 5 * totals[20]


def test_an_edit_keeps_the_start_and_end_the_texts_share():
    """edit/edited round-trip; short texts and texts sharing little stay whole."""
    rng = random.Random(3)
    for _ in range(300):
        old = "".join(rng.choice("ab[],{}") for _ in range(rng.randrange(0, 300)))
        cut = rng.randrange(len(old) + 1)
        new = old[:cut] + "".join(rng.choice("abc") for _ in range(rng.randrange(5))) + old[cut:]
        change = edit(old, new)
        assert (change if isinstance(change, str) else edited(old, change)) == new
        if isinstance(change, list):
            assert change[0] + change[1] >= MIN_KEPT
    assert edit("x" * 100, "y" * 100) == "y" * 100
    assert edit("short", "shorter") == "shorter"


def test_a_corrupt_edit_is_reported_as_a_corrupt_checkpoint(tmp_path):
    """An edit that does not apply to the previous value fails the read with StoreCorruptError."""
    from batonflow.core import SqliteCheckpointStore

    with SqliteCheckpointStore(tmp_path / "runs.db") as store:
        state = {"version": 1, "state_type": None}

        def checkpoint(seq: int, values: dict, mode: int) -> Checkpoint:
            ctx = {"state": {**state, "state_data": values}, "queue": []}
            return Checkpoint(
                f"r:{seq}", "r", "Flow", "s", None, (), 1.0, ctx, seq=seq, state_changes=mode
            )

        old = "[" + "1," * 40 + "1]"
        store.put(checkpoint(1, {"log": old}, 0))
        store.put(checkpoint(2, {"log": [70, 5, "2"]}, 2))  # keeps 75 of its 83 characters
        store.put(checkpoint(3, {"log": [900, 1, "3"]}, 2))  # keeps more than there is
        assert _stored_state(store.get("r:2")) == {"log": old[:70] + "2" + old[-5:]}
        with pytest.raises(StoreCorruptError, match="delete the run"):
            store.get("r:3")
