"""Two versions of the SQLite run store side by side in one process: the durable step's cost.

Usage::

    mkdir /tmp/old && git archive <commit> core | tar -x -C /tmp/old
    .venv/bin/python bench/stores_ab.py /tmp/old/core core

Both ``core`` folders are loaded as packages (as ``bench/core_ab.py`` does) and measured
alternately, round by round, in CPU time, taking each figure's best round. Each version uses
its own ``SqliteCheckpointStore`` on its own file in one temporary folder. The workloads:

* ``durable chain (per step)``: ``Workflow(checkpoint_store=store)`` running bench's chain
  (one step looping on its own event), so every step writes one checkpoint;
* ``put (per checkpoint)``: ``store.put`` of a checkpoint of a recorded run (the write a
  durable step makes), without the engine;
* ``append_event (per event)``: ``store.append_event`` (a durable stream event).

Wall-clock time is not used: a commit's fsync is outside the process's CPU time, and WAL with
``synchronous=NORMAL`` does not fsync per commit anyway.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from core_ab import chain_flow, load  # noqa: E402

ROUNDS = 15
STEPS = 400
WRITES = 2_000


def store_cost(core: Any, folder: Path, name: str, round_: int) -> dict[str, float]:
    """µs per put and per append_event on a fresh store of ``core``."""
    store = core.checkpoints.SqliteCheckpointStore(folder / f"{name}-{round_}.db")
    run_id = f"run-{round_}"
    now = time.time()
    store.create_run(core.checkpoints.RunRecord(run_id, "Flow", "running", now, now))
    ctx = {"state": {"state_data": {"_data": {"n": "1"}}}, "queues": {}, "version": 2}
    points = [
        core.checkpoints.Checkpoint(
            f"{run_id}-{i}", run_id, "Flow", "loop", "m:Tick", ("m:Tick",), now, ctx, seq=i
        )
        for i in range(WRITES)
    ]
    start = time.process_time()
    for point in points:
        store.put(point)
    put = (time.process_time() - start) / WRITES * 1e6
    body = '{"type":"Tick","qualified_name":"m.Tick","value":{"n":1}}'
    start = time.process_time()
    for _ in range(WRITES):
        store.append_event(run_id, "event", body)
    append = (time.process_time() - start) / WRITES * 1e6
    store.close()
    return {"put (per checkpoint)": put, "append_event (per event)": append}


async def chain_cost(core: Any, folder: Path, name: str, round_: int) -> float:
    """µs per step of a durable chain with ``core``'s SQLite store."""
    store = core.checkpoints.SqliteCheckpointStore(folder / f"{name}-chain-{round_}.db")
    _, flow_cls = chain_flow(core)
    flow = type(flow_cls)(timeout=None, checkpoint_store=store)
    start = time.process_time()
    assert await flow.run(n=STEPS) == STEPS
    cost = (time.process_time() - start) / STEPS * 1e6
    store.close()
    return cost


async def measure(cores: dict[str, Any], folder: Path) -> dict[tuple[str, str], float]:
    """Best per-item CPU time in µs for each (core, workload)."""
    best: dict[tuple[str, str], float] = {}

    def keep(name: str, label: str, cost: float) -> None:
        best[(name, label)] = min(best.get((name, label), cost), cost)

    for name, core in cores.items():  # warm-up
        await chain_cost(core, folder, name, -1)
    for round_ in range(ROUNDS):
        names = list(cores) if round_ % 2 else list(reversed(cores))
        for name in names:
            core = cores[name]
            keep(name, "durable chain (per step)", await chain_cost(core, folder, name, round_))
            for label, cost in store_cost(core, folder, name, round_).items():
                keep(name, label, cost)
    return best


def main() -> None:
    """Parse the two folders, measure, print a table of new/old ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path, help="the old version's core/ folder")
    parser.add_argument("new", type=Path, help="the new version's core/ folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sys.path.insert(0, tmp)
        cores = {"old": load(args.old, "old_core", root), "new": load(args.new, "new_core", root)}
        for core in cores.values():
            __import__(f"{core.__name__}.checkpoints")
        data = root / "data"
        data.mkdir()
        best = asyncio.run(measure(cores, data))
    print("| workload | old (µs) | new (µs) | new / old |")
    print("|---|---|---|---|")
    for label in dict.fromkeys(label for _, label in best):
        old, new = best[("old", label)], best[("new", label)]
        print(f"| {label} | {old:.2f} | {new:.2f} | {new / old:.3f} |")


if __name__ == "__main__":
    main()
