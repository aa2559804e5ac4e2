"""The run store's size after many runs, with and without a retention policy (SQLite).

``python bench/retention.py --runs 100000`` runs a one-step durable workflow N times on a fresh
SQLite store, twice: keeping every run, and with ``Retention(keep)`` swept every ``--every``
runs (as ``batonflow serve --keep-finished`` does every minute). It prints the database's size
(file and WAL) at the end of each, and the ratio. With a policy the file stops growing once the
runs it keeps fit: SQLite reuses the pages of deleted rows.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

from batonflow.core import Retention, StartEvent, StopEvent, Workflow, step
from batonflow.core.checkpoints import WorkflowCheckpointer
from batonflow.core.stores import open_store


class Order(Workflow):
    @step
    async def place(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result={"order": ev.get("n"), "items": ["tea", "scones"]})


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


async def _run(path: Path, runs: int, policy: Retention | None, every: int) -> tuple[int, float]:
    store = open_store(path)
    checkpointer = WorkflowCheckpointer(Order(), store=store)
    started = time.perf_counter()
    for n in range(runs):
        await checkpointer.run(n=n)
        if policy is not None and (n + 1) % every == 0:
            policy.sweep(store)
    elapsed = time.perf_counter() - started
    store.close()
    return _size(path), elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=1_000, help="runs between sweeps")
    parser.add_argument("--keep", default="0s", help="the policy's period (0s: sweep all ended)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kept, t_kept = await _run(Path(tmp) / "all.db", args.runs, None, args.every)
        swept, t_swept = await _run(
            Path(tmp) / "swept.db", args.runs, Retention(args.keep), args.every
        )
    mb = 1024 * 1024
    print(f"{args.runs} runs of a one-step durable workflow, SQLite, pid {os.getpid()}")
    print(f"  no policy:               {kept / mb:8.1f} MB  ({args.runs / t_kept:,.0f} runs/s)")
    print(
        f"  Retention({args.keep!r}) every {args.every}: {swept / mb:8.1f} MB  "
        f"({args.runs / t_swept:,.0f} runs/s)"
    )
    print(f"  ratio: {kept / swept:.0f}x smaller; runs/s ratio {t_kept / t_swept:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
