"""Collection joins: ``-> list[E]`` fan-outs gathered by a ``list[R]`` parameter."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import pytest
from batonflow.core import (
    CollectedEvents,
    Context,
    Event,
    StartEvent,
    StepBoundary,
    StopEvent,
    Workflow,
    WorkflowValidationError,
    step,
)
from batonflow.core.collect import All, Collect, Take


class Part(Event):
    n: int


class Result(Event):
    n: int
    square: int


class Squares(Workflow):
    @step
    async def split(self, ev: StartEvent) -> list[Part]:
        return [Part(n=i) for i in range(ev.count)]

    @step(num_workers=4)
    async def square(self, ev: Part) -> Result | None:
        await asyncio.sleep(0.001 * ((5 - ev.n) % 3))
        if ev.n == 3:
            return None  # a branch may end without a result
        return Result(n=ev.n, square=ev.n * ev.n)

    @step
    async def gather(self, results: list[Result]) -> StopEvent:
        return StopEvent(result=[r.square for r in results])


async def test_all_waits_for_every_branch_in_branch_order() -> None:
    """``list[R]`` fires once when every branch finished, in branch order, skipping dead ones."""
    assert await Squares().run(count=5) == [0, 1, 4, 16]


async def test_empty_fan_out_fires_with_empty_list() -> None:
    """A producer returning ``[]`` makes the join fire at once with ``[]``."""
    assert await Squares().run(count=0) == []


async def test_take_fires_on_the_nth_arrival() -> None:
    """``Collect(Take(2))`` fires with the first two results to arrive, not the first two
    branches: the branches finish in reverse order (each waits for the one after it), so the
    order does not depend on timers or on the machine's load."""
    finished = {n: asyncio.Event() for n in range(5)}
    finished[4].set()

    class Fastest(Workflow):
        @step
        async def split(self, ev: StartEvent) -> list[Part]:
            return [Part(n=i) for i in range(4)]

        @step(num_workers=4)
        async def square(self, ev: Part) -> Result:
            await finished[ev.n + 1].wait()  # 3 goes first, then 2, 1, 0
            finished[ev.n].set()
            return Result(n=ev.n, square=ev.n * ev.n)

        @step
        async def first_two(self, results: Annotated[list[Result], Collect(Take(2))]) -> StopEvent:
            return StopEvent(result=sorted(r.n for r in results))

    assert await Fastest().run() == [2, 3]


async def test_explicit_all_and_direct_collection() -> None:
    """``Collect(All())`` also collects the list items themselves when they are the type."""

    class Direct(Workflow):
        @step
        async def split(self, ev: StartEvent) -> list[Part]:
            return [Part(n=i) for i in range(3)]

        @step
        async def gather(
            self, ctx: Context, parts: Annotated[list[Part], Collect(All())]
        ) -> StopEvent:
            return StopEvent(result=[p.n for p in parts])

    assert await Direct().run() == [0, 1, 2]


async def test_sent_events_do_not_join_a_stream() -> None:
    """Events sent with ctx.send_event are not members of the collection stream."""

    class Mixed(Workflow):
        @step
        async def split(self, ctx: Context, ev: StartEvent) -> list[Part]:
            ctx.send_event(Part(n=99))
            return [Part(n=1), Part(n=2)]

        @step
        async def square(self, ev: Part) -> Result:
            return Result(n=ev.n, square=ev.n * ev.n)

        @step
        async def gather(self, results: list[Result]) -> StopEvent:
            return StopEvent(result=[r.n for r in results])

    assert await Mixed().run() == [1, 2]


async def test_collection_stream_survives_snapshots() -> None:
    """Snapshots at every boundary restore and finish with the same collected result."""
    w = Squares()
    snaps: list[dict[str, Any]] = []
    w.add_step_listener(lambda b: snaps.append(json.loads(json.dumps(b.ctx.to_dict()))))
    assert await w.run(count=5) == [0, 1, 4, 16]
    assert any(s["streams"] for s in snaps)
    for data in snaps:
        if data["is_running"]:
            fresh = Squares()
            assert await fresh.run(ctx=Context.from_dict(fresh, data)) == [0, 1, 4, 16]


async def test_collect_input_is_collected_events() -> None:
    """Listeners see a CollectedEvents input for the join step."""
    w = Squares()
    inputs: list[Any] = []

    def listener(boundary: StepBoundary) -> None:
        if boundary.step_name == "gather":
            inputs.append(boundary.input_event)

    w.add_step_listener(listener)
    await w.run(count=2)
    (collected,) = inputs
    assert isinstance(collected, CollectedEvents) and len(collected.events) == 2


