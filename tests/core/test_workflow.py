"""Seed examples (LlamaIndex Workflows docs) running on batonflow.core with only imports changed."""

from __future__ import annotations

import asyncio
import io
import random
from typing import Any

import pytest
from batonflow.core import (
    Context,
    Event,
    PrintingInstrument,
    StartEvent,
    StepFailedEvent,
    StopEvent,
    Workflow,
    WorkflowHandler,
    catch_error,
    step,
)


class FakeCompletion:
    """What a scripted LLM returns: ``str()`` gives the text, ``.text`` too."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


class ScriptedLLM:
    """A fake LLM answering prompts from a script, recording what it was asked."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    async def acomplete(self, prompt: str) -> FakeCompletion:
        self.prompts.append(prompt)
        return FakeCompletion(self.answers.pop(0))


class JokeEvent(Event):
    joke: str


async def test_joke_flow_generates_then_critiques() -> None:
    """The quick-start JokeFlow runs both steps in order and returns the critique."""
    llm = ScriptedLLM("Why did the pirate...", "A solid pun, 7/10.")

    class JokeFlow(Workflow):
        @step
        async def generate_joke(self, ev: StartEvent) -> JokeEvent:
            topic = ev.topic
            prompt = f"Write your best joke about {topic}."
            response = await llm.acomplete(prompt)
            return JokeEvent(joke=str(response))

        @step
        async def critique_joke(self, ev: JokeEvent) -> StopEvent:
            joke = ev.joke
            prompt = f"Give a thorough analysis and critique of the following joke: {joke}"
            response = await llm.acomplete(prompt)
            return StopEvent(result=str(response))

    w = JokeFlow(timeout=60, verbose=False)
    result = await w.run(topic="pirates")
    assert result == "A solid pun, 7/10."
    assert llm.prompts == [
        "Write your best joke about pirates.",
        "Give a thorough analysis and critique of the following joke: Why did the pirate...",
    ]


async def test_start_event_get_and_missing_attribute() -> None:
    """StartEvent fields read as attributes, ``get`` gives defaults, missing ones raise."""

    class Flow(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            with pytest.raises(AttributeError):
                _ = ev.nope
            return StopEvent(result=(ev.topic, ev.get("missing", "dflt"), ev.get("topic")))

    assert await Flow().run(topic="x") == ("x", "dflt", "x")


async def test_custom_start_and_stop_events() -> None:
    """A typed StartEvent subclass is built from kwargs; a StopEvent subclass is the result."""

    class MyCustomStartEvent(StartEvent):
        a_string_field: str
        a_number: int = 3

    class MyStopEvent(StopEvent):
        critique: FakeCompletion

    class JokeFlow(Workflow):
        llm = ScriptedLLM("critique!", "critique 2")

        @step
        async def generate_joke_from_index(self, ev: MyCustomStartEvent) -> JokeEvent:
            return JokeEvent(joke=ev.a_string_field * ev.a_number)

        @step
        async def critique_joke(self, ev: JokeEvent) -> MyStopEvent:
            response = await self.llm.acomplete(ev.joke)
            return MyStopEvent(response)

    w = JokeFlow(timeout=60, verbose=False)
    result = await w.run(start_event=MyCustomStartEvent(a_string_field="ab", a_number=2))
    assert isinstance(result, MyStopEvent)
    assert result.critique.text == "critique!"
    assert JokeFlow.llm.prompts == ["abab"]
    result = await w.run(a_string_field="z")
    assert result.critique.text == "critique 2"
    assert w.start_event_class is MyCustomStartEvent
    assert w.stop_event_class is MyStopEvent


class GuessEvent(Event):
    guess: int
    feedback: str


class GuessNumberWorkflow(Workflow):
    @step
    async def init(self, ctx: Context, ev: StartEvent) -> GuessEvent:
        target = ev.target or random.randint(1, 100)
        low = 1
        high = 100
        if ev.first_guess is not None:
            first_guess = ev.first_guess
        else:
            first_guess = (low + high) // 2
        await ctx.store.set("target", target)
        await ctx.store.set("low", low)
        await ctx.store.set("high", high)
        await ctx.store.set("attempts", 0)
        return GuessEvent(guess=first_guess, feedback="start")

    @step
    async def accumulate(self, ctx: Context, ev: GuessEvent) -> StopEvent | GuessEvent:
        target = await ctx.store.get("target")
        attempts = await ctx.store.get("attempts", default=0)
        low = await ctx.store.get("low")
        high = await ctx.store.get("high")
        attempts += 1
        await ctx.store.set("attempts", attempts)
        if ev.guess == target:
            return StopEvent(result=f"found in {attempts}")
        elif ev.guess < target:
            feedback = "too small"
            low = max(low, ev.guess + 1)
        else:
            feedback = "too big"
            high = min(high, ev.guess - 1)
        if attempts >= 10:
            return StopEvent(result=f"gave up, target was {target}")
        next_guess = (low + high) // 2
        await ctx.store.set("low", low)
        await ctx.store.set("high", high)
        return GuessEvent(guess=next_guess, feedback=feedback)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        pytest.param(50, "found in 1", id="first-guess"),
        pytest.param(1, "found in 6", id="low-end"),
        pytest.param(100, "found in 7", id="high-end"),
    ],
)
async def test_guess_number_loops_until_found(target: int, expected: str) -> None:
    """The guess-number loop (a step returning its own input type) ends with binary search."""
    w = GuessNumberWorkflow(timeout=10)
    assert await w.run(target=target, first_guess=None) == expected


