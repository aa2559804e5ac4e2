"""The scale model of replicas on one PostgreSQL (issue 31): what a run costs the database,
how throughput moves with replicas, what saturates, and what many replicas do to a server
with few connections.

Usage::

    .venv/bin/python bench/scale_model.py                    # everything (~10 minutes)
    .venv/bin/python bench/scale_model.py --only trips       # round trips per start/step/answer
    .venv/bin/python bench/scale_model.py --only throughput --rounds 3 --replicas 1,2,4
    .venv/bin/python bench/scale_model.py --only crowd --crowd 8,16,32 --max-connections 40

Needs Debian's PostgreSQL server binaries: throw-away servers are started in temp dirs, as the
tests do (``tests/pg_server.py``: ``fsync=off``, ``synchronous_commit=off``). The replicas are
``batonflow serve`` subprocesses serving ``bench/_scale_flows.py`` and ``bench/_http_flows.py``.

* ``trips``: two replicas reach the server through a counting proxy (``bench/_pg_wire.py``)
  and every round trip is counted, labelled with its statement: a one-step run started with
  ``wait=true``, an 11-step one (the difference is ten steps), and a run that asks a question,
  answered on the *other* replica. Also the ``NOTIFY`` deliveries the replicas' listeners
  received. Leases of 600 s keep heartbeats out of the counts; the scheduler's look at its
  tables every 15 s is counted apart.
* ``throughput``: runs/s of the 3-step flow of ``http_compare.py`` and durable steps/s of a
  20-step chain, with 1, 2 and 4 replicas (64 clients spread over them, each posting runs with
  ``wait=true`` one after the other), the setups interleaved round by round, fresh processes
  and a fresh database for each figure. The CPU the replicas and PostgreSQL used per run, and
  what PostgreSQL's active backends were doing (``pg_stat_activity`` sampled every 20 ms:
  running, waiting for a client, for a lock...).
  With ``--replica-cpu 0.4`` each replica runs in a cgroup of its own holding it to 0.4 core
  (``bench/_cpu_quota.py``, as ``http_compare.py``): the table shows the cores each used and
  the share of scheduler periods its quota throttled it in.
* ``crowd``: N small replicas against one server whose ``max_connections`` is low (each replica
  opens up to 9: a pool of 8 and its ``LISTEN``): how many start, the HTTP statuses of 64
  clients' runs spread over them, runs/s, and the "too many clients" lines in their logs.

The machine is shared and has 2 cores: read ratios and ranges within one run, not absolute
figures.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from _cpu_quota import CpuQuota, QuotaUnavailable, end_on_sigterm  # noqa: E402
from _pg_wire import WireProxy  # noqa: E402
from _scale_load import Replica, Sampler, _database, _drop, load  # noqa: E402
from http_compare import _cpu_seconds, _postgres_pids  # noqa: E402

# -- round trips ----------------------------------------------------------------------------------

BACKGROUND = ("schedule", "cron")
#: Seconds for the notifications of a measurement's writes to reach the listeners.
SETTLE = 1.0


def _split(trips: collections.Counter[str]) -> tuple[collections.Counter[str], int]:
    """(the trips of the runs, the scheduler's)."""
    runs: collections.Counter[str] = collections.Counter()
    background = 0
    for label, n in trips.items():
        if any(word in label.lower() for word in BACKGROUND):
            background += n
        else:
            runs[label] = n
    return runs, background


def trips(server: Any, tmp: Path, runs: int) -> dict[str, Any]:
    """Round trips and notifications per start, step and answer, counted on the wire."""
    from batonflow.client import Client

    proxy = WireProxy(server.host, server.port)
    name, _ = _database(server)
    url = proxy.url(server.user, name)
    a, b = Replica(url, tmp, "trips-a", 600.0), Replica(url, tmp, "trips-b", 600.0)
    out: dict[str, Any] = {}
    try:
        if not (a.ready() and b.ready()):
            raise RuntimeError(a.log.read_text()[-2000:] + b.log.read_text()[-2000:])
        with Client(a.url, timeout=60) as ca, Client(b.url, timeout=60) as cb:
            for i in range(5):  # warm-up: prepared statements, pools grown
                ca.start("chain", steps=3, n=i, wait=True)

            def measure(label: str, once: Any) -> None:
                time.sleep(SETTLE)  # the notifications of what came before are delivered
                proxy.counts.reset()
                for i in range(runs):
                    once(i)
                time.sleep(SETTLE)  # ... and those of these runs
                counted, notes, conns = proxy.counts.snapshot()
                mine, background = _split(counted)
                out[label] = {
                    "trips": sum(mine.values()) / runs,
                    "notifications": notes / runs,
                    "connections": conns,
                    "scheduler_trips": background,
                    "by_statement": {k: v / runs for k, v in mine.most_common()},
                }

            def chain(steps: int) -> Any:
                def once(i: int) -> None:
                    run = ca.start("chain", steps=steps, n=i, wait=True)
                    assert run.status == "completed" and run.result == i + 1, run

                return once

            measure("run of 1 step", chain(1))
            measure("run of 11 steps", chain(11))

            def three(i: int) -> None:
                run = ca.start("steps", n=i, wait=True)
                assert run.status == "completed" and run.result == i + 1, run

            measure("3-step run of http_compare.py (a state key, a stream event)", three)

            asked: list[str] = []

            def ask(i: int) -> None:
                run = ca.start("ask")
                deadline = time.monotonic() + 30
                while ca.get(run.run_id).status != "waiting":
                    assert time.monotonic() < deadline, run
                    time.sleep(0.01)
                asked.append(run.run_id)

            def answer(i: int) -> None:
                run_id = asked[i]
                cb.answer(run_id, "yes")
                done = cb.wait(run_id, timeout=30)
                assert done.status == "completed" and done.result == "yes", done

            measure("ask: start until it waits (with the client's polls)", ask)
            measure("answer on the other replica until completed", answer)
    finally:
        a.stop()
        b.stop()
        _drop(server, name)
    return out


def print_trips(figures: dict[str, Any], runs: int) -> None:
    one = figures["run of 1 step"]
    eleven = figures["run of 11 steps"]
    step = (eleven["trips"] - one["trips"]) / 10
    step_notes = (eleven["notifications"] - one["notifications"]) / 10
    print(
        f"## Round trips to PostgreSQL (two replicas through a counting proxy, {runs} runs each)\n"
    )
    print("| what | round trips | NOTIFY deliveries (both listeners) |\n|---|---:|---:|")
    for label, fig in figures.items():
        print(f"| {label} | {fig['trips']:.2f} | {fig['notifications']:.2f} |")
    print(f"| a durable step (11-step run less 1-step run, / 10) | {step:.2f} | {step_notes:.2f} |")
    print(f"| a run's start and end (1-step run less a step) | {one['trips'] - step:.2f} | |")
    print()
    for label, fig in figures.items():
        print(f"{label}: per run, by statement (scheduler trips apart: {fig['scheduler_trips']})")
        for sql, n in fig["by_statement"].items():
            print(f"    {n:6.2f}  {sql}")
    print()


# -- throughput -----------------------------------------------------------------------------------


#: Backends waiting for the lock NOTIFY takes at commit (an object lock on database 0).
WORKLOADS = {
    # name: (flow, start fields of run i, durable steps per run)
    "3-step runs": ("steps", lambda i: {"n": i}, 3),
    "20-step chains": ("chain", lambda i: {"steps": 20, "n": i}, 20),
}


def throughput(
    server: Any,
    tmp: Path,
    replicas: int,
    workload: str,
    clients: int,
    code: Path | None = None,
    quota: CpuQuota | None = None,
) -> dict:
    """One figure: fresh database and replicas (of the batonflow in ``code``, when given; each
    in a CPU group of ``quota``, when given), the load, CPU and samples."""
    flow, body, steps = WORKLOADS[workload]
    name, url = _database(server)
    names = [f"t{replicas}-{k}-{uuid.uuid4().hex[:4]}" for k in range(replicas)]
    cgroups = [quota.group(n) for n in names] if quota else []
    group = [
        Replica(url, tmp, n, code=code, group=cgroups[k] if cgroups else None)
        for k, n in enumerate(names)
    ]
    try:
        if not all(r.ready() for r in group):
            raise RuntimeError("a replica did not start")
        pids = [r.proc.pid for r in group]
        pg0 = {pid: _cpu_seconds([pid]) for pid in _postgres_pids(server.datadir)}
        own0 = _cpu_seconds(pids)
        sampler = Sampler(server.url(name))
        sampler.start()
        runs = clients * 6
        me0 = time.process_time()  # the load generator's CPU (and the sampler's, small)
        got = load([r.address for r in group], flow, body, clients, runs)  # type: ignore[misc]
        seen = sampler.stop()
        me = time.process_time() - me0
        own = _cpu_seconds(pids) - own0
        pg = sum(_cpu_seconds([p]) - pg0.get(p, 0.0) for p in _postgres_pids(server.datadir))
        throttled = [g.throttling().share for g in cgroups]
        done = sum(n for s, n in got["status"].items() if s == 200)
        if done != runs:
            raise RuntimeError(f"{workload}: {got['status']} {got['errors']}")
    finally:
        for r in group:
            r.stop()
        for g in cgroups:
            g.remove()
        _drop(server, name)
    return {
        "runs_per_s": got["runs_per_s"],
        "steps_per_s": got["runs_per_s"] * steps,
        "replica_ms_per_run": own / runs * 1000,
        "pg_ms_per_run": pg / runs * 1000,
        "client_ms_per_run": me / runs * 1000,
        "cores": (own + pg + me) / got["seconds"],  # replicas, PostgreSQL and the load
        "cores_per_replica": own / got["seconds"] / replicas,
        "throttled": statistics.mean(throttled) if throttled else 0.0,
        "load": os.getloadavg()[0],
        **seen,
    }


def print_throughput(
    figs: dict[tuple[str, int], list[dict]], replicas: list[int], title: str = ""
) -> None:
    for workload in WORKLOADS:
        rows = [(n, figs.get((workload, n), [])) for n in replicas]
        if not any(f for _, f in rows):
            continue
        base = statistics.median(f["runs_per_s"] for f in rows[0][1]) if rows[0][1] else None
        print(f"\n### {workload}{title} (median of the rounds; range in brackets)\n")
        print(
            "| replicas | runs/s | durable steps/s | vs 1 replica | CPU ms/run: replicas "
            "| PostgreSQL | load generator | cores in use | cores per replica "
            "| periods throttled | most backends | load |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n, f in rows:
            if not f:
                continue
            rps = [x["runs_per_s"] for x in f]
            med = statistics.median(rps)
            rel = f"{med / base:.2f}×" if base else "—"
            print(
                f"| {n} | {med:.1f} [{min(rps):.1f}–{max(rps):.1f}] "
                f"| {statistics.median(x['steps_per_s'] for x in f):.0f} | {rel} "
                f"| {statistics.median(x['replica_ms_per_run'] for x in f):.2f} "
                f"| {statistics.median(x['pg_ms_per_run'] for x in f):.2f} "
                f"| {statistics.median(x['client_ms_per_run'] for x in f):.2f} "
                f"| {statistics.median(x['cores'] for x in f):.2f} "
                f"| {statistics.median(x.get('cores_per_replica', 0.0) for x in f):.2f} "
                f"| {statistics.median(x.get('throttled', 0.0) for x in f):.0%} "
                f"| {max(x['most_backends'] for x in f)} "
                f"| {statistics.median(x['load'] for x in f):.1f} |"
            )
        print("\nWhat PostgreSQL's client backends were doing (mean backends per sample):\n")
        for n, f in rows:
            if not f:
                continue
            keys = collections.Counter[str]()
            for x in f:
                keys.update(x["active"])
            parts = ", ".join(f"{k} {v / len(f):.2f}" for k, v in keys.most_common(6))
            notify = statistics.mean(x["notify_lock_waits"] for x in f)
            print(f"- {n} replica(s): {parts}; of them waiting for NOTIFY's lock: {notify:.2f}")


def print_model(figs: dict[tuple[str, int], list[dict]], replicas: int) -> None:
    """The CPU a step and a run's start and end cost (from the two workloads on
    ``replicas`` replicas), and the back-of-the-envelope of docs/deploy.md from them."""

    def med(workload: str, key: str) -> float:
        return statistics.median(f[key] for f in figs[(workload, replicas)])

    short, long = "3-step runs", "20-step chains"
    if (short, replicas) not in figs or (long, replicas) not in figs:
        return
    gap = WORKLOADS[long][2] - WORKLOADS[short][2]
    cpu = {}
    for side, key in (("replica", "replica_ms_per_run"), ("PostgreSQL", "pg_ms_per_run")):
        step = (med(long, key) - med(short, key)) / gap
        cpu[side] = (step, med(short, key) - WORKLOADS[short][2] * step)
    share = [
        med(w, "replica_ms_per_run") / (med(w, "replica_ms_per_run") + med(w, "pg_ms_per_run"))
        for w in (short, long)
    ]
    print(f"\n### CPU per step and per run ({replicas} replica(s), medians)\n")
    for side, (step, run) in cpu.items():
        print(f"- {side}: {step:.2f} ms per durable step, {run:.2f} ms per run's start and end")
    print(
        f"- the replicas' share of a run's CPU: {share[0]:.0%} (3-step), {share[1]:.0%} (20-step)"
    )
    steps_per_s = med(long, "steps_per_s")
    per_run = steps_per_s / WORKLOADS[long][2]
    print(
        f"- {steps_per_s:,.0f} steps/s: {per_run * med(long, 'replica_ms_per_run') / 1000:.2f} "
        f"core(s) of replica, {per_run * med(long, 'pg_ms_per_run') / 1000:.2f} of PostgreSQL"
    )
    print("\n### The back-of-the-envelope\n")
    shapes = [
        ("1 million runs a day, 10 steps, peak 10x the mean", 1e6 / 86400 * 10, 10),
        ("10,000 durable steps/s, runs of 20 steps", 10_000 / 20, 20),
    ]
    for label, runs_per_s, steps in shapes:
        trips = runs_per_s * (4 + steps)
        cores = {
            side: runs_per_s * (run + steps * step) / 1000 for side, (step, run) in cpu.items()
        }
        print(
            f"- {label}: {runs_per_s:,.1f} runs/s, {trips:,.0f} round trips/s, "
            f"{cores['replica']:.2f} replica cores, {cores['PostgreSQL']:.2f} PostgreSQL cores, "
            f"{2 * runs_per_s:,.0f} NOTIFY commits/s (+1 per stream event)"
        )


# -- NOTIFY at commit ------------------------------------------------------------------------------


def commits(url: str, writers: int, notify: bool, seconds: float) -> float:
    """Commits/s of ``writers`` connections each inserting a row per transaction, with a
    ``pg_notify`` in each transaction or without (nobody listens: the lock is taken anyway)."""
    import psycopg

    conns = [psycopg.connect(url, autocommit=True) for _ in range(writers)]
    conns[0].execute("CREATE TABLE IF NOT EXISTS bench_rows (id bigserial, body text)")
    sql = "INSERT INTO bench_rows (body) VALUES ('x')"
    if notify:
        sql = f"WITH w AS ({sql} RETURNING id) SELECT pg_notify('bench', id::text) FROM w"
    done = [0] * writers
    stop = time.monotonic() + seconds

    def write(k: int) -> None:
        conn = conns[k]
        while time.monotonic() < stop:
            conn.execute(sql)
            done[k] += 1

    threads = [threading.Thread(target=write, args=(k,)) for k in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for conn in conns:
        conn.close()
    return sum(done) / seconds


def notify_cost(server: Any, levels: list[int], rounds: int, seconds: float) -> dict:
    """Commits/s with and without NOTIFY, interleaved round by round."""
    name, url = _database(server)
    figures: dict[tuple[int, bool], list[float]] = {}
    try:
        for r in range(rounds):
            for writers in levels:
                for notify in (r % 2 == 0, r % 2 == 1):
                    rate = commits(url, writers, notify, seconds)
                    figures.setdefault((writers, notify), []).append(rate)
    finally:
        _drop(server, name)
    print("\n## Commits/s of one-row transactions, with and without a NOTIFY in each\n")
    print("| writers | without NOTIFY | with NOTIFY | with / without, round by round |")
    print("|---:|---:|---:|---|")
    for writers in levels:
        off, on = figures[(writers, False)], figures[(writers, True)]
        pairs = ", ".join(f"{a / b:.2f}" for a, b in zip(on, off, strict=True))
        print(
            f"| {writers} | {statistics.median(off):,.0f} | {statistics.median(on):,.0f} "
            f"| {pairs} |"
        )
    return {f"{w} {'notify' if n else 'plain'}": v for (w, n), v in figures.items()}


# -- a crowd of replicas --------------------------------------------------------------------------


def crowd(replicas: int, max_connections: int, tmp: Path, clients: int) -> dict[str, Any]:
    """``replicas`` replicas against a server of ``max_connections``; what happens."""
    from pg_server import running_server

    with running_server(max_connections=max_connections) as server:
        _, url = _database(server)
        sampler = Sampler(url)
        sampler.start()
        group = [Replica(url, tmp, f"c{replicas}-{k}") for k in range(replicas)]
        started = [r for r in group if r.ready()]
        failed = [r for r in group if r not in started]
        got: dict[str, Any] = {"status": {}, "errors": [], "runs_per_s": 0.0, "seconds": 0.0}
        if started:
            got = load([r.address for r in started], "steps", lambda i: {"n": i}, clients,
                       clients * 6)  # type: ignore[misc]  # fmt: skip
        alive = sum(r.proc.poll() is None for r in started)
        listening = sampler.conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'batonflow-listen%'"
        ).fetchone()[0]
        seen = sampler.stop()
        for r in group:
            r.stop()
        logs = [r.log.read_text(errors="replace") for r in group]
    full = sum(text.count("too many clients") for text in logs)
    why = sorted(
        {
            text.strip().splitlines()[-1][:240]
            for r, text in zip(group, logs, strict=True)
            if r in failed
        }
    )
    return {
        "started": len(started),
        "failed": len(failed),
        "alive_after": alive,
        "listening": listening,
        "status": {str(k): v for k, v in got["status"].items()},
        "errors": got["errors"],
        "runs_per_s": got["runs_per_s"],
        "seconds": got["seconds"],
        "too_many_lines": full,
        "why_failed": why,
        "most_backends": seen["most_backends"],
    }


# -- the driver -----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="trips,notify,throughput,crowd")
    parser.add_argument("--writers", default="1,8,32", help="connections of the notify test")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--replicas", default="1,2,4")
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--trip-runs", type=int, default=30)
    parser.add_argument("--crowd", default="8,16,32", help="replica counts of the crowd")
    parser.add_argument("--max-connections", type=int, default=40)
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument(
        "--before",
        type=Path,
        help="throughput: also measure replicas running the batonflow whose src folder is "
        "here (e.g. an older commit's, from git archive), interleaved with this one's",
    )
    parser.add_argument(
        "--replica-cpu",
        type=float,
        default=0.0,
        help="throughput: hold each replica to this many cores (a cgroup each; needs root "
        "and a writable cgroup cpu controller), e.g. 0.4",
    )
    args = parser.parse_args()
    from pg_server import running_server

    quota = None
    if args.replica_cpu:
        try:
            quota = CpuQuota(args.replica_cpu)
            quota.group("probe").remove()  # fail now, not after the PostgreSQL server started
        except QuotaUnavailable as exc:
            parser.error(str(exc))
        end_on_sigterm()
    only = args.only.split(",")
    everything: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        if {"trips", "notify", "throughput"} & set(only):
            with running_server() as server:
                if "trips" in only:
                    figures = trips(server, tmp, args.trip_runs)
                    everything["trips"] = figures
                    print_trips(figures, args.trip_runs)
                if "notify" in only:
                    levels = [int(w) for w in args.writers.split(",")]
                    everything["notify"] = notify_cost(server, levels, args.rounds, 3.0)
                if "throughput" in only:
                    counts = [int(n) for n in args.replicas.split(",")]
                    codes: dict[str, Path | None] = {"": None}
                    if args.before is not None:
                        codes = {" (before)": args.before, " (this tree)": None}
                    figs: dict[str, dict[tuple[str, int], list[dict]]] = {c: {} for c in codes}
                    for r in range(args.rounds):
                        for workload in WORKLOADS:
                            order = counts[r % len(counts) :] + counts[: r % len(counts)]
                            for n in order:
                                turn = list(codes.items())[:: -1 if r % 2 else 1]
                                for title, code in turn:
                                    fig = throughput(
                                        server, tmp, n, workload, args.clients, code, quota
                                    )
                                    figs[title].setdefault((workload, n), []).append(fig)
                                    print(
                                        f"round {r + 1} {workload}{title} {n} replica(s): "
                                        f"{fig['runs_per_s']:.1f} runs/s, "
                                        f"{fig['steps_per_s']:.0f} steps/s, "
                                        f"load {fig['load']:.1f}",
                                        file=sys.stderr,
                                        flush=True,
                                    )
                    everything["throughput"] = {
                        f"{w}{t} / {n}": f for t, fs in figs.items() for (w, n), f in fs.items()
                    }
                    for title in codes:
                        print_throughput(figs[title], counts, title)
                    print_model(figs[""] if "" in figs else figs[" (this tree)"], counts[0])
        if "crowd" in only:
            print(
                f"\n## A crowd of replicas on a server of max_connections={args.max_connections}"
                f" ({args.clients} clients, 3-step runs)\n"
            )
            print(
                "| replicas | started | alive after | listening after | runs/s | HTTP statuses "
                "| most backends | 'too many clients' log lines |"
            )
            print("|---:|---:|---:|---:|---:|---|---:|---:|")
            crowds = {}
            for n in (int(c) for c in args.crowd.split(",")):
                got = crowd(n, args.max_connections, tmp, args.clients)
                crowds[n] = got
                print(
                    f"| {n} | {got['started']} | {got['alive_after']} | {got['listening']} "
                    f"| {got['runs_per_s']:.1f} "
                    f"| {got['status']} | {got['most_backends']} | {got['too_many_lines']} |",
                    flush=True,
                )
            for n, got in crowds.items():
                for line in got["why_failed"] + got["errors"]:
                    print(f"  {n} replicas: {line}")
            everything["crowd"] = crowds
    if args.json:
        args.json.write_text(json.dumps(everything, indent=1, default=str))


if __name__ == "__main__":
    main()
