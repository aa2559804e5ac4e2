"""When event classes build their pydantic schema: the engine's own on first use, users' at once.

``import batonflow.core`` builds no event schema (``defer_build``: the build and the pydantic
modules it loads cost the import a third of its time, see bench/startup.py). Every other Event
subclass, including one of a deferred built-in such as ``StartEvent``, is built by its class
statement exactly as a plain pydantic model is: the same error, raised at the same place.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from batonflow.core import Event, StartEvent, StopEvent, Workflow, step
from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Plain(BaseModel):
    """A pydantic model with Event's configuration, built at definition as pydantic does."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)


def _bad_bound(base: type[BaseModel]) -> type:
    class Bad(base):  # type: ignore[valid-type,misc]
        count: int = Field(default=1, gt="not a number")

    return Bad


def _bad_validator(base: type[BaseModel]) -> type:
    class Bad(base):  # type: ignore[valid-type,misc]
        count: int = 0

        @field_validator("no_such_field")
        @classmethod
        def check(cls, value: Any) -> Any:
            return value

    return Bad


def _bad_default(base: type[BaseModel]) -> type:
    class Bad(base):  # type: ignore[valid-type,misc]
        count: int = Field(default=1, default_factory=int)

    return Bad


@pytest.mark.parametrize("define", [_bad_bound, _bad_validator, _bad_default])
@pytest.mark.parametrize("base", [Event, StartEvent, StopEvent], ids=lambda b: b.__name__)
def test_a_bad_field_in_a_user_event_raises_at_its_class_statement(
    define: Callable[[type[BaseModel]], type], base: type[Event]
) -> None:
    """The error a plain pydantic model raises at definition, an Event subclass raises too."""
    with pytest.raises(Exception) as plain:
        define(_Plain)
    with pytest.raises(type(plain.value)) as ours:
        define(base)
    assert _message(ours.value) == _message(plain.value)


def _message(error: BaseException) -> str:
    """The error's text without what differs between two definitions (an object's address)."""
    return re.sub(r"\d{6,}", "N", str(error))


def test_a_user_event_is_built_by_its_class_statement() -> None:
    """Subclasses of Event and of the deferred built-ins are complete once defined."""

    class Topic(StartEvent):
        topic: str

    class Joke(Event):
        text: str

    class LongJoke(Joke):
        length: int

    for cls in (Topic, Joke, LongJoke):
        assert cls.__pydantic_complete__, cls
        assert cls.model_config.get("defer_build") is False


def test_a_forward_reference_waits_for_first_use_as_in_pydantic() -> None:
    """A name defined after the class is resolved on first use, not refused at definition."""

    class Pair(Event):
        left: Later  # noqa: F821  (defined below, as a user's module may)

    assert not Pair.__pydantic_complete__

    class Later(Event):
        n: int = 1

    pair = Pair(left=Later(n=2))
    assert pair.left.n == 2


def test_import_builds_no_built_in_event_and_first_use_builds_it() -> None:
    """A fresh `import batonflow.core` leaves the engine's events unbuilt; a run builds them."""
    code = """
import asyncio
import batonflow.core as core
built = [n for n in core.__all__ if isinstance(getattr(core, n), type)
         and issubclass(getattr(core, n), core.Event) and getattr(core, n).__pydantic_complete__]
print("built at import:", built)

class Flow(core.Workflow):
    @core.step
    async def only(self, ev: core.StartEvent) -> core.StopEvent:
        return core.StopEvent(result=ev.n + 1)

async def main():
    return await Flow().run(n=1)

print("result:", asyncio.run(main()), core.StartEvent.__pydantic_complete__)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["built at import: []", "result: 2 True"]


async def test_user_events_run_in_a_workflow() -> None:
    """A user's events (built at definition) and the deferred built-ins run together."""

    class Doubled(Event):
        value: int

    class Flow(Workflow):
        @step
        async def double(self, ev: StartEvent) -> Doubled:
            return Doubled(value=ev.n * 2)

        @step
        async def finish(self, ev: Doubled) -> StopEvent:
            return StopEvent(result=ev.value)

    assert await Flow().run(n=4) == 8
