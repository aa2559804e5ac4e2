"""Context services: send_event, collect_events, the store, deprecated get/set, phases."""

from __future__ import annotations

import asyncio

import pytest
from batonflow.core import (
    Context,
    ContextStateError,
    Event,
    StartEvent,
    StateKeyError,
    StopEvent,
    Workflow,
    step,
)
from pydantic import BaseModel, Field
from state_models import MyState


class MyEvent(Event):
    pass


class MyEventResult(Event):
    result: str


class GatherEvent(Event):
    pass


async def test_send_event_and_collect_events_gather() -> None:
    """Seed 004: two sent events are handled and gathered with their GatherEvent."""

    class MyWorkflow(Workflow):
        @step
        async def dispatch_step(self, ctx: Context, ev: StartEvent) -> MyEvent | GatherEvent:
            ctx.send_event(MyEvent())
            ctx.send_event(MyEvent())
            return GatherEvent()

        @step
        async def handle_my_event(self, ev: MyEvent) -> MyEventResult:
            return MyEventResult(result="result")

        @step
        async def gather(self, ctx: Context, ev: GatherEvent | MyEventResult) -> StopEvent | None:
            events = ctx.collect_events(ev, [MyEventResult, MyEventResult])
            if not events:
                return None
            return StopEvent(result=events)

    result = await MyWorkflow().run()
    assert result == [MyEventResult(result="result"), MyEventResult(result="result")]


class QueryEvent(Event):
    query: str


class RetrieveEvent(Event):
    nodes: list[str]


async def test_collect_events_returns_in_requested_order() -> None:
    """Events arriving in any order come back in the order of ``expected``."""

    class Synth(Workflow):
        @step
        async def start(self, ctx: Context, ev: StartEvent) -> QueryEvent | RetrieveEvent:
            ctx.send_event(RetrieveEvent(nodes=["n1"]))
            return QueryEvent(query="q")

        @step
        async def synthesize(
            self, ctx: Context, ev: QueryEvent | RetrieveEvent
        ) -> StopEvent | None:
            data = ctx.collect_events(ev, [QueryEvent, RetrieveEvent])
            if data is None:
                return None
            query_event, retrieve_event = data
            return StopEvent(result=(query_event.query, retrieve_event.nodes))

    assert await Synth().run() == ("q", ["n1"])


async def test_collect_events_large_fan_in_and_buffer_ids() -> None:
    """A 2,000-event fan-in releases once; separate buffer ids do not mix."""

    class Item(Event):
        i: int

    class Fan(Workflow):
        @step
        async def start(self, ctx: Context, ev: StartEvent) -> Item | None:
            for i in range(2000):
                ctx.send_event(Item(i=i))
            return None

        @step(num_workers=16)
        async def collect(self, ctx: Context, ev: Item) -> StopEvent | None:
            bucket = "even" if ev.i % 2 == 0 else "odd"
            got = ctx.collect_events(ev, [Item] * 1000, buffer_id=bucket)
            if got is None or bucket == "odd":
                if got is not None:
                    await ctx.store.set("odd", [e.i for e in got])
                return None
            return StopEvent(result=[e.i for e in got])

    w = Fan()
    handler = w.run()
    evens = await handler
    assert evens == list(range(0, 2000, 2)) or sorted(evens) == list(range(0, 2000, 2))
    assert len(evens) == 1000


async def test_send_event_to_a_named_step() -> None:
    """``send_event(ev, step=name)`` delivers only to that step."""
    seen: list[str] = []

    class W(Workflow):
        @step
        async def start(self, ctx: Context, ev: StartEvent) -> MyEvent | None:
            ctx.send_event(MyEvent(), step="b")
            return None

        @step
        async def a(self, ev: MyEvent) -> StopEvent:
            seen.append("a")
            return StopEvent(result="a")

        @step
        async def b(self, ev: MyEvent) -> StopEvent:
            seen.append("b")
            return StopEvent(result="b")

    assert await W().run() == "b"
    assert seen == ["b"]


async def test_store_get_set_and_missing_key() -> None:
    """``ctx.store`` get/set, defaults, and a missing key raising a KeyError."""

    class W(Workflow):
        @step
        async def only(self, ctx: Context, ev: StartEvent) -> StopEvent:
            await ctx.store.set("query", "q")
            assert await ctx.store.get("missing", default=None) is None
            with pytest.raises(KeyError):
                await ctx.store.get("missing")
            with pytest.raises(StateKeyError):
                await ctx.store.get("missing")
            return StopEvent(result=await ctx.store.get("query"))

    assert await W().run() == "q"


