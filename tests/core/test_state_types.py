"""Typed state across workflow subclasses, LlamaIndex's store constructor and snapshot layout."""

from __future__ import annotations

import asyncio
import json

import pytest
from batonflow.core import (
    Context,
    DictState,
    Event,
    InMemoryStateStore,
    StartEvent,
    StateTypeError,
    StateValidationError,
    StopEvent,
    Workflow,
    WorkflowValidationError,
    step,
)
from batonflow.core.serialization import JsonSerializer
from pydantic import BaseModel


class BaseState(BaseModel):
    base: str = "base"


class ChildState(BaseState):
    child: str = "child"
    counter: int = 0


class GrandState(ChildState):
    grand: str = "grand"


class OtherChild(BaseState):
    other: int = 1


class Unrelated(BaseModel):
    x: int = 0


class Middle(Event):
    pass


class BaseFlow(Workflow):
    @step
    async def first(self, ctx: Context[BaseState], ev: StartEvent) -> Middle:
        await ctx.store.set("base", "from base step")
        return Middle()


class ChildFlow(BaseFlow):
    @step
    async def second(self, ctx: Context[ChildState], ev: Middle) -> StopEvent:
        await ctx.store.set("child", "from child step")
        return StopEvent(result=await ctx.store.get_state())


async def test_subclass_steps_use_the_most_derived_state() -> None:
    """Base steps on Context[BaseState] and child steps on Context[ChildState] share a ChildState."""
    state = await ChildFlow().run()
    assert type(state) is ChildState
    assert (state.base, state.child) == ("from base step", "from child step")


async def test_three_levels_use_the_deepest_model() -> None:
    """The state of a three-level hierarchy is the grandchild model, whatever the step order."""

    class Grand(Workflow):
        @step
        async def one(self, ctx: Context[GrandState], ev: StartEvent) -> Middle:
            return Middle()

        @step
        async def two(self, ctx: Context[BaseState], ev: Middle) -> StopEvent:
            await ctx.store.set("grand", "set")
            return StopEvent(result=await ctx.store.get_state())

    state = await Grand().run()
    assert type(state) is GrandState and state.grand == "set"


@pytest.mark.parametrize(
    ("other", "names"),
    [
        pytest.param(Unrelated, "BaseState, Unrelated", id="unrelated"),
        pytest.param(OtherChild, "ChildState, OtherChild", id="siblings"),
    ],
)
async def test_state_types_off_one_chain_are_rejected(other: type[BaseModel], names: str) -> None:
    """Unrelated or sibling models are a StateTypeError (a ValueError) naming them, with a fix."""
    first_type = BaseState if other is Unrelated else ChildState

    class Bad(Workflow):
        @step
        async def a(self, ctx: Context[first_type], ev: StartEvent) -> Middle:  # type: ignore[valid-type]
            return Middle()

        @step
        async def b(self, ctx: Context[other], ev: Middle) -> StopEvent:  # type: ignore[valid-type]
            return StopEvent()

    with pytest.raises(StateTypeError) as info:
        await Bad().run()
    assert isinstance(info.value, ValueError) and isinstance(info.value, WorkflowValidationError)
    message = str(info.value)
    assert message.startswith("Multiple state types are not in a compatible inheritance hierarchy")
    assert f"Found: {names}" in message and message.endswith("derive from the others.")


async def test_set_state_with_a_parent_model_merges_its_fields() -> None:
    """A parent-type state written by a base step keeps the child-only fields."""

    class Merge(Workflow):
        @step
        async def init(self, ctx: Context[ChildState], ev: StartEvent) -> Middle:
            await ctx.store.set("child", "kept")
            await ctx.store.set("counter", 7)
            return Middle()

        @step
        async def base_step(self, ctx: Context[BaseState], ev: Middle) -> StopEvent:
            await ctx.store.set_state(BaseState(base="replaced"))
            return StopEvent(result=await ctx.store.get_state())

    state = await Merge().run()
    assert (type(state), state.base, state.child, state.counter) == (
        ChildState,
        "replaced",
        "kept",
        7,
    )


async def test_set_state_with_an_unrelated_model_is_rejected() -> None:
    """set_state with a model that is not a base of the state raises, naming both types."""
    store = InMemoryStateStore(ChildState(counter=3))
    with pytest.raises(
        StateValidationError,
        match=r"^State must be of type ChildState or a parent type, got Unrelated; pass a ",
    ):
        await store.set_state(Unrelated())
    assert await store.get("counter") == 3


async def test_store_takes_the_starting_state_as_first_argument() -> None:
    """InMemoryStateStore(instance) and InMemoryStateStore(DictState()) work as in LlamaIndex."""
    typed = InMemoryStateStore(ChildState(child="start"))
    assert typed.state_type is ChildState and await typed.get("child") == "start"
    untyped = InMemoryStateStore(DictState())
    await untyped.set("user.name", "Ada")
    assert untyped.state_type is None and await untyped.get("user.name") == "Ada"
    assert await InMemoryStateStore({"a": 1}).get("a") == 1


