"""Serializers: JSON with types, allow-lists, pickle fallback, clear errors."""

import datetime as dt
import enum
import json
import threading
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from batonflow.core.errors import ContextSerdeError, SerializationError
from batonflow.core.events import Event, HumanResponseEvent, StartEvent, StopEvent
from batonflow.core.serialization import (
    BaseSerializer,
    JsonPickleSerializer,
    JsonSerializer,
    PickleSerializer,
    compact_json,
    deserialize_event,
    qualified_name,
    register_type,
    serialize_at,
    serialize_event,
)
from pydantic import BaseModel, Field, PrivateAttr, field_serializer, model_serializer


class JokeEvent(Event):
    joke: str


class Point(BaseModel):
    x: int = 0
    y: int = 0


class Color(enum.Enum):
    RED = "red"


class Opaque:
    def __init__(self, v: int = 1) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Opaque) and other.v == self.v


def round_trip(value, serializer=None):
    serializer = serializer or JsonSerializer()
    text = serializer.serialize(value)
    json.loads(text)  # always valid JSON
    return serializer.deserialize(text)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(None, id="none"),
        pytest.param(True, id="bool"),
        pytest.param(3, id="int"),
        pytest.param(2.5, id="float"),
        pytest.param("text", id="str"),
        pytest.param([1, "a", None], id="list"),
        pytest.param({"a": {"b": [1, 2]}}, id="dict"),
        pytest.param((1, (2, 3)), id="tuple"),
        pytest.param({3, 1, 2}, id="set"),
        pytest.param(frozenset({"a"}), id="frozenset"),
        pytest.param({1: "one", (2, 3): "pair"}, id="non-str-keys"),
        pytest.param({"__bf__": "model", "x": 1}, id="dict-with-reserved-key"),
        pytest.param(dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC), id="datetime"),
        pytest.param(dt.date(2026, 1, 2), id="date"),
        pytest.param(dt.time(3, 4, 5), id="time"),
        pytest.param(dt.timedelta(days=1, seconds=2, microseconds=3), id="timedelta"),
        pytest.param(Decimal("1.10"), id="decimal"),
        pytest.param(uuid.UUID(int=5), id="uuid"),
        pytest.param(Path("/tmp/x"), id="path"),
        pytest.param(b"\x00bytes", id="bytes"),
    ],
)
async def test_json_round_trips_value_and_type(value) -> None:
    """JSON types pass as is; tuples, sets, dates and friends come back with their type."""
    back = round_trip(value)
    assert back == value and type(back) is type(value)


async def test_plain_json_is_written_as_is() -> None:
    """Plain JSON values are written without any wrapping."""
    assert JsonSerializer().serialize({"a": [1, "b", None]}) == '{"a":[1,"b",null]}'


async def test_model_comes_back_as_same_class() -> None:
    """A pydantic model is decoded as an instance of its class."""
    back = round_trip({"p": Point(x=1, y=2)})
    assert back == {"p": Point(x=1, y=2)} and type(back["p"]) is Point


async def test_event_with_extra_fields_and_nested_models() -> None:
    """Events keep their class, extra fields and nested models in Any fields."""
    ev = StopEvent(result=JokeEvent(joke="ha", rating=3, when=dt.date(2026, 1, 1)))
    back = round_trip(ev)
    assert type(back) is StopEvent and type(back.result) is JokeEvent
    assert back.result.rating == 3 and back.result.when == dt.date(2026, 1, 1)


async def test_start_event_arbitrary_fields() -> None:
    """A StartEvent's keyword fields round-trip."""
    back = round_trip(StartEvent(topic="pirates", n=(1, 2)))
    assert back.topic == "pirates" and back.n == (1, 2)


async def test_enum_is_written_as_its_value() -> None:
    """An Enum member is written as its value (typed fields turn it back into the member)."""
    assert round_trip(Color.RED) == "red"

    class WithColor(BaseModel):
        c: Color = Color.RED

    assert round_trip(WithColor()).c is Color.RED


async def test_field_serializer_is_honoured() -> None:
    """A field with a pydantic field_serializer is written by pydantic and re-validated."""

    class Temp(BaseModel):
        celsius: float = 0.0

        @field_serializer("celsius")
        def _round(self, v: float) -> float:
            return round(v, 1)

    assert round_trip(Temp(celsius=21.456)).celsius == 21.5


