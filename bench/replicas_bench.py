"""Durable runs on PostgreSQL against SQLite, and server replicas sharing one database.

Usage::

    .venv/bin/python bench/replicas_bench.py            # all three measurements (~2 minutes)
    .venv/bin/python bench/replicas_bench.py --quick    # fewer runs

Needs Debian's PostgreSQL server binaries (``apt-get install postgresql``): a throw-away
server is started in a temp dir, as the tests do (``tests/pg_server.py``). Prints three tables:

1. **Checkpoint cost per step** of a durable 200-step chain, in one process: in-memory store,
   SQLite file, PostgreSQL on loopback.
2. **Runs per second over HTTP** of a 3-step durable flow: one SQLite server, then 1, 2 and 3
   PostgreSQL replicas (``batonflow serve`` subprocesses) with the requests spread over them.
3. **Failover time**: a replica is SIGKILLed while a run is in its first step; the time until
   another replica runs that step again, for several lease lengths.

Figures are medians of a few repeats, measured in one run, side by side: compare ratios, the
machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
FLOWS = ROOT / "tests" / "postgres" / "replica_flows.py"


def checkpoint_cost(url: str, steps: int, repeats: int) -> dict[str, float]:
    """µs per durable step of a chain, for each store."""
    from batonflow.core import Event, StartEvent, StopEvent, Workflow, step
    from batonflow.core.checkpoints import InMemoryCheckpointStore
    from batonflow.core.stores import open_store

    class Tick(Event):
        n: int

    class Chain(Workflow):
        @step
        async def begin(self, ev: StartEvent) -> Tick:
            return Tick(n=0)

        @step
        async def loop(self, ev: Tick) -> Tick | StopEvent:
            return StopEvent(result=ev.n) if ev.n + 1 >= steps else Tick(n=ev.n + 1)

    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        stores = {
            "in memory": lambda: InMemoryCheckpointStore(),
            "SQLite": lambda: open_store(Path(tmp) / "bench.db"),
            "PostgreSQL": lambda: open_store(url),
        }
        for name, make in stores.items():
            store = make()
            times = []
            for _ in range(repeats):
                w = Chain(timeout=None, checkpoint_store=store)
                began = time.perf_counter()
                result = asyncio.run(_run(w))
                times.append(time.perf_counter() - began)
                assert result == steps - 1, result
            results[name] = statistics.median(times) / (steps + 1) * 1e6
            store.close()
    return results


async def _run(w):  # type: ignore[no-untyped-def]
    return await w.run()


class Server:
    """A ``batonflow serve`` subprocess serving StepsFlow; stderr to a file."""

    def __init__(self, db: str, tmp: Path, name: str, lease: float = 15.0) -> None:
        self.log = tmp / f"{name}.err"
        args = [
            sys.executable, "-m", "batonflow", "serve", "--port", "0", "--db", db,
            "--no-prebuilt", "--quiet", "-w", f"steps={FLOWS}:StepsFlow",
        ]  # fmt: skip
        if db.startswith("postgresql://"):
            args += ["--replica-id", name, "--lease-seconds", str(lease)]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen(
                args, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=err
            )
        deadline = time.monotonic() + 60
        while "batonflow server on " not in self.log.read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server {name} did not start: {self.log.read_text()}")
            time.sleep(0.05)
        self.url = self.log.read_text().split("batonflow server on ", 1)[1].split()[0]

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def runs_per_second(db: str, tmp: Path, replicas: int, runs: int, clients: int) -> float:
    """Completed 3-step durable runs per second, requests spread over the replicas."""
    from batonflow.client import Client

    servers = [Server(db, tmp, f"r{i}-{replicas}") for i in range(replicas)]
    log = tmp / f"rps-{replicas}.log"
    done: list[int] = []
    try:
        todo = iter(range(runs))
        lock = threading.Lock()

        def worker(k: int) -> None:
            with Client(servers[k % replicas].url, timeout=60) as client:
                while True:
                    with lock:
                        i = next(todo, None)
                    if i is None:
                        return
                    run = client.start("steps", log=str(log), n=i, pause=0.0, wait=True)
                    assert run.status == "completed", run
                    done.append(i)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
        began = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - began
    finally:
        for s in servers:
            s.stop()
    assert len(done) == runs
    return runs / elapsed


def failover_seconds(url: str, tmp: Path, lease: float) -> float:
    """Seconds from SIGKILL of the replica running a run to another replica running it."""
    from batonflow.client import Client

    a = Server(url, tmp, f"a-{lease}", lease)
    b = Server(url, tmp, f"b-{lease}", lease)
    log = tmp / f"failover-{lease}.log"
    try:
        with Client(a.url) as client:
            run = client.start("steps", log=str(log), pause=60.0)
        while not log.exists() or str(a.proc.pid) not in log.read_text():
            time.sleep(0.01)
        a.stop(signal.SIGKILL)
        killed = time.perf_counter()
        while str(b.proc.pid) not in log.read_text():
            time.sleep(0.01)
            if time.perf_counter() - killed > 10 * lease + 30:
                raise RuntimeError(f"run {run.run_id} was never taken over")
        return time.perf_counter() - killed
    finally:
        a.stop(signal.SIGKILL)
        b.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs and repeats")
    args = parser.parse_args()
    from pg_server import running_server

    runs = 60 if args.quick else 200
    with running_server() as server, tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        url = server.url()
        print("## Checkpoint cost per durable step (200-step chain, one process)\n")
        costs = checkpoint_cost(url, 200, 3 if args.quick else 5)
        base = costs["SQLite"]
        print("| store | µs per step | vs SQLite |\n|---|---:|---:|")
        for name, us in costs.items():
            print(f"| {name} | {us:,.0f} | {us / base:.2f}× |")

        print(f"\n## Runs per second over HTTP ({runs} runs of a 3-step durable flow, 8 clients)\n")
        rows = [("SQLite, 1 server", runs_per_second(str(tmp / "one.db"), tmp, 1, runs, 8))]
        for n in (1, 2, 3):
            rows.append((f"PostgreSQL, {n} replica(s)", runs_per_second(url, tmp, n, runs, 8)))
        print("| setup | runs/s | vs SQLite |\n|---|---:|---:|")
        for name, rps in rows:
            print(f"| {name} | {rps:,.1f} | {rps / rows[0][1]:.2f}× |")

        print("\n## Failover: SIGKILL to the run's step running again on another replica\n")
        print("| lease | seconds | / lease |\n|---:|---:|---:|")
        for lease in (1.0, 2.0, 4.0) if not args.quick else (1.0, 2.0):
            took = statistics.median(failover_seconds(url, tmp, lease) for _ in range(2))
            print(f"| {lease:g} s | {took:.2f} | {took / lease:.2f} |")


if __name__ == "__main__":
    main()
