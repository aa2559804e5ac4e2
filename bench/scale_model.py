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
* ``crowd``: N small replicas against one server whose ``max_connections`` is low (each replica
  opens up to 9: a pool of 8 and its ``LISTEN``): how many start, the HTTP statuses of 64
  clients' runs spread over them, runs/s, and the "too many clients" lines in their logs.

The machine is shared and has 2 cores: read ratios and ranges within one run, not absolute
figures.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import statistics
import subprocess
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

from _pg_wire import WireProxy  # noqa: E402
from http_compare import _cpu_seconds, _postgres_pids, _wait_listening  # noqa: E402

FLOWS = HERE / "_scale_flows.py"
HTTP_FLOWS = HERE / "_http_flows.py"
#: The replicas' log line that says they listen.
READY = "batonflow server on "


class Replica:
    """A ``batonflow serve`` subprocess on ``db`` serving chain, ask and steps."""

    def __init__(self, db: str, tmp: Path, name: str, lease: float = 15.0) -> None:
        self.name = name
        self.log = tmp / f"{name}.err"
        args = [
            sys.executable, "-m", "batonflow", "serve", "--port", "0", "--db", db,
            "--no-prebuilt", "--quiet", "--replica-id", name, "--lease-seconds", str(lease),
            "-w", f"chain={FLOWS}:Chain", "-w", f"ask={FLOWS}:Ask",
            "-w", f"steps={HTTP_FLOWS}:ThreeSteps",
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen(
                args, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=err
            )
        self.address: tuple[str, int] | None = None

    def ready(self) -> bool:
        """Wait until it listens (True) or exited (False)."""
        try:
            self.address = _wait_listening(self.proc, READY, self.log)
        except RuntimeError:
            return False
        return True

    @property
    def url(self) -> str:
        assert self.address is not None
        return f"http://{self.address[0]}:{self.address[1]}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _database(server: Any) -> tuple[str, str]:
    import psycopg

    name = "s_" + uuid.uuid4().hex[:10]
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name, server.url(name)


def _drop(server: Any, name: str) -> None:
    import psycopg

    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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
NOTIFY_WAITS = (
    "SELECT count(*) FROM pg_locks WHERE locktype = 'object' AND NOT granted "
    "AND classid = 'pg_database'::regclass AND objid = 0"
)


class Sampler(threading.Thread):
    """Samples what PostgreSQL's active backends wait for, every ``every`` seconds."""

    def __init__(self, url: str, every: float = 0.02) -> None:
        import psycopg

        super().__init__(daemon=True)
        self.conn = psycopg.connect(url, autocommit=True)  # before the replicas take the slots
        self.every = every
        self.states: collections.Counter[str] = collections.Counter()
        self.samples = 0
        self.most_backends = 0
        self.notify_waits = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        query = (
            "SELECT state, wait_event_type, wait_event FROM pg_stat_activity "
            "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        while not self.stopping.is_set():
            rows = self.conn.execute(query).fetchall()
            # Which object lock the Lock:object waits are for: NOTIFY's at commit is the
            # one on database 0 of pg_database (async.c: "Serialize writers...").
            self.notify_waits += self.conn.execute(NOTIFY_WAITS).fetchone()[0]
            self.samples += 1
            self.most_backends = max(self.most_backends, len(rows))
            for state, kind, event in rows:
                if state == "active":
                    self.states["running (CPU)" if kind is None else f"{kind}:{event}"] += 1
                elif state == "idle in transaction":
                    self.states["idle in transaction"] += 1
            time.sleep(self.every)

    def stop(self) -> dict[str, Any]:
        self.stopping.set()
        self.join(5)
        self.conn.close()
        n = max(self.samples, 1)
        return {
            "active": {k: v / n for k, v in self.states.most_common()},
            "most_backends": self.most_backends,
            "notify_lock_waits": self.notify_waits / n,
        }


async def _client(address: tuple[str, int], path: str, body: Any, out: dict[str, Any]) -> None:
    host, port = address
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while out["left"] > 0:
            out["left"] -= 1
            i = out["left"]
            payload = json.dumps(body(i)).encode()
            writer.write(
                f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
            raw = await reader.readuntil(b"\r\n\r\n")
            status = int(raw.split(b" ", 2)[1])
            length = 0
            for line in raw.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            data = json.loads(await reader.readexactly(length))
            ok = status == 200 and data.get("status") == "completed" and data["result"] == i + 1
            out["status"][status if ok or status != 200 else "200, wrong result"] += 1
            if not ok and len(out["errors"]) < 3:
                out["errors"].append(f"HTTP {status}: {json.dumps(data)[:300]}")
            out["ended"].append(time.monotonic())
    except (OSError, asyncio.IncompleteReadError) as exc:
        out["status"][f"connection: {type(exc).__name__}"] += 1
    finally:
        writer.close()


def load(addresses: list[tuple[str, int]], flow: str, body: Any, clients: int, runs: int) -> Any:
    """``runs`` runs of ``flow`` by ``clients`` clients spread over ``addresses``: the HTTP
    statuses, a few errors, and runs/s after the first wave (one run per client)."""
    out: dict[str, Any] = {
        "left": runs,
        "ended": [],
        "status": collections.Counter(),
        "errors": [],
    }
    path = f"/workflows/{flow}/runs?wait=true&timeout=120"

    async def main() -> None:
        await asyncio.gather(
            *(_client(addresses[k % len(addresses)], path, body, out) for k in range(clients))
        )

    began = time.monotonic()
    asyncio.run(main())
    ended = sorted(out["ended"])
    rate = 0.0
    if len(ended) > clients:
        rate = (len(ended) - clients) / max(ended[-1] - ended[clients - 1], 1e-9)
    out["runs_per_s"] = rate
    out["seconds"] = time.monotonic() - began
    return out


WORKLOADS = {
    # name: (flow, start fields of run i, durable steps per run)
    "3-step runs": ("steps", lambda i: {"n": i}, 3),
    "20-step chains": ("chain", lambda i: {"steps": 20, "n": i}, 20),
}


def throughput(server: Any, tmp: Path, replicas: int, workload: str, clients: int) -> dict:
    """One figure: fresh database and replicas, the load, CPU and samples."""
    flow, body, steps = WORKLOADS[workload]
    name, url = _database(server)
    group = [Replica(url, tmp, f"t{replicas}-{k}-{uuid.uuid4().hex[:4]}") for k in range(replicas)]
    try:
        if not all(r.ready() for r in group):
            raise RuntimeError("a replica did not start")
        pids = [r.proc.pid for r in group]
        pg0 = {pid: _cpu_seconds([pid]) for pid in _postgres_pids(server.datadir)}
        own0 = _cpu_seconds(pids)
        sampler = Sampler(server.url(name))
        sampler.start()
        runs = clients * 6
        got = load([r.address for r in group], flow, body, clients, runs)  # type: ignore[misc]
        seen = sampler.stop()
        own = _cpu_seconds(pids) - own0
        pg = sum(_cpu_seconds([p]) - pg0.get(p, 0.0) for p in _postgres_pids(server.datadir))
        done = sum(n for s, n in got["status"].items() if s == 200)
        if done != runs:
            raise RuntimeError(f"{workload}: {got['status']} {got['errors']}")
    finally:
        for r in group:
            r.stop()
        _drop(server, name)
    return {
        "runs_per_s": got["runs_per_s"],
        "steps_per_s": got["runs_per_s"] * steps,
        "replica_ms_per_run": own / runs * 1000,
        "pg_ms_per_run": pg / runs * 1000,
        "load": os.getloadavg()[0],
        **seen,
    }


def print_throughput(figs: dict[tuple[str, int], list[dict]], replicas: list[int]) -> None:
    for workload in WORKLOADS:
        rows = [(n, figs.get((workload, n), [])) for n in replicas]
        if not any(f for _, f in rows):
            continue
        base = statistics.median(f["runs_per_s"] for f in rows[0][1]) if rows[0][1] else None
        print(f"\n### {workload} (median of the rounds; range in brackets)\n")
        print(
            "| replicas | runs/s | durable steps/s | vs 1 replica | CPU ms/run: replicas "
            "| PostgreSQL | most backends | load |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
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
    args = parser.parse_args()
    from pg_server import running_server

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
                    figs: dict[tuple[str, int], list[dict]] = {}
                    for r in range(args.rounds):
                        for workload in WORKLOADS:
                            order = counts[r % len(counts) :] + counts[: r % len(counts)]
                            for n in order:
                                fig = throughput(server, tmp, n, workload, args.clients)
                                figs.setdefault((workload, n), []).append(fig)
                                print(
                                    f"round {r + 1} {workload} {n} replica(s): "
                                    f"{fig['runs_per_s']:.1f} runs/s, "
                                    f"{fig['steps_per_s']:.0f} steps/s, load {fig['load']:.1f}",
                                    file=sys.stderr,
                                    flush=True,
                                )
                    everything["throughput"] = {f"{w} / {n}": f for (w, n), f in figs.items()}
                    print_throughput(figs, counts)
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
