"""The workflow the fork tests of the server, the client and the command line run."""

from __future__ import annotations

from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step


class Drafted(Event):
    """The draft's length."""

    words: int


class Essay(Workflow):
    """draft -> publish; ``ran`` counts the steps run."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.ran: list[str] = []

    @step
    async def draft(self, ctx: Context, ev: StartEvent) -> Drafted:
        self.ran.append("draft")
        await ctx.store.set("tone", ev.get("tone", "dry"))
        return Drafted(words=100)

    @step
    async def publish(self, ctx: Context, ev: Drafted) -> StopEvent:
        self.ran.append("publish")
        return StopEvent(result=f"{ev.words} words, {await ctx.store.get('tone')}")
