"""The workflows the child-run tests of the server, the CLI and the console run."""

from __future__ import annotations

import asyncio

from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step


class Outline(Workflow):
    """The child: one step that writes a ``Progress`` event, then waits for ``go`` if asked."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.go = asyncio.Event()
        self.go.set()

    @step
    async def outline(self, ctx: Context, ev: StartEvent) -> StopEvent:
        ctx.write_event_to_stream(Event(progress=f"outlining {ev.topic}"))
        await self.go.wait()
        return StopEvent(result=f"outline of {ev.topic}")


class Book(Workflow):
    """The parent: its step ``plan`` runs an Outline as a child run."""

    def __init__(self, child: Outline, **kwargs) -> None:
        super().__init__(**kwargs)
        self.child = child

    @step(children=[Outline])
    async def plan(self, ctx: Context, ev: StartEvent) -> StopEvent:
        return StopEvent(result=await ctx.run_child(self.child, topic=ev.topic))
