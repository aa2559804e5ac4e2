"""Steps with several event parameters run once per full set of events."""

from __future__ import annotations

import asyncio
import json

from batonflow.core import (
    Context,
    Event,
    JoinedEvents,
    StartEvent,
    StepBoundary,
    StopEvent,
    Workflow,
    step,
)


class Query(Event):
    text: str


class Nodes(Event):
    nodes: list[str]


class Answer(Event):
    text: str


class Synth(Workflow):
    @step
    async def start(self, ctx: Context, ev: StartEvent) -> Query | Nodes | None:
        for i in range(ev.pairs):
            ctx.send_event(Nodes(nodes=[f"n{i}"]))
            await asyncio.sleep(0)
            ctx.send_event(Query(text=f"q{i}"))
        return None

    @step
    async def synthesize(self, query: Query, nodes: Nodes) -> Answer:
        return Answer(text=f"{query.text}:{nodes.nodes[0]}")

    @step
    async def finish(self, ctx: Context, ev: Answer) -> StopEvent | None:
        answers = ctx.collect_events(ev, [Answer] * 3)
        if answers is None:
            return None
        return StopEvent(result=sorted(a.text for a in answers))


async def test_step_with_two_event_parameters_fires_per_set() -> None:
    """Each (Query, Nodes) pair runs the join step once, whatever the arrival order."""
    assert await Synth().run(pairs=3) == ["q0:n0", "q1:n1", "q2:n2"]


async def test_join_input_event_is_joined_events() -> None:
    """Listeners and instruments see the joined set as one JoinedEvents input."""
    w = Synth()
    inputs = []

    def listener(boundary: StepBoundary) -> None:
        if boundary.step_name == "synthesize":
            inputs.append(boundary.input_event)

    w.add_step_listener(listener)
    await w.run(pairs=3)
    assert all(isinstance(i, JoinedEvents) for i in inputs)
    assert sorted(i.events["query"].text for i in inputs) == ["q0", "q1", "q2"]


async def test_half_filled_join_survives_a_snapshot() -> None:
    """A Query waiting for its Nodes is saved and restored; the answer arrives after resume."""

    class Slow(Workflow):
        @step
        async def start(self, ctx: Context, ev: StartEvent) -> Query | Nodes | None:
            ctx.send_event(Query(text="q"))
            return None

        @step
        async def late(self, ctx: Context, ev: Query) -> None:
            return None

        @step
        async def synthesize(self, query: Query, nodes: Nodes) -> StopEvent:
            return StopEvent(result=f"{query.text}+{nodes.nodes}")

    w = Slow(disable_validation=True)
    handler = w.run()
    await asyncio.sleep(0.01)
    data = json.loads(json.dumps(handler.ctx.to_dict()))
    await handler.cancel_run()
    assert [j["param"] for j in data["joins"]] == ["query"]

    fresh = Slow(disable_validation=True)
    ctx = Context.from_dict(fresh, data)
    resumed = fresh.run(ctx=ctx)
    resumed.ctx.send_event(Nodes(nodes=["n"]))
    assert await resumed == "q+['n']"
