"""Runs per second over HTTP: batonflow on SQLite and on PostgreSQL (1 and 2 replicas), beside
llama-agents-server (its memory and PostgreSQL stores), at 64 and 256 concurrent clients.

Usage::

    .venv/bin/python bench/http_compare.py                       # 3 rounds, ~5 minutes
    .venv/bin/python bench/http_compare.py --rounds 1 --clients 64  # a quick look
    # with llama-agents-server, installed in a venv of its own (never batonflow's):
    python3 -m venv /tmp/llama-venv && /tmp/llama-venv/bin/pip install llama-agents-server
    .venv/bin/python bench/http_compare.py --llama-python /tmp/llama-venv/bin/python

Needs Debian's PostgreSQL server binaries: a throw-away server is started in a temp dir, as the
tests do (``tests/pg_server.py``). Each figure gets fresh server processes and a fresh database
(a new SQLite file, a new PostgreSQL database); the setups alternate within each round (the
rounds interleaved), and the table shows each setup's median over the rounds, so a ratio
compares figures measured side by side on the same (shared, noisy) machine.

The flow is ``bench/_http_flows.py``'s: three durable steps, one stream event. Each client
keeps one HTTP/1.1 connection and posts a run with ``wait=true`` after the other, until the
figure's runs (``--runs-per-client`` times the clients) are made; the runs per second are those
that ended after the first wave (one run per client: the servers warm up) over the time since. Every run's response is checked
(completed, result ``n + 1``) and, for batonflow, every run's event log in the database (the
stream event, the ``StopEvent``, the end). The load average and the CPU seconds the servers
and PostgreSQL used per run are printed too.

With ``--replica-cpu 0.4`` each server process (every replica, the SQLite server, and
llama-agents-server) runs in a cgroup of its own that holds it to 0.4 core (``bench/_cpu_quota.py``),
as a replica on a machine of its own is held to that machine's cores, and the table shows how
often each one's quota stopped it (the share of scheduler periods throttled) and the cores it
used: a 2-core machine then shows whether a second replica adds capacity, as long as the
replicas, PostgreSQL and the load generator stay under its 2 cores::

    sudo .venv/bin/python bench/http_compare.py --replica-cpu 0.4 --replicas 1,2 \\
        --only "batonflow PostgreSQL, 1 replica;batonflow PostgreSQL, 2 replicas"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _cpu_quota import CpuGroup, CpuQuota, QuotaUnavailable, end_on_sigterm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
FLOWS = ROOT / "bench" / "_http_flows.py"
LLAMA = ROOT / "bench" / "_llama_server.py"
#: The kinds of a run's event log entries: the stream event, the StopEvent, the end.
EXPECTED_LOG = ["event", "event", "end"]
#: The suffix of the setups that run the code of ``--before``.
BEFORE = " (before)"


@dataclass
class Figure:
    """One setup's measurement in one round."""

    runs_per_s: float
    cpu_ms_per_run: float
    load: float
    runs: int = 0
    #: Of ``cpu_ms_per_run``: the servers' share (the rest is PostgreSQL's).
    server_ms_per_run: float = 0.0
    #: Under ``--replica-cpu``: the cores each server used on average over the load...
    cores_per_server: float = 0.0
    #: ... and the share of scheduler periods its quota throttled it in (the servers' mean).
    throttled: float = 0.0


@dataclass
class Target:
    """The servers of one figure and how a run is asked of them."""

    urls: list[tuple[str, int]]
    path: str
    body: Callable[[int], bytes]
    result: Callable[[dict[str, Any]], Any]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    #: The servers' CPU groups, under ``--replica-cpu`` (one each, removed after the figure).
    groups: list[CpuGroup] = field(default_factory=list)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of ``pids`` (those still alive)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _postgres_pids(datadir: Path) -> list[int]:
    """The postmaster and its children (backends, writers) of the bench's cluster."""
    first = int((datadir / "postmaster.pid").read_text().split("\n", 1)[0])
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(first)], capture_output=True)
    return [first, *(int(p) for p in out.stdout.split())]