async def test_model_serializer_is_honoured() -> None:
    """A model with a model_serializer is dumped by pydantic."""

    class Pair(BaseModel):
        a: int = 0
        b: int = 0

        @model_serializer
        def _ser(self) -> dict:
            return {"a": self.a, "b": self.a * 10}

    assert round_trip(Pair(a=2, b=0)) == Pair(a=2, b=20)


async def test_excluded_fields_are_not_written() -> None:
    """Fields marked exclude=True are left out (their default comes back)."""

    class Secret(BaseModel):
        public: str = ""
        token: str = Field(default="none", exclude=True)

    text = JsonSerializer().serialize(Secret(public="p", token="t0ps3cret"))
    assert "t0ps3cret" not in text
    assert JsonSerializer().deserialize(text) == Secret(public="p", token="none")


async def test_private_attributes_are_not_written() -> None:
    """Private attributes are runtime-only and not serialized."""

    class WithPrivate(Event):
        _cache: dict = PrivateAttr(default_factory=dict)

    ev = WithPrivate()
    ev._cache["k"] = threading.Lock()
    assert type(round_trip(ev)) is WithPrivate


async def test_locally_defined_model_round_trips_in_process() -> None:
    """A model defined inside a function is known once serialized in this process."""

    class Local(BaseModel):
        v: int = 0

    assert type(round_trip(Local(v=1))) is Local


async def test_unknown_local_model_gives_clear_error() -> None:
    """A local class this process never saw cannot be decoded; the fix is named."""
    text = json.dumps({"__bf__": "model", "type": "tests.nowhere:f.<locals>.Gone", "fields": {}})
    with pytest.raises(
        ContextSerdeError,
        match=r"'tests.nowhere:f.<locals>.Gone' is not a type this process trusts.*register_type",
    ):
        JsonSerializer().deserialize(text)


async def test_a_module_named_by_data_is_never_imported(capsys: pytest.CaptureFixture[str]) -> None:
    """Data naming a module this process has not imported does not import it (``this`` prints
    the Zen of Python when imported)."""
    import sys

    assert "this" not in sys.modules
    text = json.dumps({"__bf__": "model", "type": "this:Anything", "fields": {}})
    with pytest.raises(ContextSerdeError, match="not a type this process trusts"):
        JsonSerializer().deserialize(text)
    assert "this" not in sys.modules and capsys.readouterr().out == ""


async def test_an_allow_listed_model_of_a_loaded_module_is_restored() -> None:
    """A class named in allowed_types is found in its (already imported) module."""
    text = json.dumps({"__bf__": "model", "type": f"{__name__}:Point", "fields": {"x": 4}})
    allowed = JsonSerializer(allowed_types=[f"{__name__}.Point"])
    assert allowed.deserialize(text) == Point(x=4)


async def test_models_named_by_registered_types_are_trusted() -> None:
    """register_models() also trusts the models an event's fields name (list[Inner] | None)."""
    from batonflow.core.data._type_registry import KNOWN, qualified_name, register_models

    class Inner(BaseModel):
        v: int

    class Outer(Event):
        parts: list[Inner] | None = None

    register_models(Outer)
    assert KNOWN[qualified_name(Inner)] is Inner


@pytest.mark.parametrize(
    ("type_name", "match"),
    [
        pytest.param("os:system", r"'os:system' is not a type this process trusts", id="function"),
        pytest.param("subprocess:Popen", r"not a type this process trusts", id="class"),
        pytest.param(
            "no_such_module_xyz:Thing",
            r"not a type this process trusts.*register_type",
            id="missing-module",
        ),
        pytest.param(f"{__name__}:Nope", r"not a type this process trusts", id="missing-class"),
    ],
)
async def test_decode_only_imports_pydantic_models(type_name: str, match: str) -> None:
    """Decoding never creates non-model classes or calls arbitrary callables."""
    text = json.dumps({"__bf__": "model", "type": type_name, "fields": {}})
    with pytest.raises(ContextSerdeError, match=match):
        JsonSerializer().deserialize(text)


