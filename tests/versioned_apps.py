"""Two deploys of one app module, ``orders.py``, for the tests of versions across processes.

``V1`` has two steps that wait for an answer: ``ship`` (an ``Order``) and ``hold`` (a
``Held``, when the run starts with ``hold=True``). ``V2`` removed ``hold`` and ``Held``, so a
run waiting in ``hold`` cannot continue with it while one waiting in ``ship`` can. ``write``
puts one of them in a folder as ``orders.py``, the module a process imports as ``orders``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

_HEAD = """
from batonflow.core import (
    Context, Event, HumanResponseEvent, InputRequiredEvent, StartEvent, StopEvent, Workflow, step,
)


class Order(Event):
    item: str


async def ask(ctx: Context, question: str) -> str:
    answer = await ctx.wait_for_event(
        HumanResponseEvent, waiter_event=InputRequiredEvent(prefix=question)
    )
    return str(answer.response)
"""

V1 = (
    _HEAD
    + """

class Held(Event):
    item: str


class Orders(Workflow):
    @step
    async def take(self, ev: StartEvent) -> Order | Held:
        return Held(item=ev.item) if ev.get("hold") else Order(item=ev.item)

    @step
    async def ship(self, ctx: Context, ev: Order) -> StopEvent:
        return StopEvent(result=f"shipped {ev.item}: " + await ask(ctx, "ship it?"))

    @step
    async def hold(self, ctx: Context, ev: Held) -> StopEvent:
        return StopEvent(result=f"held {ev.item}: " + await ask(ctx, "release it?"))
"""
)

V2 = (
    _HEAD
    + """

class Orders(Workflow):
    @step
    async def take(self, ev: StartEvent) -> Order:
        return Order(item=ev.item)

    @step
    async def ship(self, ctx: Context, ev: Order) -> StopEvent:
        return StopEvent(result=f"shipped {ev.item} (v2): " + await ask(ctx, "ship it?"))
"""
)

#: What V2 says of a run waiting in ``hold`` (on one line): its step is gone, and its event's
#: class.
HOLD_REASONS = (
    "step 'hold' (",
    "Held, has a class this code does not define (orders:Held: renamed or removed)",
)


def write(folder: Path, source: str) -> Path:
    """Make ``folder/orders.py`` hold ``source`` (no stale bytecode of another deploy)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(folder / "__pycache__", ignore_errors=True)
    path = folder / "orders.py"
    path.write_text(source)
    return path