async def test_store_rejects_a_starting_state_given_twice() -> None:
    """A starting state as first argument and initial= together is an error with the fix."""
    with pytest.raises(Exception, match=r"pass the starting state once, either way"):
        InMemoryStateStore(ChildState(), initial={"child": "x"})


async def test_dict_state_reads_llama_index_data_keyword() -> None:
    """DictState(_data={...}) fills the state, as LlamaIndex's DictState does."""
    assert dict(DictState(_data={"a": 1})) == {"a": 1}
    assert dict(DictState(a=1, b=2)) == {"a": 1, "b": 2}


async def test_untyped_snapshot_has_llama_index_layout() -> None:
    """Untyped state is written as state_data['_data'][key] = encoded value, LlamaIndex's shape."""
    store = InMemoryStateStore(initial={"calls": 3, "items": [1, 2]})
    data = json.loads(json.dumps(store.to_dict()))
    assert data["store_type"] == "in_memory" and data["state_type"] == "DictState"
    assert json.loads(data["state_data"]["_data"]["calls"]) == 3
    restored = InMemoryStateStore.from_dict(data)
    assert dict(await restored.get_state()) == {"calls": 3, "items": [1, 2]}


async def test_typed_snapshot_has_llama_index_layout() -> None:
    """Typed state is one JSON string with __is_pydantic and the fields under value."""
    store = InMemoryStateStore(ChildState(child="c", counter=2))
    data = store.to_dict()
    encoded = json.loads(data["state_data"])
    assert encoded["__is_pydantic"] is True
    assert encoded["value"] == {"base": "base", "child": "c", "counter": 2}
    assert (data["state_type"], data["state_module"]) == ("ChildState", __name__)
    restored = InMemoryStateStore.from_dict(data)
    assert await restored.get_state() == ChildState(child="c", counter=2)


async def test_reads_llama_index_written_typed_state() -> None:
    """A typed snapshot in LlamaIndex's own encoding (qualified_name, no type) restores."""
    data = {
        "state_type": "ChildState",
        "state_module": __name__,
        "state_data": json.dumps(
            {
                "__is_pydantic": True,
                "value": {"base": "b", "child": "c", "counter": 5},
                "qualified_name": f"{__name__}.ChildState",
            }
        ),
    }
    restored = InMemoryStateStore.from_dict(data, JsonSerializer())
    assert await restored.get_state() == ChildState(base="b", child="c", counter=5)


async def test_reads_version_one_snapshots() -> None:
    """Snapshots written before the LlamaIndex layout (version 1) still restore."""
    untyped = {"version": 1, "state_type": None, "state_data": {"n": "4"}}
    assert await InMemoryStateStore.from_dict(untyped).get("n") == 4
    typed = {
        "version": 1,
        "state_type": f"{__name__}:ChildState",
        "state_data": JsonSerializer().serialize(ChildState(counter=9)),
    }
    assert await InMemoryStateStore.from_dict(typed).get("counter") == 9


async def test_other_steps_see_the_state_before_an_open_edit() -> None:
    """While a block edits in place, other tasks read every key as it was before the block."""
    store = InMemoryStateStore(initial={"keep": [1], "gone": "x", "n": 0})
    inside = asyncio.Event()
    release = asyncio.Event()

    async def editor() -> None:
        async with store.edit_state() as state:
            state["keep"].append(2)
            del state["gone"]
            state["n"] = 1
            state["new"] = True
            inside.set()
            await release.wait()

    task = asyncio.create_task(editor())
    await inside.wait()
    seen = await store.get_state()
    assert dict(seen) == {"keep": [1], "gone": "x", "n": 0}
    assert await store.get("gone") == "x" and await store.get("new", default=None) is None
    assert json.loads(store.to_dict()["state_data"]["_data"]["keep"]) == [1]
    release.set()
    await task
    assert dict(await store.get_state()) == {"keep": [1, 2], "n": 1, "new": True}


async def test_rollback_restores_deleted_and_replaced_keys() -> None:
    """A block that raises after deleting, replacing, popping and clearing changes nothing."""
    store = InMemoryStateStore(initial={"a": 1, "b": [1], "c": {"d": 1}})
    with pytest.raises(RuntimeError, match="undo"):
        async with store.edit_state() as state:
            del state["a"]
            state["b"] = "replaced"
            state.pop("c")["d"] = 2
            state.popitem()
            state.clear()
            state["z"] = 1
            raise RuntimeError("undo")
    assert dict(await store.get_state()) == {"a": 1, "b": [1], "c": {"d": 1}}
    assert type(await store.get_state()) is DictState


async def test_set_state_inside_an_edit_is_kept_or_rolled_back() -> None:
    """set_state by the editing step replaces the state at commit and is undone on error."""
    store = InMemoryStateStore(initial={"a": 1})
    with pytest.raises(RuntimeError):
        async with store.edit_state():
            await store.set_state({"b": 2})
            raise RuntimeError("undo")
    assert dict(await store.get_state()) == {"a": 1}
    async with store.edit_state():
        await store.set_state({"b": 2})
    assert dict(await store.get_state()) == {"b": 2}
