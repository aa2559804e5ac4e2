"""Run semantics: failures, timeouts, cancellation, streams that never hang, no leaked tasks."""

from __future__ import annotations

import asyncio

import pytest
from batonflow.core import (
    Context,
    ContextStateError,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    InternalDispatchEvent,
    StartEvent,
    StepState,
    StepStateChanged,
    StopEvent,
    UnhandledEvent,
    Workflow,
    WorkflowCancelledByUser,
    WorkflowCancelledEvent,
    WorkflowFailedEvent,
    WorkflowIdleEvent,
    WorkflowTimedOutEvent,
    WorkflowTimeoutError,
    step,
)


class Tick(Event):
    n: int


class Slow(Event):
    pass


class Boom(Event):
    pass


class Progress(Event):
    msg: str


def step_tasks() -> list[asyncio.Task[object]]:
    """Tasks still running a step coroutine."""
    return [t for t in asyncio.all_tasks() if not t.done() and "Run._execute" in repr(t.get_coro())]


class ValueErrorFlow(Workflow):
    slow_cancelled = False

    @step
    async def start(self, ctx: Context, ev: StartEvent) -> Slow | Boom:
        ctx.send_event(Slow())
        return Boom()

    @step
    async def slow(self, ev: Slow) -> StopEvent:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            type(self).slow_cancelled = True
            raise
        return StopEvent()

    @step
    async def boom(self, ev: Boom) -> StopEvent:
        await asyncio.sleep(0)
        raise ValueError("original failure")


async def test_step_exception_is_raised_as_is_and_others_cancelled() -> None:
    """The step's own exception reaches ``await handler``; the other steps are cancelled."""
    handler = ValueErrorFlow().run()
    with pytest.raises(ValueError, match="original failure") as info:
        await handler
    assert type(info.value) is ValueError
    assert ValueErrorFlow.slow_cancelled
    assert step_tasks() == []


async def test_stream_ends_when_a_step_fails() -> None:
    """The stream ends with a WorkflowFailedEvent (no hang); the error comes from the handler."""
    handler = ValueErrorFlow().run()
    events = [ev async for ev in handler.stream_events()]
    assert [type(e) for e in events] == [WorkflowFailedEvent]
    assert events[0].step_name == "boom" and events[0].attempts == 1
    assert str(events[0].exception) == "original failure"
    with pytest.raises(ValueError):
        await handler


