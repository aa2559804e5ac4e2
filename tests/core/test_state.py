"""The state store: paths, DictState, typed state and snapshots (edit_state: test_state_edit.py)."""

import json
import threading

import pytest
from batonflow.core.errors import (
    ContextSerdeError,
    SerializationError,
    StateKeyError,
    StateValidationError,
    WorkflowConfigurationError,
)
from batonflow.core.serialization import JsonSerializer, PickleSerializer
from batonflow.core.state import DictState, InMemoryStateStore
from pydantic import BaseModel, Field
from state_models import CounterState, MyRandomObject, MyState, Profile, User

# -- untyped get/set --------------------------------------------------------------------------


async def test_set_then_get_returns_value() -> None:
    """A value set under a key is read back."""
    store = InMemoryStateStore()
    await store.set("count", 3)
    assert await store.get("count") == 3


async def test_get_missing_with_default_returns_default() -> None:
    """A missing key with a default gives the default (None included)."""
    store = InMemoryStateStore()
    assert await store.get("count", default=0) == 0
    assert await store.get("count", None) is None


async def test_get_missing_without_default_raises_key_error() -> None:
    """A missing key without default is a StateKeyError, also a KeyError, naming the fix."""
    store = InMemoryStateStore()
    with pytest.raises(KeyError):
        await store.get("total")
    with pytest.raises(
        StateKeyError,
        match=r"^Key 'total' is not in the state store; pass default=\.\.\. to get a fallback\.$",
    ):
        await store.get("total")


async def test_missing_dotted_path_names_the_missing_segment() -> None:
    """A dotted path names the segment that is missing."""
    store = InMemoryStateStore(initial={"user": {"name": "x"}})
    with pytest.raises(
        StateKeyError,
        match=r"Path 'user.email' is not in the state store \(no 'email' in the mapping\); pass default=",
    ):
        await store.get("user.email")


@pytest.mark.parametrize(
    ("initial", "path", "expected"),
    [
        pytest.param({"a": {"b": {"c": 1}}}, "a.b.c", 1, id="nested-dicts"),
        pytest.param({"items": [10, 20, 30]}, "items.1", 20, id="list-index"),
        pytest.param({"items": [{"n": 1}, {"n": 2}]}, "items.-1.n", 2, id="negative-index"),
        pytest.param({"u": User(name="ann")}, "u.name", "ann", id="model-in-dict"),
        pytest.param({"o": MyRandomObject("obj")}, "o.name", "obj", id="plain-object-attribute"),
    ],
)
async def test_dotted_get(initial, path, expected) -> None:
    """Dotted paths go through dicts, lists (int index), models and plain objects."""
    assert await InMemoryStateStore(initial=initial).get(path) == expected


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("items.9", id="index-out-of-range"),
        pytest.param("items.x", id="non-int-index"),
        pytest.param("u.nope", id="missing-model-field"),
        pytest.param("o._secret", id="private-attribute"),
    ],
)
async def test_dotted_get_missing_uses_default(path: str) -> None:
    """Missing segments of any kind fall back to the default."""
    store = InMemoryStateStore(initial={"items": [1], "u": User(), "o": MyRandomObject()})
    assert await store.get(path, default="d") == "d"
    with pytest.raises(StateKeyError):
        await store.get(path)


async def test_dotted_set_creates_intermediate_dicts() -> None:
    """Setting a.b.c on empty untyped state creates the dicts on the way."""
    store = InMemoryStateStore()
    await store.set("a.b.c", 1)
    assert await store.get("a") == {"b": {"c": 1}}


async def test_dotted_set_into_list_and_model() -> None:
    """Setting through a list index and into a nested model works."""
    store = InMemoryStateStore(initial={"items": [0, 0], "u": User()})
    await store.set("items.1", 5)
    await store.set("u.name", "bob")
    assert (await store.get("items"), await store.get("u.name")) == ([0, 5], "bob")


async def test_dotted_set_out_of_range_list_index_is_an_error() -> None:
    """Setting a list item that does not exist says to append instead."""
    store = InMemoryStateStore(initial={"items": []})
    with pytest.raises(StateKeyError, match=r"Cannot set 'items.3'.*append to the list instead"):
        await store.set("items.3", 1)


