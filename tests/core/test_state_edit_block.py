"""edit_state()'s block object: handed out again once its block ends, never shared by two
blocks, and nothing kept alive by it (see core/_state_edit.StateEdit)."""

import asyncio
import copy
import gc
import pickle
import weakref

import pytest
from batonflow.core.state import DictState, InMemoryStateStore


async def test_two_blocks_handed_out_before_either_is_entered_stay_apart() -> None:
    """Two edit_state() calls before any block opens give two blocks; each commits its own."""
    store = InMemoryStateStore(initial={"a": 0, "b": 0})
    first = store.edit_state()
    second = store.edit_state()
    assert first is not second
    async with second as state:
        state["b"] = 2
    async with first as state:
        state["a"] = 1
    assert dict(await store.get_state()) == {"a": 1, "b": 2}


async def test_the_block_object_is_reused_once_its_block_ended() -> None:
    """Uncontended blocks in a row reuse one block object (no allocation per edit)."""
    store = InMemoryStateStore()
    blocks = []
    for i in range(3):
        block = store.edit_state()
        blocks.append(block)
        async with block as state:
            state["n"] = i
    assert all(block is blocks[0] for block in blocks) and await store.get("n") == 2


async def test_a_block_that_raised_leaves_the_block_object_reusable() -> None:
    """After a rolled-back block, the next one works on the committed state."""
    store = InMemoryStateStore(initial={"n": 1})
    with pytest.raises(KeyError):
        async with store.edit_state() as state:
            state["n"] = 5
            raise KeyError("stop")
    async with store.edit_state() as state:
        state["n"] += 1
    assert await store.get("n") == 2


async def test_a_waiter_cancelled_before_its_turn_leaves_the_lock_working() -> None:
    """A block cancelled while it waits for the lock never opens; later blocks still run."""
    store = InMemoryStateStore(initial={"n": 0})
    inside = asyncio.Event()
    release = asyncio.Event()

    async def holder() -> None:
        async with store.edit_state() as state:
            inside.set()
            await release.wait()
            state["n"] += 1

    async def waiter() -> None:
        async with store.edit_state() as state:
            state["n"] += 100

    held = asyncio.create_task(holder())
    await inside.wait()
    waiting = asyncio.create_task(waiter())
    await asyncio.sleep(0)
    waiting.cancel()
    release.set()
    await held
    with pytest.raises(asyncio.CancelledError):
        await waiting
    async with store.edit_state() as state:
        state["n"] += 1
    assert await store.get("n") == 2


def test_one_store_edited_from_two_event_loops_in_turn() -> None:
    """A store reused by a later asyncio.run (a reused Context) finds the new loop's task:
    nested blocks are still recognised and other tasks still wait."""
    store = InMemoryStateStore(initial={"n": 0})

    async def edits() -> None:
        async with store.edit_state() as state:
            state["n"] += 1
            async with store.edit_state() as inner:  # nested: must not deadlock
                inner["n"] += 1

        async def other() -> None:
            async with store.edit_state() as state:
                state["n"] += 1

        await asyncio.gather(other(), other())

    asyncio.run(edits())
    asyncio.run(asyncio.wait_for(edits(), timeout=5))
    assert asyncio.run(store.get("n")) == 8


class _Marker:
    """A value whose death shows that the state holding it was freed."""


async def test_store_and_state_are_freed_without_the_garbage_collector() -> None:
    """No reference cycle through the reused block: refcounting alone frees the store."""
    marker = _Marker()
    store = InMemoryStateStore(initial={"n": 0, "marker": marker})
    async with store.edit_state() as state:
        state["n"] += 1
    async with store.edit_state() as state:
        state["marker"] = state["marker"]  # a mutable value: copied into the block
    marker_ref = weakref.ref(state["marker"])
    gc.disable()
    try:
        del store, state, marker
        assert marker_ref() is None
    finally:
        gc.enable()


async def test_a_state_kept_from_a_block_copies_and_pickles_as_its_keys() -> None:
    """The dict a block yields, inside the block and kept past it, copies and pickles as
    plain state (its edit-log slot, which names the store's block, is left out)."""
    store = InMemoryStateStore(initial={"items": [1]})
    async with store.edit_state() as state:
        state["items"].append(2)
        inside = pickle.loads(pickle.dumps(state))  # the block's view, without its undo log
        assert type(inside) is DictState and inside == {"items": [1, 2]}
    kept = state
    for clone in (copy.deepcopy(kept), copy.copy(kept), pickle.loads(pickle.dumps(kept))):
        assert type(clone) is DictState and clone == {"items": [1, 2]}
    assert await store.get("items") == [1, 2]