def _start_batonflow(
    db: str, tmp: Path, name: str, before: str, group: CpuGroup | None = None
) -> subprocess.Popen[bytes]:
    args = [
        sys.executable, "-m", "batonflow", "serve", "--port", "0", "--db", db,
        "--no-prebuilt", "--quiet", "-w", f"steps={FLOWS}:ThreeSteps",
    ]  # fmt: skip
    if db.startswith("postgresql://"):
        args += ["--replica-id", name]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
    if before:
        env["PYTHONPATH"] = before  # the old code, ahead of the editable install
    log = tmp / f"{name}.err"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            args,
            cwd=tmp,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=group.enter() if group else None,
        )
    proc.log = log  # type: ignore[attr-defined]
    return proc


def _wait_listening(proc: subprocess.Popen[bytes], marker: str, log: Path) -> tuple[str, int]:
    deadline = time.monotonic() + 90
    while marker not in log.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"server did not start: {log.read_text()[-2000:]}")
        time.sleep(0.05)
    url = log.read_text().split(marker, 1)[1].split()[0]
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    return host, int(port.rstrip("/"))


def batonflow_target(
    db: str, tmp: Path, replicas: int, before: str = "", quota: CpuQuota | None = None
) -> Target:
    """``replicas`` ``batonflow serve`` processes on ``db`` (of the code in ``before``), each
    in a CPU group of ``quota`` when given."""
    names = [f"r{i}-{uuid.uuid4().hex[:6]}" for i in range(replicas)]
    groups = [quota.group(name) for name in names] if quota else []
    procs = [
        _start_batonflow(db, tmp, name, before, groups[i] if groups else None)
        for i, name in enumerate(names)
    ]
    try:
        urls = [_wait_listening(p, "batonflow server on ", p.log) for p in procs]  # type: ignore[attr-defined]
    except BaseException:
        for proc in procs:
            proc.kill()
            proc.wait()
        for group in groups:
            group.remove()
        raise
    return Target(
        urls,
        "/workflows/steps/runs?wait=true&timeout=120",
        lambda n: json.dumps({"n": n}).encode(),
        lambda body: body.get("result") if body.get("status") == "completed" else body,
        procs,
        groups,
    )


def llama_target(python: str, store: str, tmp: Path, quota: CpuQuota | None = None) -> Target:
    """One llama-agents-server process on ``store`` (``memory`` or a PostgreSQL URL)."""
    port = _free_port()
    log = tmp / f"llama-{port}.out"
    groups = [quota.group(f"llama-{port}")] if quota else []
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [python, str(LLAMA), "--port", str(port), "--store", store],
            cwd=tmp,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=groups[0].enter() if groups else None,
        )
    _wait_listening(proc, "llama-agents-server on ", log)
    deadline = time.monotonic() + 60
    while True:  # the line is printed before uvicorn binds
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"llama-agents-server did not start: {log.read_text()}"
                ) from None
            time.sleep(0.1)

    def result(body: dict[str, Any]) -> Any:
        if body.get("status") != "completed":
            return body
        return body["result"]["value"]["result"]

    return Target(
        [("127.0.0.1", port)],
        "/workflows/steps/run",
        lambda n: json.dumps({"start_event": {"n": n}}).encode(),
        result,
        [proc],
        groups,
    )