async def test_dotted_set_through_immutable_value_is_an_error() -> None:
    """Setting inside a tuple or a string is refused with the fix."""
    store = InMemoryStateStore(initial={"t": (1, 2), "s": "abc"})
    with pytest.raises(
        StateValidationError, match=r"goes through a tuple.*set the enclosing value instead"
    ):
        await store.set("t.0", 9)
    with pytest.raises(StateValidationError, match=r"goes through a str"):
        await store.set("s.x", 9)


async def test_get_returns_live_value_without_copy() -> None:
    """get returns the stored object itself (no copy on the hot path)."""
    items: list[int] = []
    store = InMemoryStateStore(initial={"items": items})
    assert await store.get("items") is items


# -- DictState ----------------------------------------------------------------------------------


async def test_dict_state_is_dict_like_with_attributes() -> None:
    """DictState supports [], get, attribute access, in, keys and items."""
    state = DictState(a=1)
    state.b = 2
    assert state["b"] == 2 and state.a == 1 and state.get("c", 3) == 3
    assert (
        "a" in state
        and list(state.keys()) == ["a", "b"]
        and dict(state.items()) == {"a": 1, "b": 2}
    )
    with pytest.raises(AttributeError, match=r"no key 'zzz'; use state.get\('zzz', default\)"):
        _ = state.zzz
    del state.a
    assert state.to_dict() == {"b": 2} == state.model_dump()


async def test_untyped_get_state_is_a_copy() -> None:
    """get_state returns a DictState copy: changing it does not change the store."""
    store = InMemoryStateStore(initial={"items": [1]})
    state = await store.get_state()
    assert isinstance(state, DictState)
    state["items"].append(2)
    state["new"] = 1
    assert await store.get("items") == [1] and await store.get("new", None) is None


async def test_untyped_set_state_replaces_everything() -> None:
    """set_state with a dict replaces the whole untyped state."""
    store = InMemoryStateStore(initial={"a": 1})
    await store.set_state({"b": 2})
    assert dict(await store.get_state()) == {"b": 2}


async def test_untyped_state_rejects_non_mapping_initial() -> None:
    """Untyped state must start from a mapping."""
    with pytest.raises(
        StateValidationError, match=r"must start from a mapping, got list; pass a dict"
    ):
        InMemoryStateStore(initial=[1, 2])  # type: ignore[arg-type]


async def test_clear_untyped_empties_the_state() -> None:
    """clear() on untyped state leaves it empty."""
    store = InMemoryStateStore(initial={"a": 1})
    await store.clear()
    assert dict(await store.get_state()) == {}


# -- typed state --------------------------------------------------------------------------------


async def test_typed_state_starts_from_model_defaults() -> None:
    """Typed state starts as the model with its defaults."""
    store = InMemoryStateStore(CounterState)
    state = await store.get_state()
    assert isinstance(state, CounterState) and state.count == 0
    assert store.state_type is CounterState


async def test_typed_state_from_initial_mapping() -> None:
    """A mapping as initial value is validated into the model."""
    store = InMemoryStateStore(Profile, initial={"user": {"name": "zoe"}})
    assert await store.get("user.name") == "zoe"


async def test_typed_state_requires_defaults_for_every_field() -> None:
    """A model with a required field cannot be the state type."""

    class Bad(BaseModel):
        name: str
        age: int = 0

    with pytest.raises(
        WorkflowConfigurationError,
        match=r"Bad cannot be a workflow state: field\(s\) 'name' have no default; give every field a default",
    ):
        InMemoryStateStore(Bad)


async def test_state_type_must_be_a_model() -> None:
    """A non-model state type is a configuration error."""
    with pytest.raises(
        WorkflowConfigurationError, match=r"is not a pydantic model; annotate Context\[MyState\]"
    ):
        InMemoryStateStore(dict)


async def test_dict_state_as_state_type_means_untyped() -> None:
    """state_type=DictState gives untyped state."""
    store = InMemoryStateStore(DictState)
    assert store.state_type is None
    await store.set("a.b", 1)
    assert await store.get("a.b") == 1


async def test_typed_set_validates_and_coerces() -> None:
    """Typed set validates the field (pydantic coercion applies)."""
    store = InMemoryStateStore(CounterState)
    await store.set("count", "5")
    assert await store.get("count") == 5


async def test_typed_set_wrong_type_leaves_state_unchanged() -> None:
    """A value of the wrong type raises StateValidationError and keeps the old value."""
    store = InMemoryStateStore(CounterState)
    await store.set("count", 2)
    with pytest.raises(
        StateValidationError,
        match=r"Invalid value for 'count' of CounterState.*got 'many'.*The state is unchanged",
    ):
        await store.set("count", "many")
    assert await store.get("count") == 2
    with pytest.raises(ValueError):
        await store.set("count", [1])