async def test_run_timeout() -> None:
    """A run longer than ``timeout`` raises WorkflowTimeoutError (a TimeoutError)."""

    class Sleepy(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            await asyncio.sleep(30)
            return StopEvent()

    handler = Sleepy(timeout=0.05).run()
    streamed = [ev async for ev in handler.stream_events()]
    with pytest.raises(
        WorkflowTimeoutError, match=r"timed out after 0.05 seconds.*timeout=None"
    ) as info:
        await handler
    assert isinstance(info.value, TimeoutError)
    assert [type(e) for e in streamed] == [WorkflowTimedOutEvent]
    assert streamed[0].timeout == 0.05 and streamed[0].active_steps == ["only"]
    assert step_tasks() == []


async def test_timeout_none_means_no_limit() -> None:
    """``timeout=None`` never times out."""

    class Quick(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            await asyncio.sleep(0.01)
            return StopEvent(result="ok")

    assert await Quick(timeout=None).run() == "ok"


async def test_cancel_run() -> None:
    """``cancel_run`` stops the run; awaiting raises WorkflowCancelledByUser."""
    started = asyncio.Event()

    class Sleepy(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            started.set()
            await asyncio.sleep(30)
            return StopEvent()

    handler = Sleepy().run()
    await started.wait()
    await handler.cancel_run()
    assert handler.is_done()
    with pytest.raises(WorkflowCancelledByUser):
        await handler
    assert step_tasks() == []
    assert [type(ev) async for ev in handler.stream_events()] == [WorkflowCancelledEvent]


async def test_cancelling_the_handler_future_cancels_the_run() -> None:
    """``asyncio.wait_for(handler, ...)`` timing out cancels the run's steps too."""

    class Sleepy(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            await asyncio.sleep(30)
            return StopEvent()

    handler = Sleepy().run()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(handler, 0.02)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert step_tasks() == []


class Streaming(Workflow):
    @step
    async def start(self, ctx: Context, ev: StartEvent) -> Tick:
        for i in range(ev.count):
            ctx.write_event_to_stream(Progress(msg=f"p{i}"))
            await asyncio.sleep(0)
        return Tick(n=0)

    @step
    async def finish(self, ctx: Context, ev: Tick) -> StopEvent:
        ctx.write_event_to_stream(Progress(msg="last"))
        return StopEvent(result="done")


async def test_stream_yields_progress_then_stop_event() -> None:
    """The stream yields written events in order, then the StopEvent, then ends."""
    handler = Streaming().run(count=3)
    events = [ev async for ev in handler.stream_events()]
    assert [getattr(e, "msg", None) for e in events[:-1]] == ["p0", "p1", "p2", "last"]
    assert isinstance(events[-1], StopEvent) and events[-1].result == "done"
    assert await handler == "done"


async def test_stream_break_and_resume_loses_nothing() -> None:
    """A consumer that breaks out and iterates again gets only the events it has not seen."""
    handler = Streaming().run(count=5)
    first = []
    async for ev in handler.stream_events():
        first.append(ev.msg)
        if len(first) == 2:
            break
    rest = [ev async for ev in handler.stream_events()]
    assert first == ["p0", "p1"]
    assert [getattr(e, "msg", None) for e in rest] == ["p2", "p3", "p4", "last", None]
    assert await handler == "done"


async def test_two_consumers_share_the_stream() -> None:
    """Two concurrent consumers together see every event exactly once and both end."""
    handler = Streaming().run(count=50)

    async def consume() -> list[Event]:
        return [ev async for ev in handler.stream_events()]

    a, b = await asyncio.gather(consume(), consume())
    msgs = sorted(getattr(e, "msg", "stop") for e in a + b)
    assert len(msgs) == 52
    assert msgs.count("stop") == 1
    assert await handler == "done"


async def test_stream_after_completion_drains_then_ends() -> None:
    """Streaming after the run ended yields what was written and ends."""
    handler = Streaming().run(count=2)
    assert await handler == "done"
    events = [ev async for ev in handler.stream_events()]
    assert len(events) == 4
    assert [ev async for ev in handler.stream_events()] == []


async def test_loop_runs_many_iterations() -> None:
    """A step returning its own event type loops without growing anything."""

    class Chain(Workflow):
        @step
        async def start(self, ev: StartEvent) -> Tick:
            return Tick(n=0)

        @step
        async def loop(self, ev: Tick) -> Tick | StopEvent:
            if ev.n == 2000:
                return StopEvent(result=ev.n)
            return Tick(n=ev.n + 1)

    assert await Chain().run() == 2000


async def test_sync_step_failure_is_raised_as_is() -> None:
    """An exception from a sync step reaches ``await handler`` unchanged."""

    class Flow(Workflow):
        @step
        def only(self, ev: StartEvent) -> StopEvent:
            raise KeyError("sync")

    with pytest.raises(KeyError, match="sync"):
        await Flow().run()


async def test_expose_internal_streams_step_states() -> None:
    """``stream_events(expose_internal=True)`` adds StepStateChanged; plain consumers skip them."""
    handler = Streaming().run(count=1)
    events = [ev async for ev in handler.stream_events(expose_internal=True)]
    states = [(e.name, e.step_state) for e in events if isinstance(e, StepStateChanged)]
    assert ("start", StepState.RUNNING) in states
    assert ("finish", StepState.NOT_RUNNING) in states
    finished = [e for e in events if isinstance(e, StepStateChanged) and e.name == "start"]
    assert finished[-1].output_event_name == str(Tick)  # LlamaIndex: str(type(ev))
    assert isinstance(events[-1], StopEvent)
    assert await handler == "done"

    plain = Streaming().run(count=1)
    plain_events = [e async for e in plain.stream_events()]
    assert not any(isinstance(e, InternalDispatchEvent) for e in plain_events)
    await plain


async def test_idle_event_when_every_step_waits() -> None:
    """A run whose only step waits for outside input reports WorkflowIdleEvent."""

    class Ask(Workflow):
        @step
        async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
            answer = await ctx.wait_for_event(
                HumanResponseEvent, waiter_event=InputRequiredEvent(prefix="?")
            )
            return StopEvent(result=answer.response)

    handler = Ask().run()
    seen = []
    async for ev in handler.stream_events(expose_internal=True):
        seen.append(type(ev))
        if isinstance(ev, WorkflowIdleEvent):
            handler.ctx.send_event(HumanResponseEvent(response="here"))
    assert WorkflowIdleEvent in seen and InputRequiredEvent in seen
    assert await handler == "here"


async def test_get_step_context() -> None:
    """``Context.get_step_context()`` gives the running step's context, and fails outside."""

    def helper() -> Context:
        return Context.get_step_context()

    class W(Workflow):
        @step
        async def only(self, ctx: Context, ev: StartEvent) -> StopEvent:
            return StopEvent(result=helper() is ctx)

    assert await W().run() is True
    with pytest.raises(ContextStateError, match="may only be called from within a step"):
        Context.get_step_context()


async def test_handler_helpers() -> None:
    """``send_event``, ``stop_event_result``, ``run_step`` misuse and repr on the handler."""

    class W(Workflow):
        @step
        async def start(self, ev: StartEvent) -> StopEvent | None:
            return None

        @step
        async def answer(self, ev: HumanResponseEvent) -> StopEvent:
            return StopEvent(result=ev.response)

    handler = W().run()
    assert "status=running" in repr(handler)
    with pytest.raises(ContextStateError, match=r"stepwise=True"):
        await handler.run_step()
    await handler.send_event(HumanResponseEvent(response="hi"))
    stop = await handler.stop_event_result()
    assert stop.result == "hi"
    assert handler.get_stop_event() is stop


async def test_unhandled_event_is_reported_internally() -> None:
    """With the terminal-event check skipped, an event no step accepts is dropped and shows
    up as UnhandledEvent on an internal stream (instead of failing the step)."""

    class Stray(Event):
        pass

    class W(Workflow):
        @step
        async def only(self, ctx: Context, ev: StartEvent) -> StopEvent:
            await asyncio.sleep(0.01)
            ctx.send_event(Stray())
            return StopEvent(result="ok")

    handler = W(skip_graph_checks=["terminal_event"]).run()
    seen = []
    async for ev in handler.stream_events(expose_internal=True):
        seen.append(ev)
    assert await handler == "ok"
    (unhandled,) = [e for e in seen if isinstance(e, UnhandledEvent)]
    assert unhandled.event_type == "Stray"


async def test_execution_trace_is_complete_and_shares_repeated_entries() -> None:
    """The trace keeps every execution in order; repeated ones are one shared tuple, so a long
    loop costs a list slot per step, not a new tuple."""

    class Tick(Event):
        n: int

    class Loop(Workflow):
        @step
        async def begin(self, ev: StartEvent) -> Tick:
            return Tick(n=0)

        @step
        async def tick(self, ev: Tick) -> Tick | StopEvent:
            return StopEvent(result=ev.n) if ev.n >= 50 else Tick(n=ev.n + 1)

    handler = Loop().run()
    assert await handler == 50
    trace = handler.execution_trace()
    assert trace[0] == ("begin", StartEvent, (Tick,))
    assert trace[1:51] == [("tick", Tick, (Tick,))] * 50
    assert trace[51] == ("tick", Tick, (StopEvent,))
    assert len(trace) == 52
    assert len({id(entry) for entry in trace}) == 3
    assert handler.workflow.execution_trace() == trace


async def test_execution_trace_follows_a_step_whose_outputs_change() -> None:
    """A step whose output class changes from one execution to the next (an event, none,
    the same event, another event, and with another input class) gets one entry each, with
    the classes of that execution: a lane reuses the entry of its last execution only when
    the classes in and out are the same."""

    class Item(Event):
        x: int

    class Other(Item):
        pass

    class A(Event):
        x: int

    class B(Event):
        x: int

    class W(Workflow):
        @step
        async def begin(self, ctx: Context, ev: StartEvent) -> Item | None:
            for x in range(5):
                ctx.send_event(Other(x=x) if x == 4 else Item(x=x))
            return None

        @step
        async def pick(self, ev: Item) -> A | B | None:
            return (A(x=0), None, A(x=2), B(x=3), B(x=4))[ev.x]

        @step
        async def join(self, ctx: Context, ev: A | B) -> StopEvent | None:
            got = ctx.collect_events(ev, [A, A, B, B])
            return None if got is None else StopEvent(result=[e.x for e in got])

    handler = W().run()
    assert await handler == [0, 2, 3, 4]
    picks = [entry for entry in handler.execution_trace() if entry[0] == "pick"]
    assert picks == [
        ("pick", Item, (A,)),
        ("pick", Item, ()),
        ("pick", Item, (A,)),
        ("pick", Item, (B,)),
        ("pick", Other, (B,)),
    ]


async def test_cancel_run_does_not_swallow_the_callers_own_cancellation():
    """A task cancelled while it waits in cancel_run() is cancelled, not silently resumed."""

    class SlowCleanup(Workflow):
        @step
        async def work(self, ev: StartEvent) -> StopEvent:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                await asyncio.sleep(0.3)  # a cleanup that takes a while
                raise
            return StopEvent()

    handler = SlowCleanup(timeout=None).run()
    await asyncio.sleep(0.01)
    canceller = asyncio.create_task(handler.cancel_run(timeout=5))
    await asyncio.sleep(0.05)
    canceller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await canceller
    with pytest.raises(WorkflowCancelledByUser):
        await handler


async def test_a_chain_that_never_suspends_still_lets_due_timers_run() -> None:
    """A worker skips its yield between executions only while nothing else is ready, and
    yields at least every 32 executions, so a timer that comes due fires during a long chain
    of steps that never await (not after it)."""
    fired_at: list[int] = []
    steps_done = 0

    class Loop(Workflow):
        @step
        async def begin(self, ev: StartEvent) -> Tick:
            asyncio.get_running_loop().call_later(0, lambda: fired_at.append(steps_done))
            return Tick(n=0)

        @step
        async def spin(self, ev: Tick) -> Tick | StopEvent:
            nonlocal steps_done
            steps_done += 1
            if ev.n + 1 >= 500:
                return StopEvent(result=ev.n + 1)
            return Tick(n=ev.n + 1)

    assert await Loop(timeout=None).run() == 500
    assert fired_at and fired_at[0] < 100


async def test_a_chain_beside_another_task_yields_to_it_at_every_step() -> None:
    """While another task is ready, a worker yields before each execution, as a task per
    execution would: a task counting yields in a loop advances once per chain step."""
    seen: list[int] = []
    ticks = 0
    done = False

    async def other() -> None:
        nonlocal ticks
        while not done:
            ticks += 1
            await asyncio.sleep(0)

    class Loop(Workflow):
        @step
        async def spin(self, ev: StartEvent | Tick) -> Tick | StopEvent:
            n = getattr(ev, "n", 0)
            seen.append(ticks)
            if n + 1 >= 50:
                return StopEvent(result=n + 1)
            return Tick(n=n + 1)

    counter = asyncio.ensure_future(other())
    await asyncio.sleep(0)
    assert await Loop(timeout=None).run() == 50
    done = True
    await counter
    gaps = [b - a for a, b in zip(seen, seen[1:], strict=False)]
    assert gaps and min(gaps) >= 1


class Item(Event):
    i: int


class Done(Event):
    i: int


async def test_executions_begin_in_the_order_they_started() -> None:
    """However many workers run a fan-out, executions begin in the order they started (their
    ids), as with a task each: a worker takes the oldest ready execution, never the one its
    own outputs just started, so a run resumed from a snapshot begins them in the same order."""
    from batonflow.core import Instrument
    from batonflow.core.instrument import StepStarted

    begun: list[tuple[str, int]] = []

    class Recorder(Instrument):
        def step_started(self, record: StepStarted) -> None:
            begun.append((record.step_name, record.execution_id))

    class Fan(Workflow):
        @step
        async def start(self, ctx: Context, ev: StartEvent) -> Item | None:
            for i in range(40):
                ctx.send_event(Item(i=i))
            return None

        @step(num_workers=4)
        async def work(self, ev: Item) -> Done:
            if ev.i % 7 == 0:
                await asyncio.sleep(0)  # some suspend: other workers take the next ones
            return Done(i=ev.i)

        @step(num_workers=2)
        async def join(self, ctx: Context, ev: Done) -> StopEvent | None:
            got = ctx.collect_events(ev, Done, count=40)
            return None if got is None else StopEvent(result=len(got))

    assert await Fan(timeout=10, instruments=[Recorder()]).run() == 40
    ids = [eid for _, eid in begun]
    assert len(ids) == 81 and ids == sorted(ids)
    assert {name for name, _ in begun} == {"start", "work", "join"}


async def test_a_step_that_suspends_lets_the_next_ready_executions_begin() -> None:
    """Executions of a num_workers step run concurrently: while one waits, the next ready
    ones begin (here each waits until all three have begun)."""
    arrived = 0
    all_in = asyncio.Event()

    class Barrier(Workflow):
        @step
        async def start(self, ctx: Context, ev: StartEvent) -> Item | None:
            for i in range(3):
                ctx.send_event(Item(i=i))
            return None

        @step(num_workers=3)
        async def meet(self, ev: Item) -> Done:
            nonlocal arrived
            arrived += 1
            if arrived == 3:
                all_in.set()
            await all_in.wait()
            return Done(i=ev.i)

        @step
        async def join(self, ctx: Context, ev: Done) -> StopEvent | None:
            got = ctx.collect_events(ev, Done, count=3)
            return None if got is None else StopEvent(result=sorted(d.i for d in got))

    assert await Barrier(timeout=5).run() == [0, 1, 2]
