"""A durable run on a SQLite file, for the concurrent-resume tests.

``python resume_race_worker.py start DB RUN_ID LOG PAUSE`` starts the run;
``python resume_race_worker.py resume DB RUN_ID LOG GO`` waits until the file ``GO`` exists
(so two resumers call ``resume`` at once), then resumes it. Each prints one JSON line:
``{"result": ...}``, or ``{"busy": message}`` when ``RunBusyError`` refused the resume. Every
step notes ``<run_id> <step> <pid>`` in ``LOG`` (fsynced) when it starts.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

from batonflow.core import Context, Event, RunBusyError, StartEvent, StopEvent, Workflow, step
from batonflow.core.checkpoints import SqliteCheckpointStore, WorkflowCheckpointer


def note(path: str, run_id: str, name: str) -> None:
    """Append ``run_id name pid`` to ``path`` and fsync it (it must survive a SIGKILL)."""
    with open(path, "a") as f:
        f.write(f"{run_id} {name} {os.getpid()}\n")
        f.flush()
        os.fsync(f.fileno())


class Halfway(Event):
    """The first step's output."""


class Slow(Workflow):
    """A quick step, then a slow one that returns ``"done"``."""

    @step
    async def one(self, ctx: Context, ev: StartEvent) -> Halfway:
        note(ev.log, str(ctx.run_id), "one")
        await ctx.store.set("log", ev.log)
        await ctx.store.set("pause", float(ev.pause))
        return Halfway()

    @step
    async def two(self, ctx: Context, ev: Halfway) -> StopEvent:
        note(await ctx.store.get("log"), str(ctx.run_id), "two")
        await asyncio.sleep(await ctx.store.get("pause"))
        return StopEvent(result="done")


async def main(mode: str, db: str, run_id: str, log: str, extra: str) -> None:
    cptr = WorkflowCheckpointer(Slow(timeout=None), store=SqliteCheckpointStore(db))
    if mode == "start":
        handler = cptr.run(run_id=run_id, log=log, pause=float(extra))
    else:
        print("ready", flush=True)
        while not os.path.exists(extra):
            time.sleep(0.001)
        try:
            handler = cptr.resume(run_id)
        except RunBusyError as exc:
            print(json.dumps({"busy": str(exc)}), flush=True)
            return
    print(json.dumps({"result": await handler}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
