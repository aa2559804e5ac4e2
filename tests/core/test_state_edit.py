"""The state store's edit_state: atomic edits, rollback, concurrency, what it copies."""

import asyncio
import threading

import pytest
from batonflow.core.errors import (
    StateValidationError,
)
from batonflow.core.state import DictState, InMemoryStateStore
from pydantic import BaseModel, Field
from state_models import CounterState, Profile

# -- edit_state ----------------------------------------------------------------------------------


async def test_edit_state_increments_untyped() -> None:
    """The seed's edit_state block updates the state."""
    store = InMemoryStateStore()
    async with store.edit_state() as state:
        state["count"] = state.get("count", 0) + 1
    assert await store.get("count") == 1


async def test_edit_state_typed_yields_model() -> None:
    """edit_state on typed state yields the model."""
    store = InMemoryStateStore(CounterState)
    async with store.edit_state() as state:
        assert isinstance(state, CounterState)
        state.count += 1
    assert await store.get("count") == 1


async def test_edit_state_loses_no_update_under_concurrency() -> None:
    """1,000 concurrent read-modify-writes with an await inside lose no update."""
    store = InMemoryStateStore()

    async def increment() -> None:
        async with store.edit_state() as state:
            current = state.get("count", 0)
            await asyncio.sleep(0)
            state["count"] = current + 1

    await asyncio.gather(*(increment() for _ in range(1000)))
    assert await store.get("count") == 1000


async def test_plain_set_waits_for_an_edit_in_progress() -> None:
    """A set from another task waits until the edit block ends (no lost update)."""
    store = InMemoryStateStore(initial={"count": 0})
    inside = asyncio.Event()
    release = asyncio.Event()

    async def editor() -> None:
        async with store.edit_state() as state:
            current = state["count"]
            inside.set()
            await release.wait()
            state["count"] = current + 1

    task = asyncio.create_task(editor())
    await inside.wait()
    writer = asyncio.create_task(store.set("other", 1))
    await asyncio.sleep(0.01)
    assert not writer.done()
    assert await store.get("count") == 0  # readers see the committed state
    release.set()
    await asyncio.gather(task, writer)
    assert await store.get("count") == 1 and await store.get("other") == 1


async def test_edit_state_rolls_back_on_exception() -> None:
    """If the block raises, the state is as it was before the block."""
    store = InMemoryStateStore(initial={"count": 1, "items": [1]})
    with pytest.raises(RuntimeError, match="stop"):
        async with store.edit_state() as state:
            state["count"] = 99
            state["items"].append(2)
            raise RuntimeError("stop")
    assert await store.get("count") == 1 and await store.get("items") == [1]


async def test_edit_state_typed_rolls_back_on_exception() -> None:
    """Typed state is also restored when the block raises."""
    store = InMemoryStateStore(Profile)
    with pytest.raises(RuntimeError):
        async with store.edit_state() as state:
            state.user.name = "changed"
            raise RuntimeError("stop")
    assert await store.get("user.name") == "anon"


async def test_edit_state_typed_validates_at_the_end() -> None:
    """An invalid assignment inside the block is rejected at its end; nothing is kept."""
    store = InMemoryStateStore(CounterState)
    with pytest.raises(StateValidationError, match=r"state after edit_state\(\) of CounterState"):
        async with store.edit_state() as state:
            state.count = "not a number"  # type: ignore[assignment]
    assert await store.get("count") == 0


async def test_owner_set_inside_edit_state_is_kept() -> None:
    """store.set from inside the edit block applies to the edited state (no deadlock)."""
    store = InMemoryStateStore()
    async with store.edit_state() as state:
        state["a"] = 1
        await store.set("b", 2)
        assert await store.get("b") == 2
        async with store.edit_state() as inner:  # nested edit in the same task
            inner["c"] = 3
    assert dict(await store.get_state()) == {"a": 1, "b": 2, "c": 3}