async def test_deprecated_get_set_warn_and_use_the_store() -> None:
    """``ctx.get``/``ctx.set`` still work, warn DeprecationWarning and point at ctx.store."""

    class Flow(Workflow):
        @step
        async def step1(self, ctx: Context, ev: StartEvent) -> StopEvent:
            with pytest.warns(DeprecationWarning, match=r"ctx\.store"):
                await ctx.set("user_id", ev.get("uid"))
            with pytest.warns(DeprecationWarning, match=r"ctx\.store"):
                uid = await ctx.get("user_id")
            with pytest.warns(DeprecationWarning):
                missing = await ctx.get("counter", default=0)
            return StopEvent(result=(uid, missing, await ctx.store.get("user_id")))

    assert await Flow().run(uid="u1") == ("u1", 0, "u1")


class CounterState(BaseModel):
    count: int = Field(default=0)


async def test_typed_counter_state_edit_state() -> None:
    """``Context[CounterState]`` initialises typed state; edit_state yields the model."""

    class MyWorkflow(Workflow):
        @step
        async def start(self, ctx: Context[CounterState], ev: StartEvent) -> StopEvent:
            async with ctx.store.edit_state() as state:
                state.count += 1
            current = await ctx.store.get("count")
            await ctx.store.set("count", current + 1)
            state = await ctx.store.get_state()
            return StopEvent(result=state.count)

    w = MyWorkflow()
    ctx = Context(w)
    assert await w.run(ctx=ctx) == 2
    assert await w.run(ctx=ctx) == 4


async def test_my_state_dotted_paths_and_serialization() -> None:
    """Seed MyState: get_state/set_state, dotted paths, and a to_dict/from_dict round trip."""
    import json

    class MyWorkflow(Workflow):
        @step
        async def start(self, ctx: Context[MyState], ev: StartEvent) -> StopEvent:
            state = await ctx.store.get_state()
            state.my_obj.name = "new_name"
            await ctx.store.set_state(state)
            name = await ctx.store.get("my_obj.name")
            await ctx.store.set("my_obj.name", "newer_name")
            return StopEvent(result=name)

    w = MyWorkflow()
    handler = w.run()
    assert await handler == "new_name"
    data = json.loads(json.dumps(handler.ctx.to_dict()))
    restored = Context.from_dict(MyWorkflow(), data)
    state = await restored.store.get_state()
    assert isinstance(state, MyState)
    assert state.my_obj.name == "newer_name"


async def test_edit_state_is_atomic_across_workers() -> None:
    """1,000 read-modify-write increments with an await inside lose no update."""

    class Inc(Event):
        pass

    class Done(Event):
        pass

    class W(Workflow):
        @step
        async def start(self, ctx: Context, ev: StartEvent) -> Inc | None:
            for _ in range(1000):
                ctx.send_event(Inc())
            return None

        @step(num_workers=8)
        async def inc(self, ctx: Context, ev: Inc) -> Done:
            async with ctx.store.edit_state() as state:
                value = state.get("n", 0)
                await asyncio.sleep(0)
                state["n"] = value + 1
            return Done()

        @step
        async def done(self, ctx: Context, ev: Done) -> StopEvent | None:
            if ctx.collect_events(ev, [Done] * 1000) is None:
                return None
            return StopEvent(result=await ctx.store.get("n"))

    assert await W().run() == 1000


