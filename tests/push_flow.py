"""A workflow that is pushed its input from outside, for the tests of queued runs' events."""

from __future__ import annotations

from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step


class Push(Event):
    """One item of input pushed into a run from outside (not an answer)."""

    item: str


class PushFlow(Workflow):
    """Starts, then ends with the first three items pushed into it, in the order taken in."""

    @step
    async def begin(self, ev: StartEvent) -> None:
        return None

    @step(skip_graph_checks=["reachability"])  # Push is sent from outside
    async def take(self, ctx: Context, ev: Push) -> StopEvent | None:
        got = ctx.collect_events(ev, [Push, Push, Push])
        return None if got is None else StopEvent(result=[e.item for e in got])
