"""The workflows the child-run tests of the server, the CLI and the console run."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

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


def _append(path: Path, token: str) -> str:
    """A side effect: ``token`` appended to ``path`` (on disk before it returns)."""
    with open(path, "a") as f:
        f.write(f"{token}\n")
        f.flush()
        os.fsync(f.fileno())
    return token


class Filed(Event):
    """The child's first step is done."""


class FileChain(Workflow):
    """The child of ``FileBook``: ``first`` appends ``first`` to ``<folder>/effects``;
    ``second`` writes ``<folder>/second-started``, waits for ``<folder>/go``, appends ``second``."""

    @step
    async def first(self, ctx: Context, ev: StartEvent) -> Filed:
        await ctx.store.set("folder", str(ev.folder))
        _append(Path(ev.folder) / "effects", "first")
        return Filed()

    @step
    async def second(self, ctx: Context, ev: Filed) -> StopEvent:
        folder = Path(await ctx.store.get("folder"))
        (folder / "second-started").touch()
        while not (folder / "go").exists():
            await asyncio.sleep(0.02)
        _append(folder / "effects", "second")
        return StopEvent(result="chained")


class FileBook(Workflow):
    """A parent whose step journals ``pay`` (a side effect), then runs a FileChain child."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**{"timeout": None, **kwargs})

    @step(children=[FileChain])
    async def plan(self, ctx: Context, ev: StartEvent) -> StopEvent:
        paid = await ctx.journal("pay", _append, Path(ev.folder) / "effects", "pay")
        chained = await ctx.run_child(FileChain(timeout=None), folder=ev.folder)
        return StopEvent(result=f"{paid}, {chained}")
