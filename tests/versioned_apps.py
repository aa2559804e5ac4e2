"""Two deploys of one app module, ``orders.py``, for the tests of versions across processes.

``V1`` has two steps that wait for an answer: ``ship`` (an ``Order``) and ``hold`` (a
``Held``, when the run starts with ``hold=True``). ``V2`` removed ``hold`` and ``Held``, so a
run waiting in ``hold`` cannot continue with it while one waiting in ``ship`` can. ``write``
puts one of them in a folder as ``orders.py``, the module a process imports as ``orders``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
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


#: Run in a process with an ``orders.py`` on its path: start one run of each kind on the store
#: ``argv[1]`` names, wait until each asks its question, print their ids, and exit with both
#: in flight.
_PARK = textwrap.dedent(
    """
    import asyncio, os, sys
    from batonflow.core import InputRequiredEvent, WorkflowCheckpointer
    from batonflow.core.stores import open_store
    from orders import Orders

    async def main():
        cptr = WorkflowCheckpointer(Orders(), store=open_store(sys.argv[1]))
        for hold in (False, True):
            handler = cptr.run(item="tea", hold=hold)
            async for event in handler.stream_events():
                if isinstance(event, InputRequiredEvent):
                    print(handler.run_id, flush=True)
                    break
        os._exit(0)  # the process stops with both runs in flight

    asyncio.run(main())
    """
)


def env(folder: Path) -> dict[str, str]:
    """The environment of a process that imports ``folder``'s ``orders.py``."""
    kept = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_", "BATONFLOW_"))
    }
    return {**kept, "PYTHONPATH": str(folder)}


def park(folder: Path, store: str) -> tuple[str, str]:
    """In a process running ``folder``'s ``orders.py``, leave two runs in flight on ``store``
    (a path or URL): the one waiting in ``ship``, the one waiting in ``hold``."""
    done = subprocess.run(
        [sys.executable, "-c", _PARK, store],
        capture_output=True, text=True, timeout=120, cwd=folder, env=env(folder),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shipping, holding = done.stdout.split()
    return shipping, holding


def batonflow(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``batonflow ARGS`` in a process running ``folder``'s ``orders.py``."""
    return subprocess.run(
        [sys.executable, "-m", "batonflow", *args],
        capture_output=True, text=True, timeout=120, cwd=folder, env=env(folder),
    )  # fmt: skip
