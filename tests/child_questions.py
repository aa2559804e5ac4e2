"""Workflows whose child runs ask a person (the tests of answers to child runs: core, the
server, the client and the console)."""

from __future__ import annotations

import asyncio
from pathlib import Path

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


class Approve(Workflow):
    """The child: ``ask`` waits for a ``HumanResponseEvent``; with ``folder`` given it then
    touches ``<folder>/answered`` and waits for ``<folder>/go`` before it returns."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**{"timeout": None, **kwargs})

    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        answer = await ctx.wait_for_event(
            HumanResponseEvent,
            waiter_event=InputRequiredEvent(prefix=f"approve {ev.topic}?"),
            timeout=None,
        )
        folder = ev.get("folder")
        if folder:
            (Path(folder) / "answered").touch()
            while not (Path(folder) / "go").exists():
                await asyncio.sleep(0.02)
        return StopEvent(result=f"{ev.topic}: {answer.response}")


class Release(Workflow):
    """The parent: ``plan`` runs an ``Approve`` child and returns its result."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**{"timeout": None, **kwargs})

    @step(children=[Approve])
    async def plan(self, ctx: Context, ev: StartEvent) -> StopEvent:
        folder = ev.get("folder")
        fields = {"topic": ev.topic, **({"folder": folder} if folder else {})}
        return StopEvent(result=await ctx.run_child(Approve(), **fields))


class Approved(Event):
    """One of ``Pair``'s two children has answered."""

    result: str


class Pair(Workflow):
    """The parent of two ``Approve`` children at once (``left`` and ``right``)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**{"timeout": None, **kwargs})

    @step
    async def fan(self, ctx: Context, ev: StartEvent) -> StopEvent:
        results = await asyncio.gather(
            ctx.run_child(Approve(), topic="left"), ctx.run_child(Approve(), topic="right")
        )
        return StopEvent(result=", ".join(results))


class Nest(Workflow):
    """The grandparent: ``outer`` runs a ``Release`` child, whose own child asks."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**{"timeout": None, **kwargs})

    @step(children=[Release])
    async def outer(self, ctx: Context, ev: StartEvent) -> StopEvent:
        return StopEvent(result=await ctx.run_child(Release(), topic=ev.topic))


class Tool(Workflow):
    """A child that waits for a ``HumanResponseEvent`` with ``tool`` = its start's ``tool``."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**{"timeout": None, **kwargs})

    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        answer = await ctx.wait_for_event(
            HumanResponseEvent,
            waiter_event=InputRequiredEvent(prefix=f"run {ev.tool}?"),
            requirements={"tool": ev.tool},
            timeout=None,
        )
        return StopEvent(result=f"{ev.tool}: {answer.response}")


class Desk(Workflow):
    """The parent of two ``Tool`` children at once, waiting for ``tool`` a and b."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**{"timeout": None, **kwargs})

    @step(children=[Tool])
    async def fan(self, ctx: Context, ev: StartEvent) -> StopEvent:
        results = await asyncio.gather(
            ctx.run_child(Tool(), tool="a"), ctx.run_child(Tool(), tool="b")
        )
        return StopEvent(result=", ".join(results))