async def test_context_methods_outside_a_step() -> None:
    """Step-only methods called from outside raise ContextStateError naming the method."""

    class W(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            return StopEvent()

    ctx = Context(W())
    with pytest.raises(
        ContextStateError, match=r"ctx\.collect_events\(\) can only be called inside a step"
    ):
        ctx.collect_events(MyEvent(), [MyEvent])
    with pytest.raises(ContextStateError, match=r"ctx\.send_event\(\) requires a running workflow"):
        ctx.send_event(MyEvent())
    with pytest.raises(ContextStateError, match=r"ctx\.retry_info\(\)"):
        ctx.retry_info()
    with pytest.raises(TypeError, match="send_event\\(\\) takes an Event"):
        ctx.send_event("x")  # type: ignore[arg-type]


async def test_send_event_after_the_run_ended() -> None:
    """Sending into a finished run is an error that says to start a new run."""

    class W(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            return StopEvent()

    handler = W().run()
    await handler
    with pytest.raises(
        ContextStateError, match=r"has ended \(completed\).*workflow\.run\(ctx=ctx\)"
    ):
        handler.ctx.send_event(MyEvent())


async def test_running_steps_and_is_running() -> None:
    """``ctx.is_running`` and ``running_steps()`` reflect the run."""
    gate = asyncio.Event()

    class W(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            await gate.wait()
            return StopEvent()

    handler = W().run()
    await asyncio.sleep(0)
    assert handler.ctx.is_running
    assert await handler.ctx.running_steps() == ["only"]
    gate.set()
    await handler
    assert not handler.ctx.is_running
    assert await handler.ctx.running_steps() == []


async def test_stepwise_with_send_event_and_collect() -> None:
    """Stepwise runs handle sent events and joins; run_step returns None once done."""

    class MyWorkflow(Workflow):
        @step
        async def dispatch_step(self, ctx: Context, ev: StartEvent) -> MyEvent | GatherEvent:
            ctx.send_event(MyEvent())
            ctx.send_event(MyEvent())
            return GatherEvent()

        @step
        async def handle_my_event(self, ev: MyEvent) -> MyEventResult:
            return MyEventResult(result="r")

        @step
        async def gather(self, ctx: Context, ev: GatherEvent | MyEventResult) -> StopEvent | None:
            events = ctx.collect_events(ev, [MyEventResult, MyEventResult])
            if not events:
                return None
            return StopEvent(result=len(events))

    handler = MyWorkflow().run(stepwise=True)
    waves = 0
    while produced := await handler.run_step():
        waves += 1
        for ev in produced:
            handler.ctx.send_event(ev)
    assert await handler == 2
    assert waves >= 3
    assert await handler.run_step() is None


class Sleepy(Workflow):
    """One step that waits for a gate: keeps its run in progress."""

    def __init__(self, gate: asyncio.Event, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.gate = gate

    @step
    async def only(self, ev: StartEvent) -> StopEvent:
        await self.gate.wait()
        return StopEvent(result="done")


async def test_run_methods_before_a_run_raise_context_state_error() -> None:
    """running_steps(), send_event() and stream_events() before any run name the phase."""
    ctx = Context(Sleepy(asyncio.Event()))
    with pytest.raises(
        ContextStateError,
        match=r"ctx\.running_steps\(\) requires a running workflow, but it was called before "
        r"workflow started\. Call it from a step, or after handler = workflow\.run\(ctx=ctx\)\.",
    ):
        await ctx.running_steps()
    with pytest.raises(ContextStateError, match=r"send_event\(\) requires a running workflow"):
        ctx.send_event(MyEvent())
    with (
        pytest.warns(DeprecationWarning, match="stream_events"),
        pytest.raises(ContextStateError, match="called before workflow started"),
    ):
        ctx.stream_events()
    with pytest.raises(ContextStateError, match="may only be called from within a step"):
        Context.get_step_context()


async def test_a_context_holds_one_run_at_a_time() -> None:
    """A second run on a context whose run is in progress is rejected; afterwards it works."""
    gate = asyncio.Event()
    flow = Sleepy(gate)
    ctx = Context(flow)
    first = flow.run(ctx=ctx)
    with pytest.raises(
        ContextStateError,
        match=r"The context is already running a workflow \(run \w+\); a Context holds one "
        r"run at a time\. Await that run's handler first",
    ):
        flow.run(ctx=ctx)
    other = flow.run()  # another context is fine
    gate.set()
    assert await first == "done" and await other == "done"
    assert await flow.run(ctx=ctx) == "done"  # sequential runs share the context


async def test_collect_events_with_nothing_expected_returns_empty_list() -> None:
    """``collect_events(ev, [])`` has nothing to wait for and returns ``[]`` at once."""

    class W(Workflow):
        @step
        async def only(self, ctx: Context, ev: StartEvent) -> StopEvent:
            return StopEvent(result=ctx.collect_events(ev, []))

    assert await W().run() == []
