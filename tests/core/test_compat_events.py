"""LlamaIndex 2.26 event helpers: serializable exceptions and events, UnreconstructedException,
CollectionReleaseEvent, IdleReleasedEvent; exceptions in snapshots."""

from __future__ import annotations

import json

import pytest
from batonflow.core import (
    CollectedEvents,
    CollectionReleaseEvent,
    Context,
    Event,
    IdleReleasedEvent,
    JsonSerializer,
    SerializableEvent,
    SerializableException,
    SerializableOptionalException,
    StartEvent,
    StepFailedEvent,
    StopEvent,
    UnreconstructedException,
    Workflow,
    catch_error,
    step,
)
from pydantic import BaseModel


class QuotaExceeded(Exception):
    pass


class NeedsTwoArgs(Exception):
    def __init__(self, code: int, detail: str) -> None:
        super().__init__(f"{code}: {detail}")


class Ping(Event):
    n: int


async def test_json_serializer_round_trips_exceptions() -> None:
    """Exceptions encode as type name and message and come back as their class."""
    ser = JsonSerializer()
    back = ser.deserialize(ser.serialize({"a": ValueError("bad"), "b": QuotaExceeded("429")}))
    assert type(back["a"]) is ValueError and str(back["a"]) == "bad"
    assert type(back["b"]) is QuotaExceeded and str(back["b"]) == "429"


async def test_exception_that_cannot_be_rebuilt_is_unreconstructed() -> None:
    """A class that needs more than the message, or is not loaded, or not allowed, becomes an
    UnreconstructedException keeping the message and the original type name."""
    ser = JsonSerializer()
    two = ser.deserialize(ser.serialize(NeedsTwoArgs(7, "nope")))
    assert type(two) is UnreconstructedException
    assert str(two) == "7: nope"
    assert two.original_type == f"{__name__}.NeedsTwoArgs"
    unknown = ser.deserialize(
        json.dumps(
            {
                "__bf__": "exception",
                "exception_type": "not_imported_pkg.Boom",
                "exception_message": "m",
            }
        )
    )
    assert isinstance(unknown, UnreconstructedException)
    assert unknown.original_type == "not_imported_pkg.Boom"
    strict = JsonSerializer(allowed_types=[])
    assert type(strict.deserialize(ser.serialize(QuotaExceeded("x")))) is (UnreconstructedException)
    assert type(strict.deserialize(ser.serialize(KeyError("k")))) is KeyError  # builtins


async def test_failed_step_event_survives_a_snapshot() -> None:
    """A snapshot taken while a @catch_error step handles a failure restores with the exception
    (it used to fail with SerializationError, breaking durable runs with error handlers)."""
    saved: list[dict[str, object]] = []

    class Rescued(Workflow):
        @step
        async def call(self, ev: StartEvent) -> StopEvent:
            raise QuotaExceeded("rate limited")

        @catch_error
        async def rescue(self, ctx: Context, ev: StepFailedEvent) -> StopEvent:
            saved.append(json.loads(json.dumps(ctx.to_dict())))
            return StopEvent(result=f"{type(ev.exception).__name__}: {ev.exception}")

    assert await Rescued().run() == "QuotaExceeded: rate limited"
    restored = Context.from_dict(Rescued(), saved[0])
    assert await Rescued().run(ctx=restored) == "QuotaExceeded: rate limited"


async def test_serializable_field_types_in_user_models() -> None:
    """``SerializableException`` / ``SerializableEvent`` fields dump to JSON and load back."""

    class Report(BaseModel):
        error: SerializableException
        maybe: SerializableOptionalException = None
        trigger: SerializableEvent

    report = Report(error=QuotaExceeded("slow down"), trigger=Ping(n=3))
    data = json.loads(report.model_dump_json())
    assert data["error"] == {
        "exception_type": f"{__name__}.QuotaExceeded",
        "exception_message": "slow down",
    }
    assert data["maybe"] is None
    back = Report.model_validate(data)
    assert type(back.error) is QuotaExceeded and str(back.error) == "slow down"
    assert back.trigger == Ping(n=3) and type(back.trigger) is Ping
    assert report.model_dump()["error"] is report.error  # python mode keeps the object
    with pytest.raises(ValueError, match=r"an exception is written as"):
        Report.model_validate({"error": "oops", "trigger": data["trigger"]})


async def test_collection_release_event_is_the_collect_trigger() -> None:
    """LlamaIndex's CollectionReleaseEvent is what a failing collect step's handler sees."""
    assert CollectionReleaseEvent is CollectedEvents

    class Part(Event):
        n: int

    class W(Workflow):
        @step
        async def split(self, ev: StartEvent) -> list[Part]:
            return [Part(n=1), Part(n=2)]

        @step
        async def gather(self, parts: list[Part]) -> StopEvent:
            raise RuntimeError("gather broke")

        @catch_error
        async def rescue(self, ev: StepFailedEvent) -> StopEvent:
            assert isinstance(ev.input_event, CollectionReleaseEvent)
            return StopEvent(result=[p.n for p in ev.input_event.events])

    assert await W().run() == [1, 2]


async def test_idle_released_event_is_a_stop_event() -> None:
    """Kept for imports and isinstance checks; batonflow never releases idle runs."""
    assert issubclass(IdleReleasedEvent, StopEvent)
    assert IdleReleasedEvent(result=1).result == 1
