"""A durable run to kill: ``python durable_worker.py start|resume DB RUN_ID STEPS``.

One looping step runs ``STEPS`` times; each execution writes a ``Progress`` stream event, sets
one state key and sleeps a little, so a SIGKILL lands anywhere: in a step, between steps, in
a checkpoint or event-log write. The tests and ``bench/durable_kill.py`` use it.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
from batonflow.core.checkpoints import SqliteCheckpointStore, WorkflowCheckpointer
from batonflow.core.durable._records import state_values
from worker_run import resume, start_and_kill, start_or_resume


class Progress(Event):
    i: int


class Tick(Event):
    i: int


class Chain(Workflow):
    """The workflow the worker runs: ``steps`` looping executions of ``work``."""

    @step
    async def begin(self, ctx: Context, ev: StartEvent) -> Tick:
        await ctx.store.set("steps", int(ev.steps))
        return Tick(i=0)

    @step
    async def work(self, ctx: Context, ev: Tick) -> Tick | StopEvent:
        ctx.write_event_to_stream(Progress(i=ev.i))
        await ctx.store.set(f"k{ev.i}", ev.i)
        await asyncio.sleep(random.uniform(0.0, 0.004))
        if ev.i + 1 >= int(await ctx.store.get("steps")):
            return StopEvent(result=sum(range(ev.i + 1)))
        return Tick(i=ev.i + 1)


async def main(mode: str, db: str, run_id: str, steps: int) -> None:
    store = SqliteCheckpointStore(db)
    cptr = WorkflowCheckpointer(Chain(timeout=None), store=store)
    await start_or_resume(cptr, mode, run_id, steps=steps)


@dataclass(frozen=True)
class Trial:
    """What one kill-and-resume trial saw."""

    seed: int
    completed_before_kill: int
    #: The run's result was wrong or missing after the resume.
    lost_result: bool
    #: Steps whose stream event is missing from the log.
    lost_events: int
    #: Events of steps that had completed before the kill, delivered again (must be 0).
    repeated_completed: int
    #: Events of the step the kill interrupted, written again when it re-ran (at-least-once).
    rerun_interrupted: int
    #: Entries recorded before the kill that changed seq or content afterwards (must be 0).
    renumbered: int


def trial(folder: Path, seed: int, steps: int = 30, python: str = sys.executable) -> Trial:
    """Start a run in a subprocess, SIGKILL it at a seeded random point (after a random number
    of recorded events), resume it in another process, and compare the event log and result
    with what a run without a crash gives."""
    rng = random.Random(seed)
    db = folder / f"trial-{seed}.db"
    run_id = f"run-{seed}"
    here = str(Path(__file__))
    args = [str(db), run_id, str(steps)]
    # Kill once a random number of events is in the log (then a little later), so the kill
    # lands anywhere in the run however slow the machine is.
    target = rng.randrange(0, steps)
    with SqliteCheckpointStore(db) as watch:
        start_and_kill(here, args, rng, lambda: len(watch.events(run_id)) >= target, python)
    with SqliteCheckpointStore(db) as store:
        latest = store.latest(run_id)
        state = state_values(latest.ctx_data["state"]) if latest is not None else {}
        completed = {int(k[1:]) for k in state if k.startswith("k")}
        before = [(e.seq, e.body) for e in store.events(run_id)]
    result = resume(here, args, python)
    with SqliteCheckpointStore(db) as store:
        after = [(e.seq, e.body) for e in store.events(run_id)]
    db.unlink()
    seen: dict[int, int] = {}
    for _, body in after:
        entry = json.loads(body)
        if entry.get("type") == "Progress":
            i = int(entry["value"]["i"])
            seen[i] = seen.get(i, 0) + 1
    return Trial(
        seed=seed,
        completed_before_kill=len(completed),
        lost_result=result != sum(range(steps)),
        lost_events=sum(1 for i in range(steps) if seen.get(i, 0) == 0),
        repeated_completed=sum(seen.get(i, 0) - 1 for i in completed if seen.get(i, 0) > 1),
        rerun_interrupted=sum(
            seen.get(i, 0) - 1 for i in range(steps) if i not in completed and seen.get(i, 0) > 1
        ),
        renumbered=sum(1 for a, b in zip(before, after, strict=False) if a != b)
        + max(0, len(before) - len(after)),
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