async def test_typed_set_unknown_field_names_the_fields() -> None:
    """Setting a field the model lacks names the model's fields."""
    store = InMemoryStateStore(CounterState)
    with pytest.raises(
        StateValidationError,
        match=r"CounterState has no field 'cnt'; add the field to the model or use one of: count",
    ):
        await store.set("cnt", 1)


async def test_typed_get_unknown_field_is_key_error() -> None:
    """Reading a field the model lacks is a StateKeyError."""
    with pytest.raises(StateKeyError, match=r"'cnt' is not in the state store"):
        await InMemoryStateStore(CounterState).get("cnt")


async def test_typed_nested_set_validates_nested_model_field() -> None:
    """A dotted set into a nested model validates that model's field."""
    store = InMemoryStateStore(Profile)
    await store.set("user.age", "41")
    assert await store.get("user.age") == 41
    with pytest.raises(StateValidationError, match=r"Invalid value for 'user.age' of User"):
        await store.set("user.age", "old")
    assert await store.get("user.age") == 41


async def test_typed_nested_set_into_dict_field() -> None:
    """A dotted set into a dict field of the model sets the key."""
    store = InMemoryStateStore(Profile)
    await store.set("meta.x", 1)
    assert await store.get("meta") == {"x": 1}


async def test_typed_nested_set_missing_intermediate_is_key_error() -> None:
    """Typed state does not invent intermediate fields."""
    with pytest.raises(StateKeyError, match=r"no 'nope' in the Profile model\); set it first"):
        await InMemoryStateStore(Profile).set("nope.x", 1)


async def test_typed_get_state_is_a_copy_and_set_state_writes_back() -> None:
    """The seed pattern: get_state, change the copy, set_state."""
    store = InMemoryStateStore(MyState)
    state = await store.get_state()
    state.my_obj.name = "new_name"
    assert await store.get("my_obj.name") == "default"
    await store.set_state(state)
    assert await store.get("my_obj.name") == "new_name"
    await store.set("my_obj.name", "newer_name")
    assert (await store.get_state()).my_obj.name == "newer_name"


async def test_typed_set_state_rejects_other_model() -> None:
    """set_state with another model type is a StateValidationError naming both."""
    store = InMemoryStateStore(CounterState)
    with pytest.raises(
        StateValidationError,
        match=r"must be of type CounterState or a parent type, got User; pass a CounterState",
    ):
        await store.set_state(User())


async def test_typed_set_state_validates_mapping() -> None:
    """set_state with a dict validates it into the model."""
    store = InMemoryStateStore(CounterState)
    await store.set_state({"count": 7})
    assert (await store.get_state()).count == 7
    with pytest.raises(StateValidationError):
        await store.set_state({"count": "x"})
    assert (await store.get_state()).count == 7


async def test_typed_clear_restores_defaults() -> None:
    """clear() on typed state gives the model's defaults."""
    store = InMemoryStateStore(CounterState)
    await store.set("count", 9)
    await store.clear()
    assert (await store.get_state()).count == 0


# -- snapshots ----------------------------------------------------------------------------------


async def test_untyped_round_trip_through_json() -> None:
    """to_dict -> json -> from_dict restores every value with its type."""
    store = InMemoryStateStore()
    await store.set("count", 3)
    await store.set("pair", (1, "a"))
    await store.set("user", User(name="ann"))
    await store.set("nested.tags", {"x", "y"})
    data = json.loads(json.dumps(store.to_dict(JsonSerializer())))
    restored = InMemoryStateStore.from_dict(data, JsonSerializer())
    assert dict(await restored.get_state()) == dict(await store.get_state())
    assert isinstance(await restored.get("user"), User)


async def test_typed_round_trip_uses_field_serializers() -> None:
    """The seed's MyState round-trips through its field serializer and validator."""
    store = InMemoryStateStore(MyState)
    await store.set("my_obj.name", "saved")
    data = json.loads(json.dumps(store.to_dict(JsonSerializer())))
    assert (data["state_type"], data["state_module"]) == ("MyState", MyState.__module__)
    restored = InMemoryStateStore.from_dict(data, JsonSerializer())
    assert restored.state_type is MyState
    assert await restored.get("my_obj.name") == "saved"


