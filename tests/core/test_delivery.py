"""Events that could never be delivered fail fast, naming the event and the step.

An event sent to a step that does not accept it, sent from outside when no step takes it,
returned by a step although no step takes it, or a start event of the wrong class: each used to
be dropped silently, and the run stalled until its timeout.
"""

from __future__ import annotations

import asyncio

import pytest
from batonflow.core import (
    Context,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StartEventError,
    StopEvent,
    Workflow,
    WorkflowRuntimeError,
    WorkflowTimeoutError,
    step,
)


class A(Event):
    x: int = 0


class B(Event):
    y: str = "b"


class Stray(Event):
    pass


class Targeted(Workflow):
    """``s`` sends B to step ``t``, which only accepts A."""

    @step
    async def s(self, ctx: Context, ev: StartEvent) -> A | B | None:
        ctx.send_event(B(), step="t")
        return None

    @step
    async def t(self, ev: A) -> StopEvent:
        return StopEvent(result=type(ev).__name__)

    @step
    async def u(self, ev: B) -> StopEvent:
        return StopEvent(result="u")


async def test_send_to_a_step_that_does_not_accept_the_event() -> None:
    """``send_event(ev, step=...)`` checks the step accepts the event's type."""
    with pytest.raises(
        WorkflowRuntimeError,
        match=r"^Step t does not accept event of type <class '[\w.]+\.B'>: it accepts A\. "
        r"Send it an event of "
        r"those types, or send it to a step that accepts B \(u\) or without step=\.$",
    ):
        await Targeted(timeout=5).run()


async def test_send_to_a_step_that_accepts_the_event_still_works() -> None:
    """An accepted event (or a subclass of one) goes to the named step only."""

    class SubA(A):
        pass

    class W(Workflow):
        @step
        async def s(self, ctx: Context, ev: StartEvent) -> A | None:
            ctx.send_event(SubA(x=3), step="t")
            return None

        @step
        async def t(self, ev: A) -> StopEvent:
            return StopEvent(result=ev.x)

        @step
        async def other(self, ev: A) -> StopEvent:
            return StopEvent(result="other")

    assert await W(timeout=5).run() == 3


async def test_send_to_a_step_waiting_for_the_event_type() -> None:
    """A step that does not accept a type but waits for it in wait_for_event may be targeted."""

    class W(Workflow):
        @step
        async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
            answer = await ctx.wait_for_event(
                HumanResponseEvent, waiter_event=InputRequiredEvent(prefix="?")
            )
            return StopEvent(result=answer.response)

    handler = W(timeout=5).run()
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            await handler.send_event(HumanResponseEvent(response="yes"), step="ask")
    assert await handler == "yes"


async def test_outside_send_of_an_event_no_step_takes() -> None:
    """From outside, an event nobody accepts or waits for raises at once; the run goes on."""

    class W(Workflow):
        @step
        async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
            answer = await ctx.wait_for_event(
                HumanResponseEvent, waiter_event=InputRequiredEvent(prefix="?")
            )
            return StopEvent(result=answer.response)

    handler = W(timeout=5).run()
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            with pytest.raises(
                WorkflowRuntimeError,
                match=r"^No step of W accepts A and no step is waiting for it, so it would never "
                r"be delivered\. The steps accept: StartEvent\. Send an event of one of those "
                r"types, or add a step that takes `ev: A`\.$",
            ):
                handler.ctx.send_event(A(x=5))
            handler.ctx.send_event(HumanResponseEvent(response="right"))
    assert await handler == "right"


async def test_send_inside_a_step_of_an_event_no_step_takes() -> None:
    """Inside a step, sending an undeliverable event raises in the step (failing the run)."""

    class W(Workflow):
        @step
        async def s(self, ctx: Context, ev: StartEvent) -> StopEvent:
            ctx.send_event(Stray())
            return StopEvent(result="never")

    with pytest.raises(WorkflowRuntimeError, match=r"^No step of W accepts Stray"):
        await W(timeout=5).run()


async def test_step_returning_an_event_no_step_takes_fails_the_run() -> None:
    """A step returning an event outside its annotation that nobody takes fails at once."""

    class W(Workflow):
        @step
        async def s(self, ev: StartEvent) -> StopEvent:
            return A(x=1)  # type: ignore[return-value]

    with pytest.raises(
        WorkflowRuntimeError,
        match=r"^Step s returned A, but no step accepts A and no step is waiting for it, so the "
        r"run could never go on \(its return annotation says: StopEvent\)\. Return one of the "
        r"annotated events, or add a step that takes `ev: A`\.$",
    ):
        await W(timeout=5).run()