async def test_accumulate_workflow_sums_with_store() -> None:
    """Seed 000's AccumulateWorkflow keeps a running total in ctx.store."""

    class NumberEvent(Event):
        numbers: list[int]

    class AccumulateWorkflow(Workflow):
        @step
        async def init(self, ctx: Context, ev: StartEvent) -> NumberEvent:
            await ctx.store.set("total", 0)
            await ctx.store.set("count", 0)
            return NumberEvent(numbers=ev.numbers)

        @step
        async def accumulate(self, ctx: Context, ev: NumberEvent) -> StopEvent:
            total = await ctx.store.get("total")
            count = await ctx.store.get("count")
            for n in ev.numbers:
                total += n
                count += 1
            await ctx.store.set("total", total)
            await ctx.store.set("count", count)
            return StopEvent(result=f"sum: {total}, count: {count}")

    assert await AccumulateWorkflow().run(numbers=[1, 2, 3, 4]) == "sum: 10, count: 4"


async def test_branches_choose_one_path() -> None:
    """A step returning one of two event types sends the run down one branch."""

    class Left(Event):
        pass

    class Right(Event):
        pass

    class Branchy(Workflow):
        @step
        async def start(self, ev: StartEvent) -> Left | Right:
            return Left() if ev.go == "left" else Right()

        @step
        async def left(self, ev: Left) -> StopEvent:
            return StopEvent(result="went left")

        @step
        async def right(self, ev: Right) -> StopEvent:
            return StopEvent(result="went right")

    w = Branchy()
    assert await w.run(go="left") == "went left"
    assert await w.run(go="right") == "went right"


async def test_unbound_steps_attach_to_an_instance() -> None:
    """``@step(workflow=instance)`` builds a workflow from plain functions."""
    llm = ScriptedLLM("a joke", "its critique")
    joke_flow = Workflow(timeout=60, verbose=False)

    @step(workflow=joke_flow)
    async def generate_joke(ev: StartEvent) -> JokeEvent:
        response = await llm.acomplete(f"Write your best joke about {ev.topic}.")
        return JokeEvent(joke=str(response))

    @step(workflow=joke_flow)
    async def critique_joke(ev: JokeEvent) -> StopEvent:
        response = await llm.acomplete(f"Critique: {ev.joke}")
        return StopEvent(result=str(response))

    assert await joke_flow.run(topic="cats") == "its critique"
    assert llm.prompts[1] == "Critique: a joke"


