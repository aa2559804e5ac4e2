"""A durable parent with a child run, to kill: ``python child_kill_worker.py start|resume STORE
RUN_ID STEPS EFFECTS``.

The parent's step journals one call (``pay``: its side effect is the line ``pay`` in the file
``EFFECTS``), then runs a child whose ``STEPS`` executions of a looping step each append
``c<i>`` to the same file (a plain side effect, not journaled: the child's checkpoints are what
keeps a finished step from running again), each fsynced, then sleep a little, so a SIGKILL
lands anywhere. :func:`trial` kills the parent's process, resumes the parent in a new one and
counts the side effects: the parent's committed call and the child's steps whose checkpoint
was committed must not run again.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
from batonflow.core.checkpoints import WorkflowCheckpointer
from batonflow.core.stores import open_store
from worker_run import line_count, resume, start_and_kill, start_or_resume


class Tick(Event):
    i: int


def effect(path: str, token: str) -> str:
    """The side effect: ``token`` appended to ``path``, on disk before it returns."""
    with open(path, "a") as f:
        f.write(f"{token}\n")
        f.flush()
        os.fsync(f.fileno())
    return token


class Chain(Workflow):
    """``steps`` executions of ``work``, each with one side effect."""

    @step
    async def begin(self, ctx: Context, ev: StartEvent) -> Tick:
        await ctx.store.set("steps", int(ev.steps))
        await ctx.store.set("effects", str(ev.effects))
        return Tick(i=0)

    @step
    async def work(self, ctx: Context, ev: Tick) -> Tick | StopEvent:
        effect(await ctx.store.get("effects"), f"c{ev.i}")
        await asyncio.sleep(random.uniform(0.0, 0.004))
        if ev.i + 1 >= int(await ctx.store.get("steps")):
            return StopEvent(result=ev.i + 1)
        return Tick(i=ev.i + 1)


class Outer(Workflow):
    """One step: a journaled payment, then the child chain."""

    @step
    async def go(self, ctx: Context, ev: StartEvent) -> StopEvent:
        paid = await ctx.journal("pay", effect, str(ev.effects), "pay")
        done = await ctx.run_child(Chain(timeout=None), steps=ev.steps, effects=ev.effects)
        return StopEvent(result=f"{paid}:{done}")


async def main(mode: str, url: str, run_id: str, steps: int, effects: str) -> None:
    store = open_store(url)
    cptr = WorkflowCheckpointer(Outer(timeout=None), store=store)
    await start_or_resume(cptr, mode, run_id, steps=steps, effects=effects)


@dataclass(frozen=True)
class Trial:
    """What one kill-and-resume trial of a parent and its child saw."""

    seed: int
    #: The child's ``work`` steps whose checkpoint the store held at the kill.
    committed_steps: int
    #: Whether the parent's ``pay`` call was committed at the kill.
    pay_committed: bool
    #: The parent's result was wrong or missing after the resume.
    lost_result: bool
    #: Committed child steps or a committed ``pay`` whose side effect happened again (0).
    repeated_committed: int
    #: Child runs the parent had after the resume (1: resumed, not started again).
    children: int
    #: Side effects that never happened.
    missing: int


def trial(
    folder: Path, url: str, seed: int, steps: int = 20, python: str = sys.executable
) -> Trial:
    """Start a parent in a subprocess, SIGKILL it once a seeded random number of side effects
    happened (then 0-4 ms later), resume it in another process, count the side effects."""
    rng = random.Random(seed)
    effects = folder / f"effects-{seed}.txt"
    run_id = f"parent-{seed}-{os.getpid()}-{time.time_ns()}"
    here = str(Path(__file__))
    args = [url, run_id, str(steps), str(effects)]
    target = rng.randrange(0, steps + 1)
    start_and_kill(here, args, rng, lambda: line_count(effects) >= target, python)
    store = open_store(url)
    try:
        pay = [e for e in store.journal(run_id) if e.name == "pay"]
        kids = store.children(run_id)
        committed = (
            sum(1 for c in store.list(kids[0].run_id) if c.step_name == "work") if kids else 0
        )
        result = resume(here, args, python)
        children = len(store.children(run_id))
    finally:
        store.close()
    after = _counts(effects)
    tokens = ["pay"] + [f"c{i}" for i in range(steps)]
    repeated = sum(after.get(f"c{i}", 0) - 1 for i in range(committed))
    repeated += after.get("pay", 0) - 1 if pay else 0
    return Trial(
        seed=seed,
        committed_steps=committed,
        pay_committed=bool(pay),
        lost_result=result != f"pay:{steps}",
        repeated_committed=repeated,
        children=children,
        missing=sum(1 for t in tokens if not after.get(t)),
    )


def _counts(path: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        found[line] = found.get(line, 0) + 1
    return found


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4], int(sys.argv[4]), sys.argv[5]))
