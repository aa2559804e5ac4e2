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
* ``append_event (per event)``: ``store.append_event`` (a durable stream event);
* the same two with the SQLite connection replaced by a stub that does nothing: the store's
  own Python work per call, the figure a noisy machine disturbs least.

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
from core_ab import chain_flow, load, report

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
            f"{run_id}:{i}", run_id, "Flow", "loop", "m:Tick", ("m:Tick",), now, ctx, seq=i
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
    # The store's own Python work, without SQLite's: the connection replaced by a stub.
    conn, store._conn = store._conn, _StubConnection()
    start = time.process_time()
    for point in points:
        store.put(point)
    put_py = (time.process_time() - start) / WRITES * 1e6
    start = time.process_time()
    for _ in range(WRITES):
        store.append_event(run_id, "event", body)
    append_py = (time.process_time() - start) / WRITES * 1e6
    store._conn = conn
    store.close()
    return {
        "put (per checkpoint)": put,
        "append_event (per event)": append,
        "put, Python only (driver stubbed)": put_py,
        "append_event, Python only (driver stubbed)": append_py,
    }


class _StubConnection:
    """Takes every statement and does nothing (a cursor whose row is ``(1,)``)."""

    def execute(self, sql: str, args: Any = ()) -> Any:
        return self

    def fetchone(self) -> tuple[int]:
        return (1,)


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


async def measure(
    cores: dict[str, Any], folder: Path, rounds: int = ROUNDS
) -> dict[tuple[str, str], float]:
    """Best per-item CPU time in µs for each (core, workload)."""
    best: dict[tuple[str, str], float] = {}

    def keep(name: str, label: str, cost: float) -> None:
        best[(name, label)] = min(best.get((name, label), cost), cost)

    for name, core in cores.items():  # warm-up
        await chain_cost(core, folder, name, -1)
    for round_ in range(rounds):
        names = list(cores) if round_ % 2 else list(reversed(cores))
        for name in names:
            core = cores[name]
            keep(name, "durable chain (per step)", await chain_cost(core, folder, name, round_))
            for label, cost in store_cost(core, folder, name, round_).items():
                keep(name, label, cost)
    return best


class PgWorkloads:
    """One PostgreSQL store of one module, and its workloads in batches (wall µs per item)."""

    def __init__(self, module: Any, url: str, name: str) -> None:
        import batonflow.core as core
        from batonflow.core import checkpoints

        self.checkpoints = checkpoints
        self.store = module.PostgresCheckpointStore(url)
        self.run_id = f"{name}-run"
        now = time.time()
        self.store.create_run(checkpoints.RunRecord(self.run_id, "Flow", "running", now, now))
        self.seq = 0
        _, flow = chain_flow(core)
        self.flow = type(flow)(timeout=None, checkpoint_store=self.store)

    def put(self, n: int) -> float:
        ctx = {"state": {"state_data": {"_data": {"n": "1"}}}, "queues": {}, "version": 2}
        points = []
        for _ in range(n):
            self.seq += 1
            cid = f"{self.run_id}:{self.seq}"  # the checkpointer's ids (run store v3)
            args = (cid, self.run_id, "Flow", "loop", "m:Tick", ("m:Tick",), time.time(), ctx)
            points.append(self.checkpoints.Checkpoint(*args, seq=self.seq))
        start = time.perf_counter()
        for point in points:
            self.store.put(point)
        return (time.perf_counter() - start) / n * 1e6

    def append(self, n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            self.store.append_event(self.run_id, "event", '{"type":"Tick"}')
        return (time.perf_counter() - start) / n * 1e6

    def chain(self, n: int) -> float:
        async def run() -> Any:
            return await self.flow.run(n=n)

        start = time.perf_counter()
        assert asyncio.run(run()) == n
        return (time.perf_counter() - start) / n * 1e6


def compare_postgres(old_store: Path, rounds: int = ROUNDS) -> dict[tuple[str, str], float]:
    """Median wall µs of each PostgreSQL workload, old module against the installed one.

    Both stores are open on one server at once and take turns batch by batch (the order
    swapped every round), so a slow moment of the shared machine falls on both alike.
    """
    import importlib.util
    import statistics

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import batonflow.postgres.store as new
    from pg_server import running_server

    spec = importlib.util.spec_from_file_location("old_pg_store", old_store)
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    seen: dict[tuple[str, str], list[float]] = {}
    with running_server() as server:
        loads = {
            name: PgWorkloads(m, server.url(), name) for name, m in (("old", old), ("new", new))
        }
        for work in loads.values():  # warm-up
            work.put(20), work.append(20), work.chain(20)
        for round_ in range(rounds):
            names = list(loads) if round_ % 2 else list(reversed(loads))
            for label, batch in (
                ("put (per checkpoint)", lambda w: w.put(50)),
                ("append_event (per event)", lambda w: w.append(50)),
                ("durable chain (per step)", lambda w: w.chain(50)),
            ):
                for name in names:
                    seen.setdefault((name, label), []).append(batch(loads[name]))
        for work in loads.values():
            work.store.close()
    return {key: statistics.median(costs) for key, costs in seen.items()}


def main() -> None:
    """Parse the two folders, measure, print a table of new/old ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path, nargs="?", help="the old version's core/ folder")
    parser.add_argument("new", type=Path, nargs="?", help="the new version's core/ folder")
    parser.add_argument(
        "--postgres", type=Path, metavar="OLD_STORE_PY", help="compare PostgreSQL stores instead"
    )
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds (default 15)")
    args = parser.parse_args()
    if args.postgres is not None:
        report(compare_postgres(args.postgres, args.rounds))
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
        best = asyncio.run(measure(cores, data, args.rounds))
    report(best)


if __name__ == "__main__":
    main()