async def test_add_step_classmethod_adds_a_step() -> None:
    """``Workflow.add_step`` adds a decorated function to a workflow class."""

    class Base(Workflow):
        @step
        async def first(self, ev: StartEvent) -> JokeEvent:
            return JokeEvent(joke="j")

    @catch_error
    async def recover(self: Any, ev: StepFailedEvent) -> StopEvent:
        return StopEvent(result="recovered")

    @step(workflow=Base)  # calls Base.add_step
    async def last(self: Any, ev: JokeEvent) -> StopEvent:
        return StopEvent(result=ev.joke + "!")

    Base.add_step(recover)
    assert await Base().run() == "j!"
    assert set(Base._class_steps()) == {"first", "last", "recover"}


async def test_sync_steps_run_in_a_thread() -> None:
    """A plain ``def`` step works and does not run on the event loop's thread."""
    import threading

    main = threading.get_ident()

    class Flow(Workflow):
        @step
        def work(self, ctx: Context, ev: StartEvent) -> StopEvent:
            ctx.write_event_to_stream(JokeEvent(joke="from thread"))
            return StopEvent(result=threading.get_ident() != main)

    handler = Flow().run()
    seen = [ev async for ev in handler.stream_events()]
    assert await handler is True
    assert isinstance(seen[0], JokeEvent) and seen[0].joke == "from thread"


async def test_stepwise_execution_hands_back_events() -> None:
    """``run(stepwise=True)``: each ``run_step`` returns produced events for the caller to send."""
    llm = ScriptedLLM("joke", "critique")

    class JokeFlow(Workflow):
        @step
        async def generate_joke(self, ev: StartEvent) -> JokeEvent:
            return JokeEvent(joke=str(await llm.acomplete("j")))

        @step
        async def critique_joke(self, ev: JokeEvent) -> StopEvent:
            return StopEvent(result=str(await llm.acomplete(ev.joke)))

    workflow = JokeFlow()
    handler = workflow.run(stepwise=True)
    rounds = []
    while produced_events := await handler.run_step():
        rounds.append([type(e).__name__ for e in produced_events])
        for ev in produced_events:
            handler.ctx.send_event(ev)
    result = await handler
    assert result == "critique"
    assert rounds == [["JokeEvent"], ["StopEvent"]]
    assert llm.prompts == ["j", "joke"]