async def test_allowed_types_restricts_decoding() -> None:
    """With allowed_types only those classes (and built-in events) are decoded."""
    text = JsonSerializer().serialize([Point(x=1), StopEvent(result=1)])
    only_points = JsonSerializer(allowed_types=[Point])
    assert only_points.deserialize(text)[0] == Point(x=1)
    by_name = JsonSerializer(allowed_types=[f"{__name__}.Point"])
    assert by_name.deserialize(text)[0] == Point(x=1)
    with pytest.raises(
        ContextSerdeError,
        match=r"'.*:Point' is not in allowed_types; add it to JsonSerializer\(allowed_types=\[...\]\)",
    ):
        JsonSerializer(allowed_types=[JokeEvent]).deserialize(text)


async def test_allowed_types_rejects_bad_entries() -> None:
    """allowed_types entries must be classes or names."""
    with pytest.raises(
        TypeError, match="allowed_types takes classes or 'module.ClassName' strings"
    ):
        JsonSerializer(allowed_types=[42])  # type: ignore[list-item]


async def test_model_that_changed_is_a_clear_error() -> None:
    """Data that no longer validates against its model says the model changed."""
    text = json.dumps({"__bf__": "model", "type": qualified_name(JokeEvent), "fields": {}})
    with pytest.raises(
        ContextSerdeError,
        match=r"no longer fits JokeEvent .*joke: Field required.*migrate the data",
    ):
        JsonSerializer().deserialize(text)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        pytest.param("{not json", r"Cannot decode serialized data", id="not-json"),
        pytest.param(
            '{"__bf__": "wormhole", "v": 1}',
            r"unknown tag 'wormhole'; .*upgrade batonflow",
            id="unknown-tag",
        ),
        pytest.param('{"__bf__": "tuple"}', r"malformed 'tuple' entry", id="malformed"),
        pytest.param(
            '{"__bf__": "datetime", "v": "yesterday"}', r"malformed 'datetime' entry", id="bad-date"
        ),
    ],
)
async def test_corrupt_text_is_context_serde_error(text: str, match: str) -> None:
    """Corrupt input is a ContextSerdeError (also a ValueError) with a clear message."""
    with pytest.raises(ContextSerdeError, match=match):
        JsonSerializer().deserialize(text)
    with pytest.raises(ValueError):
        JsonSerializer().deserialize(text)


async def test_unencodable_value_names_its_path() -> None:
    """An unencodable value is a SerializationError naming where it sits and the fixes."""
    with pytest.raises(
        SerializationError,
        match=r"Cannot serialize value\['a'\]\[1\]\.lock \(a _thread.lock\) with JsonSerializer: .*Resource.*PickleSerializer",
    ):
        JsonSerializer().serialize({"a": [0, Event(lock=threading.Lock())]})
    with pytest.raises(TypeError):  # SerializationError is also a TypeError
        JsonSerializer().serialize(Opaque())


async def test_circular_reference_is_reported() -> None:
    """A value that contains itself is reported instead of recursing forever."""
    loop: list = [1]
    loop.append(loop)
    with pytest.raises(SerializationError, match=r"value\[1\]: it contains itself"):
        JsonSerializer().serialize(loop)


async def test_shared_but_acyclic_values_are_fine() -> None:
    """The same object twice (not a cycle) encodes twice."""
    shared = [1]
    assert round_trip({"a": shared, "b": shared}) == {"a": [1], "b": [1]}


async def test_pickle_serializer_falls_back_only_where_needed() -> None:
    """PickleSerializer writes JSON where it can and pickles the rest in place."""
    value = {"plain": [1, 2], "obj": Opaque(7), "ev": JokeEvent(joke="j", extra=Opaque(1))}
    text = PickleSerializer().serialize(value)
    assert '"plain":[1,2]' in text and '"__bf__":"pickle"' in text
    assert PickleSerializer().deserialize(text) == value


async def test_json_serializer_refuses_pickled_data() -> None:
    """JsonSerializer never unpickles; it names PickleSerializer as the way."""
    text = PickleSerializer().serialize({"obj": Opaque()})
    with pytest.raises(
        ContextSerdeError,
        match=r"holds pickled data, which JsonSerializer refuses to load; use PickleSerializer",
    ):
        JsonSerializer().deserialize(text)