async def test_unannotated_return_that_a_step_takes_is_delivered() -> None:
    """Returning an event missing from the annotation is fine while some step takes it."""

    class W(Workflow):
        @step
        async def s(self, ev: StartEvent) -> A:
            return B(y="routed")  # type: ignore[return-value]

        @step
        async def t(self, ev: A) -> StopEvent:
            return StopEvent(result="a")

        @step(skip_graph_checks=["reachability"])
        async def u(self, ev: B) -> StopEvent:
            return StopEvent(result=ev.y)

    assert await W(timeout=5).run() == "routed"


async def test_sent_event_answering_a_waiter_is_delivered() -> None:
    """An event no step accepts but a step waits for (wait_for_event) is delivered."""

    class Done(Event):
        value: int

    class W(Workflow):
        @step
        async def boss(self, ctx: Context, ev: StartEvent) -> A | StopEvent:
            ctx.send_event(A(x=2))
            done = await ctx.wait_for_event(Done, timeout=5)
            return StopEvent(result=done.value)

        @step
        async def worker(self, ctx: Context, ev: A) -> None:
            ctx.send_event(Done(value=ev.x * 10))

    assert await W(timeout=5).run() == 20


async def test_an_output_a_waiter_took_is_checked_again_next_time() -> None:
    """A step's undeclared output that a waiting step took once is no pass for the next:
    the same output with nobody waiting fails the run (a lane remembers only the output
    classes its annotation declares as checked)."""

    class Never(Event):
        pass

    class W(Workflow):
        @step
        async def boss(self, ctx: Context, ev: StartEvent) -> A | StopEvent:
            ctx.send_event(A(x=1))
            first = await ctx.wait_for_event(B, timeout=5)
            ctx.send_event(A(x=2))
            await ctx.wait_for_event(Never, timeout=5)  # the run fails before
            return StopEvent(result=first.y)

        @step
        async def echo(self, ev: A) -> StopEvent:
            return B(y=str(ev.x))  # type: ignore[return-value]

    with pytest.raises(
        WorkflowRuntimeError,
        match=r"^Step echo returned B, but no step accepts B and no step is waiting for it",
    ):
        await W(timeout=10).run()


async def test_opting_out_of_the_terminal_event_check_drops_silently() -> None:
    """With ``skip_graph_checks=["terminal_event"]`` an untaken returned event is dropped."""

    class W(Workflow):
        @step
        async def s(self, ctx: Context, ev: StartEvent) -> Stray | A | None:
            ctx.send_event(A())
            return Stray()

        @step
        async def t(self, ev: A) -> StopEvent:
            await asyncio.sleep(0)
            return StopEvent(result="done")

    assert await W(timeout=5, skip_graph_checks=["terminal_event"]).run() == "done"


async def test_start_event_of_the_wrong_class() -> None:
    """``run(start_event=StartEvent())`` when the entry step takes a subclass fails in run()."""

    class MyStart(StartEvent):
        topic: str

    class W(Workflow):
        @step
        async def s(self, ev: MyStart) -> StopEvent:
            return StopEvent(result=ev.topic)

    with pytest.raises(
        StartEventError,
        match=r"^W starts with MyStart, but run\(\) got a StartEvent, which no step accepts\. "
        r"Pass start_event=MyStart\(\.\.\.\) or its fields as keywords: run\(topic=\.\.\.\)\.$",
    ):
        W(timeout=5).run(start_event=StartEvent(topic="x"))
    assert await W(timeout=5).run(start_event=MyStart(topic="x")) == "x"


async def test_timeout_message_names_what_the_run_was_doing() -> None:
    """The timeout error lists active steps, and waiting steps with what they wait for."""

    class W(Workflow):
        @step
        async def slow(self, ev: StartEvent) -> A:
            await asyncio.sleep(10)
            return A()

        @step
        async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent | None:
            await ctx.wait_for_event(HumanResponseEvent)
            return None

        @step
        async def end(self, ev: A) -> StopEvent:
            return StopEvent()

    with pytest.raises(
        WorkflowTimeoutError,
        match=r"did not finish \(currently active steps: ask, slow; waiting for an event: ask "
        r"for HumanResponseEvent\)\. Raise Workflow\(timeout=\.\.\.\)",
    ):
        await W(timeout=0.05).run()


async def test_timeout_message_of_an_idle_run() -> None:
    """A run with nothing running or waiting says it was idle, waiting for outside events."""

    class W(Workflow):
        @step
        async def ask(self, ev: StartEvent) -> InputRequiredEvent:
            return InputRequiredEvent(prefix="?")

        @step
        async def answer(self, ev: HumanResponseEvent) -> StopEvent:
            return StopEvent()

    with pytest.raises(
        WorkflowTimeoutError,
        match=r"did not finish \(no step was running or waiting: the run was idle, waiting for "
        r"an event sent from outside with handler\.ctx\.send_event\(\)\)",
    ):
        await W(timeout=0.05).run()
