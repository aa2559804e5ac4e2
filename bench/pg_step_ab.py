"""CPU of one durable step on PostgreSQL (client and server), two versions side by side.

Usage::

    sh bench/before_tree.sh 33454b7 /tmp/before
    .venv/bin/python bench/pg_step_ab.py --before /tmp/before/pkg --rounds 7

Each round runs, for each version in turn (the current code, then ``--before``'s; the order
alternates round by round), a fresh subprocess that runs a durable 1,000-step chain on a fresh
database of a throw-away PostgreSQL server (``tests/pg_server.py``) and reports its CPU
seconds; the server's CPU over the same time is read from ``/proc``. The table shows the
medians per step (client, server, both) and the ratio of the current code to the old.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

CHILD = r"""
import asyncio, json, resource, sys, time
from batonflow.core import Event, StartEvent, StopEvent, Workflow, step
from batonflow.core.stores import open_store

STEPS = int(sys.argv[2])


class Tick(Event):
    n: int


class Chain(Workflow):
    @step
    async def begin(self, ev: StartEvent) -> Tick:
        return Tick(n=0)

    @step
    async def loop(self, ev: Tick) -> Tick | StopEvent:
        return StopEvent(result=ev.n) if ev.n + 1 >= STEPS else Tick(n=ev.n + 1)


async def run():
    return await flow.run()


store = open_store(sys.argv[1])
flow = Chain(timeout=None, checkpoint_store=store)
asyncio.run(run())  # warm-up: imports, prepared statements
print("ready", flush=True)
sys.stdin.readline()
usage = resource.getrusage(resource.RUSAGE_SELF)
cpu0 = usage.ru_utime + usage.ru_stime
began = time.perf_counter()
assert asyncio.run(run()) == STEPS - 1
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu": usage.ru_utime + usage.ru_stime - cpu0,
                  "wall": time.perf_counter() - began, "steps": STEPS + 1}), flush=True)
sys.stdin.readline()  # the parent reads the server's CPU while the connections are open
store.close()
"""


def _cluster_cpu(datadir: Path) -> dict[int, float]:
    """CPU seconds of each process of the cluster (the postmaster and its children)."""
    first = int((datadir / "postmaster.pid").read_text().split("\n", 1)[0])
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(first)], capture_output=True)
    tick = os.sysconf("SC_CLK_TCK")
    cpu = {}
    for pid in [first, *(int(p) for p in out.stdout.split())]:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
    return cpu


def one(server, tree: str, steps: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """One fresh process and database: (client, server) CPU seconds per step."""
    import psycopg

    name = "s_" + uuid.uuid4().hex[:10]
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if tree:
        env["PYTHONPATH"] = tree
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, server.url(name), str(steps)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "ready"
        pg0 = _cluster_cpu(server.datadir)
        child.stdin.write("go\n")
        child.stdin.flush()
        out = json.loads(child.stdout.readline())
        pg = sum(t - pg0.get(pid, 0.0) for pid, t in _cluster_cpu(server.datadir).items())
        child.stdin.write("bye\n")
        child.stdin.flush()
        child.wait(60)
    finally:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    n = out["steps"]
    return {"client": out["cpu"] / n, "server": pg / n, "wall": out["wall"] / n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="a tree made by bench/before_tree.sh")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    from pg_server import running_server

    versions = {"current": os.environ.get("PYTHONPATH", ""), "before": args.before}
    figures: dict[str, list[dict[str, float]]] = {v: [] for v in versions}
    with running_server() as server:
        for r in range(args.rounds):
            order = list(versions) if r % 2 == 0 else list(reversed(versions))
            for version in order:
                fig = one(server, versions[version], args.steps)
                figures[version].append(fig)
                print(
                    f"round {r + 1} {version:<8} client {fig['client'] * 1e6:6.0f} µs "
                    f"server {fig['server'] * 1e6:6.0f} µs wall {fig['wall'] * 1e6:6.0f} µs "
                    f"load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    print("\n| version | client CPU µs/step | server CPU µs/step | both | wall µs/step |")
    print("|---|---:|---:|---:|---:|")
    both = {}
    for version, figs in figures.items():
        client = statistics.median(f["client"] for f in figs) * 1e6
        srv = statistics.median(f["server"] for f in figs) * 1e6
        both[version] = statistics.median((f["client"] + f["server"]) for f in figs) * 1e6
        wall = statistics.median(f["wall"] for f in figs) * 1e6
        print(f"| {version} | {client:.0f} | {srv:.0f} | {both[version]:.0f} | {wall:.0f} |")
    pairs = [
        (a["client"] + a["server"]) / (b["client"] + b["server"])
        for a, b in zip(figures["current"], figures["before"], strict=True)
    ]
    print(
        f"\ncurrent / before, client + server CPU: {both['current'] / both['before']:.2f}× "
        f"(round by round: {', '.join(f'{p:.2f}' for p in pairs)})"
    )


if __name__ == "__main__":
    main()