async def test_from_dict_with_explicit_state_type() -> None:
    """from_dict validates the saved state into the given state type."""
    store = InMemoryStateStore(CounterState, initial={"count": 4})
    restored = InMemoryStateStore.from_dict(store.to_dict(), state_type=CounterState)
    assert (await restored.get_state()).count == 4


async def test_to_dict_names_unserializable_key() -> None:
    """An unencodable value fails to_dict with an error naming state['client']."""
    store = InMemoryStateStore()
    await store.set("client", threading.Lock())
    with pytest.raises(
        SerializationError,
        match=r"Cannot serialize state\['client'\] .*inject them as a Resource.*PickleSerializer",
    ):
        store.to_dict(JsonSerializer())


async def test_to_dict_names_nested_unserializable_path() -> None:
    """The error names the path inside the value too."""
    store = InMemoryStateStore(initial={"cfg": {"handles": [1, threading.Lock()]}})
    with pytest.raises(SerializationError, match=r"state\['cfg'\]\['handles'\]\[1\]"):
        store.to_dict()


async def test_typed_to_dict_names_unserializable_field() -> None:
    """A typed state's unencodable field is named as state.field."""

    class Holder(BaseModel):
        model_config = {"arbitrary_types_allowed": True}
        obj: MyRandomObject = Field(default_factory=MyRandomObject)

    with pytest.raises(SerializationError, match=r"Cannot serialize state\.obj "):
        InMemoryStateStore(Holder).to_dict()


async def test_pickle_serializer_snapshots_arbitrary_values() -> None:
    """With PickleSerializer the same state snapshots and restores."""
    store = InMemoryStateStore(initial={"obj": MyRandomObject("p")})
    restored = InMemoryStateStore.from_dict(
        json.loads(json.dumps(store.to_dict(PickleSerializer()))), PickleSerializer()
    )
    assert (await restored.get("obj")).name == "p"


async def test_strict_store_fails_at_set() -> None:
    """strict=True rejects an unencodable value at set, leaving the state unchanged."""
    store = InMemoryStateStore(strict=True)
    with pytest.raises(SerializationError, match=r"state\['client'\]"):
        await store.set("client", threading.Lock())
    assert await store.get("client", None) is None
    await store.set("ok", [1, 2])
    assert store.strict


async def test_to_dict_during_edit_uses_committed_state() -> None:
    """A snapshot taken while a block is open sees the state before the block."""
    store = InMemoryStateStore(initial={"n": 1})
    async with store.edit_state() as state:
        state["n"] = 2
        snapshot = store.to_dict()
    assert InMemoryStateStore.from_dict(snapshot)._state == {"n": 1}


@pytest.mark.parametrize(
    ("data", "match"),
    [
        pytest.param(
            {"nothing": 1}, r"must be the dict written by InMemoryStateStore.to_dict", id="foreign"
        ),
        pytest.param([1, 2], r"must be the dict written by", id="not-a-dict"),
        pytest.param(
            {"version": 99, "state_data": {}},
            r"format version 99, this batonflow reads versions 1, 2",
            id="newer",
        ),
        pytest.param(
            {"version": 1, "state_data": {"a": "{not json"}},
            r"Cannot decode state\['a'\]",
            id="corrupt-value",
        ),
        pytest.param(
            {"version": 1, "state_data": 42},
            r"Cannot restore the state \(TypeError",
            id="bad-data-type",
        ),
    ],
)
async def test_from_dict_rejects_bad_data(data, match: str) -> None:
    """Corrupt or foreign data is a ContextSerdeError, never a half-restored store."""
    with pytest.raises(ContextSerdeError, match=match):
        InMemoryStateStore.from_dict(data, JsonSerializer())


async def test_from_dict_state_that_no_longer_fits_the_model() -> None:
    """Saved state that does not fit the expected model is a ContextSerdeError."""
    data = {
        "version": 1,
        "state_type": None,
        "state_data": JsonSerializer().serialize({"count": "many"}),
    }
    with pytest.raises(ContextSerdeError, match=r"does not fit CounterState"):
        InMemoryStateStore.from_dict(data, state_type=CounterState)


async def test_in_memory_store_satisfies_state_store_protocol() -> None:
    """InMemoryStateStore implements the StateStore protocol."""
    from batonflow.core.state import StateStore

    assert isinstance(InMemoryStateStore(), StateStore)
    assert not isinstance(object(), StateStore)
