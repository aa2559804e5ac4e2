"""The 3-step durable flow that ``bench/http_compare.py`` serves from ``batonflow serve``.

The same three steps as ``_llama_server.py`` writes for llama-agents-server: the first sets a
state key, the second writes one stream event, the third returns ``n + 1``. A run's event log
holds three entries: the stream event, the ``StopEvent`` and the run's end.
"""

from __future__ import annotations

from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step


class Counted(Event):
    """The first step's output (also written to the stream by the second)."""

    n: int


class Checked(Event):
    """The second step's output."""

    n: int


class ThreeSteps(Workflow):
    """Three durable steps: set a key, write a stream event, return ``n + 1``."""

    @step
    async def first(self, ctx: Context, ev: StartEvent) -> Counted:
        n = int(ev.get("n", 0))
        await ctx.store.set("n", n)
        return Counted(n=n)

    @step
    async def second(self, ctx: Context, ev: Counted) -> Checked:
        ctx.write_event_to_stream(Counted(n=ev.n))
        return Checked(n=ev.n + 1)

    @step
    async def third(self, ev: Checked) -> StopEvent:
        return StopEvent(result=ev.n)
