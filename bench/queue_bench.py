"""The run queue's cost per run against starting a run directly (SQLite, or PostgreSQL).

``python bench/queue_bench.py --runs 2000`` runs a one-step durable workflow N times on a fresh
store, ``--in-flight`` at a time, in one process, alternately (``--rounds``, the best of each): started directly (``cptr.astart``,
as a server without limits does), and through the queue (``WorkflowCheckpointer(limits=
RunLimits(max_running=in_flight))``: each run is recorded ``queued``, claimed, then started
from its recorded start event). It prints the time per run of each and their ratio (the goal:
the queue within 1.2x). ``--db postgresql://...`` measures on PostgreSQL (its tables are
emptied first: use a scratch database).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from batonflow.core import RunLimits, StartEvent, StopEvent, Workflow, step
from batonflow.core.checkpoints import WorkflowCheckpointer
from batonflow.core.stores import open_store


class Order(Workflow):
    @step
    async def place(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result={"order": ev.get("n"), "items": ["tea", "scones"]})


async def _batch(cptr: WorkflowCheckpointer, first: int, size: int) -> None:
    handlers = await asyncio.gather(*(cptr.astart(n=first + i) for i in range(size)))
    await asyncio.gather(*handlers)


async def _measure(store: Any, runs: int, in_flight: int, limits: RunLimits | None) -> float:
    cptr = WorkflowCheckpointer(Order(), store=store, limits=limits)
    await _batch(cptr, -in_flight, in_flight)  # warm up
    started = time.perf_counter()
    for first in range(0, runs, in_flight):
        await _batch(cptr, first, min(in_flight, runs - first))
    elapsed = time.perf_counter() - started
    await cptr.close_queue()
    return elapsed / runs


def _empty(store: Any) -> None:
    for run in store.runs():
        store.delete(run.run_id)


async def _fresh(where: str | Path, runs: int, in_flight: int, limits: RunLimits | None) -> float:
    """One measure on an empty store (a new file, or the PostgreSQL tables emptied)."""
    store = open_store(where)
    _empty(store)
    try:
        return await _measure(store, runs, in_flight, limits)
    finally:
        store.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2_000)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2, help="alternated measures of each")
    parser.add_argument("--db", default=None, help="a PostgreSQL URL (default: SQLite file)")
    args = parser.parse_args()
    limits = RunLimits(max_running=args.in_flight)
    direct = queued = float("inf")
    with tempfile.TemporaryDirectory() as tmp:
        # Alternated, the best of each: the machine's other load touches both alike.
        for n in range(args.rounds):
            where = args.db or Path(tmp) / f"direct{n}.db"
            direct = min(direct, await _fresh(where, args.runs, args.in_flight, None))
            where = args.db or Path(tmp) / f"queued{n}.db"
            queued = min(queued, await _fresh(where, args.runs, args.in_flight, limits))
    where = "PostgreSQL" if args.db else "SQLite"
    print(f"{args.runs} runs of a one-step durable workflow, {args.in_flight} in flight, {where}")
    print(f"  started directly:   {direct * 1e3:7.2f} ms/run")
    print(f"  through the queue:  {queued * 1e3:7.2f} ms/run")
    print(f"  queue / direct:     {queued / direct:7.2f}x  (goal: within 1.2x)")


if __name__ == "__main__":
    asyncio.run(main())