async def test_edit_state_shares_values_that_cannot_be_copied() -> None:
    """Values deepcopy refuses (a lock) stay shared instead of failing the edit."""
    lock = threading.Lock()
    store = InMemoryStateStore(initial={"lock": lock, "n": 0})
    async with store.edit_state() as state:
        state["n"] += 1
    assert await store.get("lock") is lock and await store.get("n") == 1


async def test_edit_state_copies_only_the_keys_it_reads() -> None:
    """Untouched values are not copied by an edit block (big histories stay cheap)."""
    history = [{"role": "user", "content": "hi"}] * 1000
    store = InMemoryStateStore(initial={"history": history, "n": 0})
    async with store.edit_state() as state:
        state["n"] += 1
    assert await store.get("history") is history and await store.get("n") == 1


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda s: s["things"].append(9), id="getitem"),
        pytest.param(lambda s: s.get("things").append(9), id="get"),
        pytest.param(lambda s: s.things.append(9), id="attribute"),
        pytest.param(lambda s: dict(s.items())["things"].append(9), id="items"),
        pytest.param(lambda s: list(s.values())[0].append(9), id="values"),
        pytest.param(lambda s: s.pop("things").append(9), id="pop"),
        pytest.param(lambda s: s.setdefault("things", []).append(9), id="setdefault"),
        pytest.param(lambda s: s.to_dict()["things"].append(9), id="to_dict"),
    ],
)
async def test_edit_state_rollback_covers_every_way_of_reading(mutate) -> None:
    """Values reached through any DictState method are copies: a failed block changes nothing."""
    store = InMemoryStateStore(initial={"things": [1]})
    with pytest.raises(RuntimeError):
        async with store.edit_state() as state:
            mutate(state)
            raise RuntimeError("roll back")
    assert await store.get("things") == [1]


async def test_edit_state_commit_keeps_changes_made_every_way() -> None:
    """Changes through update, attribute writes and nested values are all committed."""
    store = InMemoryStateStore(initial={"things": [1], "meta": {"a": 1}})
    async with store.edit_state() as state:
        state.things.append(2)
        state.update(extra=True)
        state["meta"]["b"] = 2
        state.flag = "x"
    assert dict(await store.get_state()) == {
        "things": [1, 2],
        "meta": {"a": 1, "b": 2},
        "extra": True,
        "flag": "x",
    }
    assert type(await store.get_state()) is DictState


async def test_typed_rollback_with_an_uncopyable_field() -> None:
    """A field deepcopy refuses is shared; the other fields still roll back."""

    class WithLock(BaseModel):
        model_config = {"arbitrary_types_allowed": True}
        lock: object = Field(default_factory=threading.Lock)
        items: list[int] = Field(default_factory=list)

    store = InMemoryStateStore(WithLock)
    lock = await store.get("lock")
    with pytest.raises(RuntimeError):
        async with store.edit_state() as state:
            state.items.append(1)
            raise RuntimeError("roll back")
    assert await store.get("items") == [] and await store.get("lock") is lock


async def test_edit_state_of_scalars_rolls_back_and_commits() -> None:
    """A state holding only immutable values (the common counter case, edited through a plain
    dict copy) rolls back every change when the block raises and keeps them when it ends."""
    store = InMemoryStateStore(initial={"count": 1, "name": "a", "ratio": 0.5, "done": None})
    with pytest.raises(RuntimeError, match="stop"):
        async with store.edit_state() as state:
            state["count"] += 1
            state.name = "b"
            del state["ratio"]
            state["items"] = [1]
            state.update(done=True)
            raise RuntimeError("stop")
    assert dict(await store.get_state()) == {"count": 1, "name": "a", "ratio": 0.5, "done": None}
    async with store.edit_state() as state:
        state["count"] = state.get("count", 0) + 1
        state["items"] = [1]
    async with store.edit_state() as state:
        state["items"].append(2)  # now a mutable value: copied on read, committed at the end
    assert dict(await store.get_state()) == {
        "count": 2,
        "name": "a",
        "ratio": 0.5,
        "done": None,
        "items": [1, 2],
    }
    assert type(await store.get_state()) is DictState
