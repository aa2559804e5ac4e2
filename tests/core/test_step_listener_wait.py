"""A step listener that returns an awaitable (a checkpoint written off the event loop).

The run stays as the listener saw it (its outputs queued, nothing new started) until the
awaitable is done, while the loop serves everything else; an awaitable that raises fails the
run, or, for a store that is away (``StoreUnreachableError`` with ``retry_after``), makes the
run call the listener again after the pause.
"""

from __future__ import annotations

import asyncio

import pytest
from batonflow.core import Event, StartEvent, StopEvent, Workflow, step
from batonflow.core.errors import StoreFullError, StoreUnreachableError


class Middle(Event):
    n: int


class TwoSteps(Workflow):
    @step
    async def first(self, ev: StartEvent) -> Middle:
        return Middle(n=1)

    @step
    async def second(self, ev: Middle) -> StopEvent:
        return StopEvent(result=ev.n + 1)


async def _until(condition) -> None:  # type: ignore[no-untyped-def]
    async with asyncio.timeout(10):
        while not condition():
            await asyncio.sleep(0.001)


async def test_the_run_waits_for_the_listeners_awaitable():
    """The next step starts only once the listener's awaitable is done; the loop runs meanwhile."""
    flow = TwoSteps(timeout=30)
    written: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    seen: list[str] = []

    def listener(boundary):  # type: ignore[no-untyped-def]
        seen.append(boundary.step_name)
        return written if boundary.step_name == "first" else None

    flow.add_step_listener(listener)
    handler = flow.run()
    await _until(lambda: seen == ["first"])
    for _ in range(50):
        await asyncio.sleep(0)  # the loop turns; the run does not go on
    assert seen == ["first"]
    assert not handler.done()
    written.set_result(None)
    assert await handler == 2
    assert seen == ["first", "second"]


async def test_an_awaitable_that_raises_fails_the_run():
    """A write that failed off the loop fails the run with its error, as a raising listener."""
    flow = TwoSteps(timeout=30)

    async def refused() -> None:
        raise StoreFullError("The disk is full; free some space.")

    flow.add_step_listener(lambda boundary: refused())
    with pytest.raises(StoreFullError, match="disk is full"):
        await flow.run()


async def test_an_awaitable_that_finds_the_store_away_is_made_again():
    """An awaitable failing with retry_after makes the run call the listener again."""
    flow = TwoSteps(timeout=30)
    calls: list[str] = []

    async def away() -> None:
        raise StoreUnreachableError("the database restarts", retry_after=0.01)

    def listener(boundary):  # type: ignore[no-untyped-def]
        calls.append(boundary.step_name)
        return away() if calls.count(boundary.step_name) == 1 else None

    flow.add_step_listener(listener)
    assert await flow.run() == 2
    assert calls == ["first", "first", "second", "second"]
