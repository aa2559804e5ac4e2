"""Two versions of the SQLite run store side by side in one process: the durable step's cost.

Usage::

    mkdir /tmp/old && git archive <commit> core postgres | tar -x -C /tmp/old
    .venv/bin/python bench/stores_ab.py /tmp/old/core core
    .venv/bin/python bench/stores_ab.py --postgres /tmp/old/postgres/store.py

With ``--postgres`` the old PostgreSQL store module (run against the installed
``batonflow.core``) and the installed ``batonflow.postgres.store`` are compared on one
throw-away server (``tests/pg_server.py``), in wall time (each write is a round trip to the
server): the median of the rounds.

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
from core_ab import chain_flow, load

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


def pg_cost(module: Any, url: str, name: str, round_: int) -> dict[str, float]:
    """Wall µs per put, append_event and durable chain step on a PostgreSQL store."""
    import batonflow.core as core
    from batonflow.core import checkpoints

    store = module.PostgresCheckpointStore(url)
    run_id = f"{name}-{round_}"
    now = time.time()
    store.create_run(checkpoints.RunRecord(run_id, "Flow", "running", now, now))
    ctx = {"state": {"state_data": {"_data": {"n": "1"}}}, "queues": {}, "version": 2}
    writes = WRITES // 10
    figures: dict[str, float] = {}
    start = time.perf_counter()
    for i in range(writes):
        store.put(
            checkpoints.Checkpoint(
                f"{run_id}-{i}", run_id, "Flow", "loop", "m:Tick", ("m:Tick",), now, ctx, seq=i
            )
        )
    figures["put (per checkpoint)"] = (time.perf_counter() - start) / writes * 1e6
    start = time.perf_counter()
    for _ in range(writes):
        store.append_event(run_id, "event", '{"type":"Tick"}')
    figures["append_event (per event)"] = (time.perf_counter() - start) / writes * 1e6
    _, flow = chain_flow(core)
    flow = type(flow)(timeout=None, checkpoint_store=store)
    steps = STEPS // 4
    start = time.perf_counter()

    async def run() -> Any:
        return await flow.run(n=steps)

    assert asyncio.run(run()) == steps
    figures["durable chain (per step)"] = (time.perf_counter() - start) / steps * 1e6
    store.close()
    return figures


def compare_postgres(old_store: Path) -> dict[tuple[str, str], float]:
    """Median wall µs of each PostgreSQL workload, old module against the installed one."""
    import importlib.util
    import statistics

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import batonflow.postgres.store as new
    from pg_server import running_server

    spec = importlib.util.spec_from_file_location("old_pg_store", old_store)
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    modules = {"old": old, "new": new}
    seen: dict[tuple[str, str], list[float]] = {}
    with running_server() as server:
        url = server.url()
        for name, module in modules.items():
            pg_cost(module, url, f"warm-{name}", 0)
        for round_ in range(ROUNDS // 3):
            for name in list(modules) if round_ % 2 else list(reversed(modules)):
                for label, cost in pg_cost(modules[name], url, name, round_).items():
                    seen.setdefault((name, label), []).append(cost)
    return {key: statistics.median(costs) for key, costs in seen.items()}


def main() -> None:
    """Parse the two folders, measure, print a table of new/old ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path, nargs="?", help="the old version's core/ folder")
    parser.add_argument("new", type=Path, nargs="?", help="the new version's core/ folder")
    parser.add_argument(
        "--postgres", type=Path, metavar="OLD_STORE_PY", help="compare PostgreSQL stores instead"
    )
    args = parser.parse_args()
    if args.postgres is not None:
        report(compare_postgres(args.postgres))
        return
    if args.old is None or args.new is None:
        parser.error("give the old and the new core/ folders, or --postgres OLD_STORE_PY")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sys.path.insert(0, tmp)
        cores = {"old": load(args.old, "old_core", root), "new": load(args.new, "new_core", root)}
        for core in cores.values():
            __import__(f"{core.__name__}.checkpoints")
        data = root / "data"
        data.mkdir()
        best = asyncio.run(measure(cores, data))
    report(best)


def report(best: dict[tuple[str, str], float]) -> None:
    """Print one row per workload: old, new, and their ratio."""
    print("| workload | old (µs) | new (µs) | new / old |")
    print("|---|---|---|---|")
    for label in dict.fromkeys(label for _, label in best):
        old, new = best[("old", label)], best[("new", label)]
        print(f"| {label} | {old:.2f} | {new:.2f} | {new / old:.3f} |")


if __name__ == "__main__":
    main()
