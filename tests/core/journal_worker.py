"""A durable run of journaled calls to kill: ``python journal_worker.py start|resume DB RUN_ID
STEPS EFFECTS``.

Each of ``STEPS`` executions of a looping step makes one journaled call, ``effect(i)``, which
appends ``i`` to the file ``EFFECTS`` and fsyncs it (the side effect: an email, a payment, an
LLM bill) before it returns, then the step sleeps a little, so a SIGKILL lands anywhere: in the
call, between its side effect and its record, between steps. ``trial`` kills a run, resumes it
in a new process and counts each call's side effects: a call whose outcome was committed
before the kill must not run again. The kill test and ``bench/journal_kill.py`` use it.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
from batonflow.core.checkpoints import SqliteCheckpointStore, WorkflowCheckpointer
from worker_run import line_count, resume, start_and_kill, start_or_resume


class Tick(Event):
    i: int


def effect(path: str, i: int) -> int:
    """The side effect: ``i`` appended to ``path``, on disk before it returns."""
    with open(path, "a") as f:
        f.write(f"{i}\n")
        f.flush()
        os.fsync(f.fileno())
    return i * i


class Journaled(Workflow):
    """``steps`` executions of ``work``, each journaling one ``effect`` call."""

    @step
    async def begin(self, ctx: Context, ev: StartEvent) -> Tick:
        await ctx.store.set("steps", int(ev.steps))
        await ctx.store.set("effects", str(ev.effects))
        return Tick(i=0)

    @step
    async def work(self, ctx: Context, ev: Tick) -> Tick | StopEvent:
        value = await ctx.journal("effect", effect, await ctx.store.get("effects"), ev.i)
        await ctx.store.set("total", await ctx.store.get("total", default=0) + value)
        await asyncio.sleep(random.uniform(0.0, 0.004))
        if ev.i + 1 >= int(await ctx.store.get("steps")):
            return StopEvent(result=await ctx.store.get("total"))
        return Tick(i=ev.i + 1)


async def main(mode: str, db: str, run_id: str, steps: int, effects: str) -> None:
    store = SqliteCheckpointStore(db)
    cptr = WorkflowCheckpointer(Journaled(timeout=None), store=store)
    await start_or_resume(cptr, mode, run_id, steps=steps, effects=effects)


@dataclass(frozen=True)
class Trial:
    """What one kill-and-resume trial of journaled calls saw."""

    seed: int
    #: Calls whose outcome the store held when the process was killed.
    committed_before_kill: int
    #: The run's result was wrong or missing after the resume.
    lost_result: bool
    #: Committed calls whose side effect happened again after the resume (must be 0).
    repeated_committed: int
    #: The call in flight at the kill (side effect done, outcome not recorded), made again.
    repeated_in_flight: int
    #: Calls whose side effect never happened.
    missing: int


def trial(folder: Path, seed: int, steps: int = 30, python: str = sys.executable) -> Trial:
    """Start a run in a subprocess, SIGKILL it once a seeded random number of its calls made
    their side effect (then 0-4 ms later), resume it in another process, count side effects."""
    rng = random.Random(seed)
    db = folder / f"journal-{seed}.db"
    effects = folder / f"effects-{seed}.txt"
    run_id = f"run-{seed}"
    here = str(Path(__file__))
    args = [str(db), run_id, str(steps), str(effects)]
    target = rng.randrange(0, steps)
    start_and_kill(here, args, rng, lambda: line_count(effects) >= target, python)
    with SqliteCheckpointStore(db) as store:
        committed = {int(json.loads(e.body)) for e in store.journal(run_id)}
    before = _counts(effects)
    result = resume(here, args, python)
    after = _counts(effects)
    db.unlink()
    squares = {i * i for i in range(steps)}
    return Trial(
        seed=seed,
        committed_before_kill=len(committed & squares),
        lost_result=result != sum(i * i for i in range(steps)),
        repeated_committed=sum(after.get(i, 0) - 1 for i in range(steps) if i * i in committed),
        repeated_in_flight=sum(
            after.get(i, 0) - 1
            for i in range(steps)
            if i * i not in committed and before.get(i, 0) and after.get(i, 0) > 1
        ),
        missing=sum(1 for i in range(steps) if not after.get(i)),
    )


def _counts(path: Path) -> dict[int, int]:
    found: dict[int, int] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        found[int(line)] = found.get(int(line), 0) + 1
    return found


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4], int(sys.argv[4]), sys.argv[5]))