async def test_pickle_serializer_unpicklable_value() -> None:
    """A value neither JSON nor pickle can encode says to use a resource."""
    with pytest.raises(
        SerializationError, match=r"neither JSON nor pickle can encode it .*inject it as a Resource"
    ):
        PickleSerializer().serialize({"lock": threading.Lock()})


async def test_json_pickle_serializer_is_an_alias() -> None:
    """JsonPickleSerializer is LlamaIndex's name for PickleSerializer."""
    assert JsonPickleSerializer is PickleSerializer


async def test_event_helpers_round_trip_and_check_type() -> None:
    """serialize_event/deserialize_event round-trip events and refuse non-events."""
    s = JsonSerializer()
    ev = HumanResponseEvent(response="42")
    assert deserialize_event(serialize_event(ev, s), s) == ev
    with pytest.raises(ContextSerdeError, match=r"Expected a serialized event, got Point"):
        deserialize_event(s.serialize(Point()), s)
    with pytest.raises(SerializationError, match=r"event JokeEvent\.lock"):
        serialize_event(JokeEvent(joke="x", lock=threading.Lock()), s)


async def test_register_type_makes_local_class_decodable_by_name() -> None:
    """register_type lets another serializer instance decode a class it never encoded."""

    class Registered(BaseModel):
        v: int = 1

    register_type(Registered)
    text = json.dumps({"__bf__": "model", "type": qualified_name(Registered), "fields": {"v": 2}})
    assert JsonSerializer().deserialize(text) == Registered(v=2)
    with pytest.raises(TypeError, match=r"register_type\(\) takes pydantic model classes"):
        register_type(dict)  # type: ignore[arg-type]


async def test_custom_serializer_errors_are_named_by_serialize_at() -> None:
    """serialize_at wraps a custom serializer's failure with the key path."""

    class Strict(BaseSerializer):
        def serialize(self, value):
            return json.dumps(value)

        def deserialize(self, value):
            return json.loads(value)

    assert serialize_at(Strict(), [1], "state['a']") == "[1]"
    with pytest.raises(
        SerializationError, match=r"Cannot serialize state\['a'\] with Strict: TypeError"
    ):
        serialize_at(Strict(), {1, 2}, "state['a']")


async def test_base_serializer_is_abstract() -> None:
    """BaseSerializer cannot be instantiated without both methods."""
    with pytest.raises(TypeError):
        BaseSerializer()  # type: ignore[abstract]


async def test_aliased_fields_round_trip() -> None:
    """Fields with an alias are written under the name validation reads back."""

    class Aliased(BaseModel):
        user_name: str = Field(default="", alias="userName")
        other: int = Field(default=0, validation_alias="otherValue")

    value = Aliased(userName="ada", otherValue=3)
    assert round_trip(value) == value


async def test_wrap_model_serializer_keeps_nested_classes() -> None:
    """A 'wrap' model_serializer (as llama-index's) does not lose nested subclasses."""

    class Base(BaseModel):
        x: int = 0

    class Child(Base):
        y: int = 0

    class Holder(BaseModel):
        item: Base

        @model_serializer(mode="wrap")
        def _ser(self, handler):
            data = handler(self)
            data["class_name"] = "Holder"
            return data

    back = round_trip(Holder(item=Child(x=1, y=2)))
    assert type(back.item) is Child and back.item.y == 2


@pytest.mark.parametrize(
    "value",
    [None, True, 0, -7, 1.5, 1e300, float("nan"), "x", 'é\ud800\n"', [], {}, [1, [2, {"a": None}]]],
)
def test_compact_json_writes_what_json_dumps_writes(value: object) -> None:
    """The held C encoder writes json.dumps's compact text, ASCII only (a lone surrogate too)."""
    assert compact_json(value) == json.dumps(value, separators=(",", ":"))
    assert compact_json(value).isascii()


def test_compact_json_refuses_what_is_not_json() -> None:
    """Not a JSON value: TypeError naming the type; a value containing itself: RecursionError."""
    with pytest.raises(TypeError, match=r"^Object of type Decimal is not JSON serializable$"):
        compact_json({"a": [Decimal(1)]})
    looped: list[object] = []
    looped.append(looped)
    with pytest.raises(RecursionError):
        compact_json(looped)