async def test_verbose_prints_steps(capsys: pytest.CaptureFixture[str]) -> None:
    """``verbose="seed"`` prints each step and what it produced, in the older lines."""

    class Flow(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            return StopEvent(result=1)

    await Flow(verbose="seed").run()
    out = capsys.readouterr().out
    assert "Running step only" in out
    assert "Step only produced event StopEvent" in out


async def test_printing_instrument_as_instrument() -> None:
    """An instrument passed with ``instruments=`` sees the steps (to its own stream)."""

    class Flow(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            return None if False else StopEvent(result=1)

    buf = io.StringIO()
    await Flow(instruments=[PrintingInstrument(buf)]).run()
    assert "[only:0] started from StartEvent" in buf.getvalue()


async def test_run_id_and_handler_shape() -> None:
    """``run_id=`` is consumed, the handler is a future with ``ctx`` and ``is_done``."""

    class Flow(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            assert "run_id" not in ev.keys()
            return StopEvent(result=ev.get("x"))

    handler = Flow().run(run_id="run-1", x=5)
    assert isinstance(handler, WorkflowHandler)
    assert handler.run_id == "run-1"
    assert isinstance(handler.ctx, Context)
    assert not handler.is_done()
    assert await handler == 5
    assert handler.is_done()
    assert handler.get_stop_event() == StopEvent(result=5)


async def test_many_concurrent_runs_are_isolated() -> None:
    """Concurrent runs of one instance keep separate state and results."""

    class Flow(Workflow):
        @step
        async def first(self, ctx: Context, ev: StartEvent) -> JokeEvent:
            await ctx.store.set("n", ev.n)
            await asyncio.sleep(0)
            return JokeEvent(joke=str(ev.n))

        @step
        async def second(self, ctx: Context, ev: JokeEvent) -> StopEvent:
            await asyncio.sleep(0)
            return StopEvent(result=(await ctx.store.get("n"), ev.joke))

    w = Flow()
    results = await asyncio.gather(*(w.run(n=i) for i in range(200)))
    assert results == [(i, str(i)) for i in range(200)]


async def test_num_workers_bounds_concurrency() -> None:
    """At most ``num_workers`` executions of a step run at once within one run."""

    class Item(Event):
        i: int

    class Done(Event):
        i: int

    active = 0
    peak = 0

    class Flow(Workflow):
        @step
        async def fan(self, ctx: Context, ev: StartEvent) -> Item | None:
            for i in range(20):
                ctx.send_event(Item(i=i))
            return None

        @step(num_workers=3)
        async def work(self, ev: Item) -> Done:
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.001)
            active -= 1
            return Done(i=ev.i)

        @step
        async def gather(self, ctx: Context, ev: Done) -> StopEvent | None:
            done = ctx.collect_events(ev, [Done] * 20)
            if done is None:
                return None
            return StopEvent(result=sorted(d.i for d in done))

    assert await Flow().run() == list(range(20))
    assert peak == 3


async def test_num_concurrent_runs_queues_extra_runs() -> None:
    """With ``num_concurrent_runs=2`` a third run waits until one finishes."""
    running = 0
    peak = 0

    class Flow(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.005)
            running -= 1
            return StopEvent(result=ev.i)

    w = Flow(num_concurrent_runs=2)
    assert await asyncio.gather(*(w.run(i=i) for i in range(5))) == [0, 1, 2, 3, 4]
    assert peak == 2


async def test_state_persists_across_runs_with_same_context() -> None:
    """Passing ``handler.ctx`` to the next run keeps the state."""

    class Counter(Workflow):
        @step
        async def bump(self, ctx: Context, ev: StartEvent) -> StopEvent:
            count = await ctx.store.get("count", default=0) + 1
            await ctx.store.set("count", count)
            return StopEvent(result=count)

    w = Counter()
    handler = w.run()
    assert await handler == 1
    handler = w.run(ctx=handler.ctx)
    assert await handler == 2
    ctx = Context(w)
    assert await w.run(ctx=ctx) == 1
    assert await w.run(ctx=ctx) == 2


async def test_postponed_annotations_and_optional_returns() -> None:
    """Steps read postponed annotations, ``X | None`` and ``Optional[X]`` returns."""
    from typing import Optional

    class Flow(Workflow):
        @step
        async def first(self, ev: StartEvent) -> Optional[JokeEvent]:  # noqa: UP045
            return JokeEvent(joke="a")

        @step
        async def second(self, ev: JokeEvent) -> StopEvent | None:
            return StopEvent(result=ev.joke)

    assert await Flow().run() == "a"


async def test_cancelling_a_queued_run_frees_nothing_it_did_not_take() -> None:
    """A run cancelled while waiting for a concurrency slot never starts; others proceed."""
    gate = asyncio.Event()
    started: list[int] = []

    class Flow(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            started.append(ev.i)
            await gate.wait()
            return StopEvent(result=ev.i)

    w = Flow(num_concurrent_runs=1)
    first = w.run(i=1)
    queued = w.run(i=2)
    third = w.run(i=3)
    await asyncio.sleep(0)
    await queued.cancel_run()
    gate.set()
    assert await first == 1
    assert await third == 3
    assert started == [1, 3]


async def test_returning_a_list_fans_out() -> None:
    """A step annotated ``-> list[E]`` emits every event of the list it returns."""

    class Part(Event):
        n: int

    class Fan(Workflow):
        @step
        async def split(self, ev: StartEvent) -> list[Part]:
            return [Part(n=i) for i in range(5)]

        @step
        async def join(self, ctx: Context, ev: Part) -> StopEvent | None:
            parts = ctx.collect_events(ev, [Part] * 5)
            if parts is None:
                return None
            return StopEvent(result=sorted(p.n for p in parts))

    assert await Fan().run() == [0, 1, 2, 3, 4]