async def test_bad_collection_parameters() -> None:
    """A list of non-events, or mixing a collection with other event parameters, is rejected."""
    with pytest.raises(WorkflowValidationError, match="collection parameter is list\\[E\\]"):

        class Bad(Workflow):
            @step
            async def gather(self, items: list[int]) -> StopEvent:
                return StopEvent()

    with pytest.raises(WorkflowValidationError, match="mixes a list"):

        class Mixed(Workflow):
            @step
            async def gather(self, results: list[Result], part: Part) -> StopEvent:
                return StopEvent()

    with pytest.raises(ValueError, match="Take\\(n\\) needs an integer"):
        Take(0)


async def test_stepwise_run_joins_the_collection() -> None:
    """In a stepwise run the caller holds each branch's event between waves: the join waits
    for every branch event to come back (in any order) and still fires in branch order."""
    handler = Squares().run(stepwise=True, count=5)
    parts = await handler.run_step()
    assert [p.n for p in parts] == [0, 1, 2, 3, 4]
    for part in parts:
        handler.ctx.send_event(part)
    results: list[Event] = []
    while produced := await handler.run_step():  # num_workers=4: more than one wave
        results.extend(produced)
    assert sorted(r.n for r in results) == [0, 1, 2, 4]  # branch 3 returned None
    held = max(results, key=lambda r: r.n)
    for result in reversed(results):
        if result is not held:
            handler.ctx.send_event(result)
    assert await handler.run_step() == []  # branch 4's event is still with the caller
    handler.ctx.send_event(held)
    (stop,) = await handler.run_step()
    assert isinstance(stop, StopEvent) and stop.result == [0, 1, 4, 16]
    assert await handler.run_step() is None
    assert await handler == [0, 1, 4, 16]


class Tick(Event):
    n: int


class CountedJoin(Workflow):
    @step
    async def fan(self, ctx: Context, ev: StartEvent) -> Tick | None:
        for n in range(ev.count):
            ctx.send_event(Tick(n=n))
        return None

    @step
    async def join(self, ctx: Context, ev: Tick) -> StopEvent | None:
        got = ctx.collect_events(ev, Tick, count=ev.n_wanted if hasattr(ev, "n_wanted") else 50)
        if got is None:
            return None
        return StopEvent(result=[t.n for t in got])


async def test_collect_events_count_form_waits_for_n_events_of_one_type() -> None:
    """collect_events(ev, Tick, count=50) returns the 50 Ticks in arrival order, once."""
    assert await CountedJoin().run(count=50) == list(range(50))


async def test_collect_events_count_form_matches_the_list_form() -> None:
    """A count and the equivalent list share one buffer shape: either completes the join."""

    class Mixed(CountedJoin):
        @step
        async def join(self, ctx: Context, ev: Tick) -> StopEvent | None:
            got = (
                ctx.collect_events(ev, Tick, count=3)
                if ev.n % 2
                else ctx.collect_events(ev, [Tick] * 3)
            )
            return None if got is None else StopEvent(result=len(got))

    assert await Mixed().run(count=3) == 3


async def test_collect_events_type_alone_waits_for_one() -> None:
    """collect_events(ev, Tick) is collect_events(ev, [Tick])."""

    class One(CountedJoin):
        @step
        async def join(self, ctx: Context, ev: Tick) -> StopEvent | None:
            got = ctx.collect_events(ev, Tick)
            return None if got is None else StopEvent(result=got[0].n)

    assert await One().run(count=1) == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        pytest.param({"expected": [Tick], "count": 2}, r"counts events of one type", id="list"),
        pytest.param({"expected": Tick, "count": -1}, r"whole number >= 0", id="negative"),
        pytest.param({"expected": Tick, "count": 1.5}, r"whole number >= 0", id="float"),
    ],
)
async def test_collect_events_count_errors_name_the_fix(kwargs: dict[str, Any], match: str) -> None:
    """A count with a list, or a count that is not a whole number, is a TypeError with a fix."""

    class Bad(CountedJoin):
        @step
        async def join(self, ctx: Context, ev: Tick) -> StopEvent | None:
            ctx.collect_events(ev, **kwargs)
            return StopEvent(result=None)

    with pytest.raises(TypeError, match=match):
        await Bad().run(count=1)
