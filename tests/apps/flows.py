"""Workflows the apps tests serve and run (importable as ``tests/apps/flows.py:Name``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from batonflow.apps.run_store import RunStore
from batonflow.apps.server import create_app
from batonflow.core import (
    Context,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    step,
)
from batonflow.core.checkpoints import SqliteCheckpointStore
from fastapi import FastAPI
from pydantic import BaseModel


class EchoFlow(Workflow):
    """Returns its start fields."""

    @step
    async def echo(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=ev.to_dict())


class Tick(Event):
    n: int


class TicksFlow(Workflow):
    """Streams ``count`` Tick events, ``delay`` seconds apart, then returns ``count``."""

    @step
    async def tick(self, ctx: Context, ev: StartEvent) -> StopEvent:
        count = int(ev.get("count", 5))
        for i in range(1, count + 1):
            ctx.write_event_to_stream(Tick(n=i))
            await asyncio.sleep(float(ev.get("delay", 0.02)))
        return StopEvent(result=count)


class ApprovalFlow(Workflow):
    """Asks for a decision and returns it."""

    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> InputRequiredEvent:
        await ctx.store.set("topic", ev.get("topic", "?"))
        return InputRequiredEvent(prefix="approve? ")

    @step
    async def decide(self, ctx: Context, ev: HumanResponseEvent) -> StopEvent:
        topic = await ctx.store.get("topic")
        return StopEvent(result=f"{topic}: {ev.response}")


class Guess(HumanResponseEvent):
    """An outside event with a typed field (outside events subclass HumanResponseEvent)."""

    value: int


class GuessFlow(Workflow):
    """Accepts a typed outside event ``Guess(value: int)``."""

    @step
    async def start(self, ev: StartEvent) -> InputRequiredEvent:
        return InputRequiredEvent(prefix="guess a number")

    @step
    async def check(self, ev: Guess) -> StopEvent:
        return StopEvent(result=ev.value * 2)


class SleepyFlow(Workflow):
    """Sleeps ``seconds`` (default 60): something to cancel."""

    @step
    async def sleep(self, ev: StartEvent) -> StopEvent:
        await asyncio.sleep(float(ev.get("seconds", 60)))
        return StopEvent(result="woke up")


class FailFlow(Workflow):
    """Fails with a ValueError."""

    @step
    async def fail(self, ev: StartEvent) -> StopEvent:
        raise ValueError("the step failed on purpose")


class Numbers(StartEvent):
    n: int
    label: str = "x"


class TypedFlow(Workflow):
    """A typed start event: ``n: int`` is required."""

    @step
    async def double(self, ev: Numbers) -> StopEvent:
        return StopEvent(result={"label": ev.label, "double": ev.n * 2})


class BrokenRunFlow(EchoFlow):
    """A workflow whose ``run`` raises something unexpected (for the 500 path)."""

    def run(self, *args, **kwargs):  # type: ignore[override]
        raise RuntimeError("secret internal detail /etc/passwd")


echo_instance = EchoFlow(timeout=10)


def make_echo() -> EchoFlow:
    return EchoFlow(timeout=10)


not_a_workflow = 42


class NeedsArgs(EchoFlow):
    """A workflow whose constructor needs an argument."""

    def __init__(self, llm: object, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.llm = llm


class Halfway(Event):
    value: int
    log: str = ""


class TwoStepFlow(Workflow):
    """Step one logs a line to ``log`` (a side effect to count); step two sleeps, then adds 1."""

    @step
    async def first(self, ev: StartEvent) -> Halfway:
        with open(ev.log, "a") as f:
            f.write("first\n")
        return Halfway(value=int(ev.value))

    @step
    async def second(self, ev: Halfway) -> StopEvent:
        await asyncio.sleep(1.0)
        return StopEvent(result=ev.value + 1)


class Order(BaseModel):
    """A plain pydantic model no step annotation names, kept in untyped state."""

    item: str
    qty: int


class OrderStateFlow(Workflow):
    """Step one keeps ``Order`` models in untyped state; step two sleeps, then reports them."""

    @step
    async def first(self, ctx: Context, ev: StartEvent) -> Halfway:
        await ctx.store.set("order", Order(item=ev.item, qty=int(ev.qty)))
        await ctx.store.set("more", [Order(item="spare", qty=1)])
        return Halfway(value=int(ev.qty))

    @step
    async def second(self, ctx: Context, ev: Halfway) -> StopEvent:
        await asyncio.sleep(1.0)
        order = await ctx.store.get("order")
        more = await ctx.store.get("more")
        return StopEvent(
            result={
                "classes": [type(order).__qualname__, type(more[0]).__qualname__],
                "same_class": type(order) is Order and type(more[0]) is Order,
                "order": order.model_dump(),
            }
        )


class WaitingFlow(Workflow):
    """Waits inside its step with ctx.wait_for_event (nothing declared in annotations)."""

    @step
    async def only(self, ctx: Context, ev: StartEvent) -> StopEvent:
        answer = await ctx.wait_for_event(
            HumanResponseEvent,
            waiter_event=InputRequiredEvent(prefix="name?"),
            timeout=None,
        )
        return StopEvent(result=f"hello {answer.response}")


class Opaque:
    """A value JSON cannot encode."""

    def __repr__(self) -> str:
        return "<Opaque>"


class OpaqueEvent(Event):
    payload: object = None


class OpaqueStreamFlow(Workflow):
    """Streams an event holding a non-JSON value (fine in-process, not for checkpoints)."""

    @step
    async def go(self, ctx: Context, ev: StartEvent) -> StopEvent:
        ctx.write_event_to_stream(OpaqueEvent(payload=Opaque()))
        return StopEvent(result="done")


class OpaqueStateFlow(Workflow):
    """Keeps a non-JSON value in its state (fine in-process, not for checkpoints)."""

    @step
    async def go(self, ctx: Context, ev: StartEvent) -> StopEvent:
        await ctx.store.set("payload", Opaque())
        return StopEvent(result="done")


class SlowAnswerFlow(Workflow):
    """Asks (logging ``asked`` to ``log``), then takes ``delay`` seconds to use the answer."""

    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> InputRequiredEvent:
        with open(ev.log, "a") as f:
            f.write("asked\n")
        await ctx.store.set("delay", float(ev.get("delay", 2.0)))
        return InputRequiredEvent(prefix="go? ")

    @step
    async def decide(self, ctx: Context, ev: HumanResponseEvent) -> StopEvent:
        await asyncio.sleep(await ctx.store.get("delay"))
        return StopEvent(result=f"answer: {ev.response}")


#: Ready instances for `batonflow serve -w name=flows.py:...` (flows that wait need no timeout).
approval_flow = ApprovalFlow(timeout=None)
sleepy_flow = SleepyFlow(timeout=None)


class SlowSecondStepFlow(TwoStepFlow):
    """TwoStepFlow whose second step waits until a file ``<log>.go`` exists (or 60 s)."""

    @step
    async def first(self, ev: StartEvent) -> Halfway:
        with open(ev.log, "a") as f:
            f.write("first\n")
        return Halfway(value=int(ev.value), log=ev.log)

    @step
    async def second(self, ev: Halfway) -> StopEvent:
        import os

        for _ in range(6000):
            if os.path.exists(f"{ev.log}.go"):
                break
            await asyncio.sleep(0.01)
        return StopEvent(result=ev.value + 1)


class Drafted(Event):
    text: str


class FlakyFlow(Workflow):
    """Drafts once, then publishing fails the first time (a transient outage)."""

    drafts = 0
    outages = 1

    @step
    async def draft(self, ctx: Context, ev: StartEvent) -> Drafted:
        type(self).drafts += 1
        return Drafted(text=ev.topic)

    @step
    async def publish(self, ev: Drafted) -> StopEvent:
        if type(self).outages:
            type(self).outages -= 1
            raise ConnectionError("the publisher is down")
        return StopEvent(result=ev.text.upper())


def flaky_app(db: Path) -> FastAPI:
    """A server app running :class:`FlakyFlow` as ``flaky`` (its next publish fails once),
    durably: runs and checkpoints in the SQLite file ``db``."""
    FlakyFlow.drafts, FlakyFlow.outages = 0, 1
    return create_app(
        {"flaky": FlakyFlow(timeout=None)},
        store=RunStore(db),
        checkpoints=SqliteCheckpointStore(db),
    )