async def _client(target: Target, k: int, out: dict[str, Any]) -> None:
    host, port = target.urls[k % len(target.urls)]
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while out["left"] > 0:
            out["left"] -= 1
            i = k * 1_000_000 + out["left"]
            body = target.body(i)
            head = (
                f"POST {target.path} HTTP/1.1\r\nHost: {host}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            )
            writer.write(head.encode() + body)
            raw = await reader.readuntil(b"\r\n\r\n")
            status = int(raw.split(b" ", 2)[1])
            length = 0
            for line in raw.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            data = json.loads(await reader.readexactly(length))
            if status not in (200, 202) or target.result(data) != i + 1:
                raise RuntimeError(f"run {i}: HTTP {status}, {data}")
            out["ended"].append(time.monotonic())
            if "run_id" in data:
                out["ids"].append(data["run_id"])
    finally:
        writer.close()


async def _load(target: Target, clients: int, runs: int) -> tuple[int, float]:
    """``runs`` runs by ``clients`` clients; (runs counted, seconds): those that ended after
    the first ``clients`` (the first wave, with the servers' warm-up), over the time since."""
    out: dict[str, Any] = {"left": runs, "ended": [], "ids": []}
    await asyncio.gather(*(_client(target, k, out) for k in range(clients)))
    target.ids = out["ids"]  # type: ignore[attr-defined]
    ended = sorted(out["ended"])
    return len(ended) - clients, ended[-1] - ended[clients - 1]


def _check_logs(db: str, ids: list[str]) -> None:
    """Every run answered has its three log entries, in order, in the database."""
    query = "SELECT run_id, kind FROM run_events ORDER BY run_id, seq"
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as conn:
            rows = conn.execute(query).fetchall()
    else:
        with sqlite3.connect(db) as conn:
            rows = conn.execute(query).fetchall()
    logs: dict[str, list[str]] = {}
    for run_id, kind in rows:
        logs.setdefault(run_id, []).append(kind)
    bad = [i for i in ids if logs.get(i) != EXPECTED_LOG]
    if bad:
        raise RuntimeError(f"{len(bad)} run(s) with a wrong log, e.g. {bad[0]}: {logs.get(bad[0])}")


def measure(
    setup: str,
    server: Any,
    tmp: Path,
    clients: int,
    per_client: int,
    llama: str,
    before: str,
    quota: CpuQuota | None = None,
) -> Figure:
    """One figure: fresh processes and database, load, checks, teardown."""
    import psycopg

    db = ""
    dbname = ""
    if setup.startswith("batonflow SQLite"):
        db = str(tmp / f"{uuid.uuid4().hex[:8]}.db")
    else:
        dbname = "b_" + uuid.uuid4().hex[:10]
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{dbname}"')
        db = server.url(dbname)
    try:
        groups: list[CpuGroup] = []
        if setup.startswith("batonflow"):
            replicas = _replicas(setup)
            target = batonflow_target(db, tmp, replicas, before if BEFORE in setup else "", quota)
        else:
            target = llama_target(llama, "memory" if "memory" in setup else db, tmp, quota)
        groups = target.groups
        try:
            servers = [p.pid for p in target.procs]
            pg0 = _postgres_pids(server.datadir)
            own0 = _cpu_seconds(servers)
            before = {pid: _cpu_seconds([pid]) for pid in pg0}
            began = time.monotonic()
            counted, secs = asyncio.run(_load(target, clients, clients * per_client))
            wall = time.monotonic() - began
            # Everything (warm-up and tail included) over every run answered; a backend that
            # ended meanwhile is not counted (the servers' pools keep theirs).
            own = _cpu_seconds(servers) - own0
            throttled = [g.throttling().share for g in groups]
            pg_cpu = sum(
                _cpu_seconds([pid]) - before.get(pid, 0.0) for pid in _postgres_pids(server.datadir)
            )
            cpu = own + pg_cpu
            ids = target.ids  # type: ignore[attr-defined]
            if setup.startswith("batonflow"):
                _check_logs(db, ids)
            total = len(ids) or counted
        finally:
            for proc in target.procs:
                proc.terminate()
            for proc in target.procs:
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            for group in groups:
                group.remove()
    finally:
        if dbname:
            with psycopg.connect(server.url(), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
    per_run = 1000 / max(total, 1)
    return Figure(
        counted / secs,
        cpu * per_run,
        os.getloadavg()[0],
        total,
        own * per_run,
        own / wall / len(servers),
        statistics.mean(throttled) if throttled else 0.0,
    )


def _replicas(setup: str) -> int:
    """The number of replicas a setup's name says (``... PostgreSQL, 2 replicas``), else 1."""
    words = setup.split(", ", 1)[-1].split()
    return int(words[0]) if len(words) > 1 and words[0].isdigit() else 1


def _replica_setup(n: int) -> str:
    return f"batonflow PostgreSQL, {n} replica{'s' if n > 1 else ''}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default="64,256")
    parser.add_argument(
        "--runs-per-client", type=int, default=6, help="runs each client makes per figure"
    )
    parser.add_argument("--llama-python", default="", help="python of a llama-agents-server venv")
    parser.add_argument("--only", default="", help="setup names to measure, separated by ;")
    parser.add_argument(
        "--before",
        default="",
        help="a directory holding an older batonflow package (see bench/before_tree.sh): its "
        "batonflow setups are measured too, interleaved with the current code's",
    )
    parser.add_argument(
        "--replicas", default="1,2", help="the numbers of PostgreSQL replicas to measure"
    )
    parser.add_argument(
        "--replica-cpu",
        type=float,
        default=0.0,
        help="hold each server process to this many cores (a cgroup each; needs root and a "
        "writable cgroup cpu controller), e.g. 0.4",
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
    counts = [int(n) for n in args.replicas.split(",")]
    setups = ["batonflow SQLite", *(_replica_setup(n) for n in counts)]
    if args.llama_python:
        setups += ["llama-agents-server, memory", "llama-agents-server, PostgreSQL"]
    if args.before:
        setups += [s + BEFORE for s in setups if s.startswith("batonflow")]
    if args.only:
        wanted = [w.strip() for w in args.only.split(";")]
        setups = [s for s in setups if s in wanted]
    levels = [int(c) for c in args.clients.split(",")]
    figures: dict[tuple[str, int], list[Figure]] = {}
    with running_server() as server, tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for r in range(args.rounds):
            for clients in levels:
                # Each round starts with another setup, so none is always measured first.
                order = setups[r % len(setups) :] + setups[: r % len(setups)]
                for setup in order:
                    fig = measure(
                        setup,
                        server,
                        tmp,
                        clients,
                        args.runs_per_client,
                        args.llama_python,
                        args.before,
                        quota,
                    )
                    figures.setdefault((setup, clients), []).append(fig)
                    print(
                        f"round {r + 1} {clients:>3} clients {setup:<36} "
                        f"{fig.runs_per_s:7.1f} runs/s {fig.cpu_ms_per_run:6.2f} ms CPU/run "
                        f"(servers {fig.server_ms_per_run:.2f}) "
                        f"{fig.cores_per_server:.2f} cores/server "
                        f"throttled {fig.throttled:.0%} load {fig.load:.1f}",
                        flush=True,
                    )
    print()
    base_name = "batonflow SQLite"
    one = _replica_setup(1)
    if quota:
        print(f"Each server process held to {quota.cores} core (a cgroup each).")
    for clients in levels:
        print(f"\n### {clients} clients (median of {args.rounds} rounds)\n")
        print(
            "| setup | runs/s | vs batonflow SQLite | CPU ms/run (servers) | cores per server "
            "| periods throttled | load |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        med = {
            s: statistics.median(f.runs_per_s for f in figures[(s, clients)])
            for s in setups
            if (s, clients) in figures
        }
        for setup in setups:
            figs = figures.get((setup, clients))
            if not figs:
                continue
            base = med.get(base_name + (BEFORE if setup.endswith(BEFORE) else ""))
            ratio = f"{med[setup] / base:.2f}×" if base else "—"
            cpu = statistics.median(f.cpu_ms_per_run for f in figs)
            own = statistics.median(f.server_ms_per_run for f in figs)
            load = statistics.median(f.load for f in figs)
            cores = statistics.median(f.cores_per_server for f in figs)
            throttled = f"{statistics.median(f.throttled for f in figs):.0%}" if quota else "—"
            print(
                f"| {setup} | {med[setup]:.1f} | {ratio} | {cpu:.2f} ({own:.2f}) | {cores:.2f} "
                f"| {throttled} | {load:.1f} |"
            )
        for suffix in ("", BEFORE):
            many = [_replica_setup(n) + suffix for n in counts if n > 1]
            for name in many:
                if one + suffix in med and name in med:
                    pairs = [
                        a.runs_per_s / b.runs_per_s
                        for a, b in zip(
                            figures[(name, clients)], figures[(one + suffix, clients)], strict=True
                        )
                    ]
                    print(
                        f"\n{name} / 1 replica: {med[name] / med[one + suffix]:.2f}× "
                        f"(round by round {', '.join(f'{p:.2f}' for p in pairs)})"
                    )
            for name in (one + suffix, *many):
                pairs = [
                    a.runs_per_s / b.runs_per_s
                    for a, b in zip(
                        figures.get((name, clients), []),
                        figures.get((base_name + suffix, clients), []),
                        strict=False,
                    )
                ]
                if pairs:
                    print(
                        f"{name} / its SQLite, round by round: "
                        + ", ".join(f"{p:.2f}" for p in pairs)
                    )


if __name__ == "__main__":
    main()
