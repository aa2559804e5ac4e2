"""Events behave as LlamaIndex's: a dict of extra fields, private attributes, dump and repr shapes."""

from __future__ import annotations

import pytest
from batonflow.core import (
    Event,
    JsonSerializer,
    StartEvent,
    StopEvent,
    WorkflowCancelledEvent,
    WorkflowFailedEvent,
    WorkflowTimedOutEvent,
)
from pydantic import PrivateAttr


class Tagged(Event):
    label: str
    _token: str = PrivateAttr(default="none")


class Doubled(Event):
    _raw: int = PrivateAttr()
    _doubled: int = PrivateAttr()

    def __init__(self, _doubled: int, **params: object) -> None:
        super().__init__(**params)
        self._doubled = _doubled * 2


class Outcome(StopEvent):
    verdict: str
    score: int


async def test_extra_fields_are_the_mapping() -> None:
    """len, iteration, keys/values/items and to_dict cover the extra fields only."""
    ev = Tagged(label="x")
    assert len(ev) == 0 and list(ev) == [] and ev.to_dict() == {}
    ev["colour"] = "red"
    ev.size = 3
    assert len(ev) == 2
    assert list(ev) == ["colour", "size"]
    assert list(ev.keys()) == ["colour", "size"]
    assert list(ev.values()) == ["red", 3]
    assert dict(ev.items()) == {"colour": "red", "size": 3} == dict(ev) == ev.to_dict()
    assert "colour" in ev and "missing" not in ev


async def test_extra_fields_live_in_data() -> None:
    """``ev._data`` is the live dict of extra fields, as in LlamaIndex."""
    ev = Tagged(label="x", extra="a")
    assert ev._data == {"extra": "a"}
    ev.extra = "b"
    assert ev._data["extra"] == "b"
    ev["extra"] = "c"
    assert ev._data == {"extra": "c"} and ev.get("extra") == "c"
    copy = ev.to_dict()
    copy["extra"] = "changed"
    assert ev.extra == "c"  # to_dict() is a copy


async def test_declared_fields_are_read_like_extra_ones() -> None:
    """Declared fields answer ``ev[k]``, ``get`` and ``in`` too (a superset of LlamaIndex)."""
    ev = Tagged(label="x")
    assert ev["label"] == "x" and ev.get("label") == "x" and "label" in ev
    assert ev.get("nope", 7) == 7
    with pytest.raises(KeyError, match="nope"):
        ev["nope"]
    with pytest.raises(AttributeError, match="nope"):
        _ = ev.nope


async def test_attribute_reads_of_extra_fields() -> None:
    """``ev.name`` finds an extra field (also one written through ``_data``), an extra field
    whose name starts with "_", and a private attribute before an extra field of its name;
    a missing one raises AttributeError naming it, so ``getattr`` defaults work."""
    ev = StartEvent(topic="pirates", _note="kept")
    assert ev.topic == "pirates" and ev._note == "kept"
    ev._data["added"] = 1
    assert ev.added == 1
    assert getattr(ev, "missing", "default") == "default"
    with pytest.raises(AttributeError, match="'StartEvent' object has no attribute 'missing'"):
        _ = ev.missing
    tagged = Tagged(label="x")
    tagged._data["_token"] = "extra"
    assert tagged._token == "none"  # the private attribute wins, as in pydantic


async def test_private_attributes_given_as_keywords() -> None:
    """A private attribute passed as a keyword is set on the event, never an extra field."""
    ev = Tagged(label="x", _token="secret", other=1)
    assert ev._token == "secret"
    assert ev._data == {"other": 1}
    assert Tagged(label="y")._token == "none"
    assert "_token" not in Tagged(label="x", _token="s").model_dump()


async def test_private_attributes_with_an_own_init() -> None:
    """A subclass ``__init__`` passing private attributes on to ``super().__init__`` works."""
    ev = Doubled(a=1, _raw=2, _doubled=2)
    assert (ev._raw, ev._doubled) == (2, 4)
    assert ev._data == {"a": 1}


async def test_extra_fields_survive_json() -> None:
    """JsonSerializer round-trips declared and extra fields."""
    serializer = JsonSerializer()
    ev = Tagged(label="x", note="keep me")
    back = serializer.deserialize(serializer.serialize(ev))
    assert type(back) is Tagged
    assert back.label == "x" and back._data == {"note": "keep me"}


async def test_stop_event_dump_has_result_only_when_set() -> None:
    """``result`` is dumped only when set: typed stop events dump just their fields."""
    assert StopEvent(result="foo").model_dump() == {"result": "foo"}
    assert StopEvent().model_dump() == {}
    assert Outcome(verdict="ok", score=3).model_dump() == {"verdict": "ok", "score": 3}
    assert Outcome(verdict="ok", score=3, result=1).model_dump()["result"] == 1
    assert WorkflowCancelledEvent().model_dump() == {}
    assert WorkflowTimedOutEvent(timeout=2.0, active_steps=["a"]).model_dump() == {
        "timeout": 2.0,
        "active_steps": ["a"],
    }


async def test_stop_event_repr_and_str() -> None:
    """repr lists extra fields first, then declared ones; ``str`` is the result's."""
    assert repr(StopEvent(foo="foo", result=42)) == "StopEvent(foo='foo', result=42)"
    assert repr(Outcome(verdict="ok", score=3)) == "Outcome(verdict='ok', score=3)"
    assert repr(WorkflowCancelledEvent()) == "WorkflowCancelledEvent()"
    assert str(StopEvent(result=42)) == "42"
    assert str(StopEvent(result={"a": 1})) == "{'a': 1}"


async def test_event_repr_shows_declared_fields_only() -> None:
    """Events print as LlamaIndex's do: declared fields, not the extra ones."""
    assert repr(Event(a=1)) == "Event()" and str(Event(a=1)) == ""
    assert repr(Tagged(label="x", note="n")) == "Tagged(label='x')"
    assert str(Tagged(label="x", note="n")) == "label='x'"
    assert repr(StartEvent(topic="t")) == "StartEvent()"


async def test_failed_event_dumps_its_exception_as_data() -> None:
    """WorkflowFailedEvent dumps the exception as type and message, and loads it back."""
    ev = WorkflowFailedEvent(
        step_name="s", exception=RuntimeError("boom"), attempts=2, elapsed_seconds=0.5
    )
    assert ev.model_dump() == {
        "step_name": "s",
        "exception": {"exception_type": "builtins.RuntimeError", "exception_message": "boom"},
        "attempts": 2,
        "elapsed_seconds": 0.5,
    }
    again = WorkflowFailedEvent.model_validate(ev.model_dump())
    assert type(again.exception) is RuntimeError and str(again.exception) == "boom"
    serializer = JsonSerializer()
    back = serializer.deserialize(serializer.serialize(ev))
    assert isinstance(back, WorkflowFailedEvent) and str(back.exception) == "boom"


async def test_start_event_keyword_fields() -> None:
    """``StartEvent(topic=...)`` keeps its keyword fields as extra fields."""
    ev = StartEvent(topic="pirates")
    assert ev.topic == "pirates" and ev["topic"] == "pirates" and dict(ev) == {"topic": "pirates"}
    assert bool(StartEvent()) is True
