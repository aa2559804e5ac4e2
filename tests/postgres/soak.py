"""The soak: three replicas under load while faults hit them and PostgreSQL, then the checks.

:func:`run_soak` starts its own throw-away PostgreSQL server (it restarts and kills it), three
``batonflow serve`` replicas serving ``StepsFlow`` with a short lease, the load of
``soak_load.py`` (runs started on random replicas, the waiting ones answered, a share followed
over SSE with reconnects) and the fault injector of ``soak_faults.py``, for
``config.seconds``. Then faults and new runs stop, every replica is made to run again, the
soak waits until no run is ``running`` or ``waiting`` (or ``config.settle`` passes) and a few
leases more, so that a late replica would have done its damage, and checks the invariants of
``soak_checks.py``. It returns a :class:`SoakReport`: the figures and the violations.

The seed (printed first) fixes the faults, their timing and the runs' inputs; the threads'
interleaving is the machine's, so a second run with the same seed is alike, not identical.
Everything listens on and talks to 127.0.0.1, and every process is stopped and the server
removed on the way out, also when the soak fails.

Used by ``test_pg_soak.py`` and ``bench/soak.py``.
"""

from __future__ import annotations

import random
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from pg_server import running_server, start_server
from soak_checks import check, read_database, read_step_log
from soak_faults import FaultInjector, ReplicaPool
from soak_load import Load
from soak_records import FAULT_KINDS, Fault, Ledger, Violation


@dataclass(frozen=True)
class SoakConfig:
    """How long and how hard to soak.

    Attributes:
        seconds: How long faults and new runs go on.
        seed: The random seed (``None``: a fresh one, printed).
        replicas: How many replicas run at once.
        lease: The replicas' ``--lease-seconds``.
        gap: Seconds between two faults (a random value in this range).
        faults: The fault kinds to choose from.
        max_in_flight: Runs in progress at most (started in the last minute, not ended).
        starters: Threads starting runs.
        readers: Threads following runs over SSE.
        settle: Seconds the runs get to end after the faults stop.
    """

    seconds: float = 60.0
    seed: int | None = None
    replicas: int = 3
    lease: float = 2.0
    gap: tuple[float, float] = (3.0, 8.0)
    faults: tuple[str, ...] = FAULT_KINDS
    max_in_flight: int = 20
    starters: int = 2
    readers: int = 3
    settle: float = 120.0

    def __post_init__(self) -> None:
        unknown = sorted(set(self.faults) - set(FAULT_KINDS))
        if unknown:
            raise ValueError(
                f"Unknown soak fault(s) {unknown}; choose from {', '.join(FAULT_KINDS)}."
            )
        if self.seconds <= 0 or self.lease <= 0 or self.replicas < 2:
            raise ValueError(
                f"A soak needs seconds > 0, lease > 0 and at least 2 replicas; got "
                f"seconds={self.seconds}, lease={self.lease}, replicas={self.replicas}."
            )


@dataclass
class SoakReport:
    """What a soak did and found."""

    seed: int
    seconds: float
    began: float = 0.0  # time.time() at the start of the load
    figures: dict[str, str] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tails: dict[str, str] = field(default_factory=dict)  # log name -> its last lines
    errors: dict[str, str] = field(default_factory=dict)  # error id of a 500 -> its traceback

    #: The columns of :meth:`row`, the soak table of docs/durability.md.
    ROW_HEADER = (
        "| Date, commit | Soak | Seed | Runs started / completed right | Answers accepted "
        "| Faults: stall / term / kill / pg restart / pg kill | Takeovers "
        "| Start to end, median / max | 503s / client retries | SSE runs followed / reconnects "
        "| Violations |\n|---|---|---|---|---|---|---|---|---|---|---|"
    )

    def row(self, date: str, commit: str) -> str:
        """This soak as one row of the table under :attr:`ROW_HEADER`."""
        f = self.figures
        return (
            f"| {date}, `{commit}` | {self.seconds:g} s, 3 replicas | {self.seed} "
            f"| {f['runs started / completed right']} | {f['answers accepted']} "
            f"| {f['faults: stall / term / kill / pg restart / pg kill']} "
            f"| {f['takeovers (replica log lines)']} "
            f"| {f['start to end seen by a client, median / max']} "
            f"| {f['503 answers / client retries']} | {f['SSE runs followed / reconnects']} "
            f"| {f['violations']} |"
        )

    def markdown(self) -> str:
        """The figures as a Markdown table (what docs/durability.md quotes)."""
        rows = [
            "| Figure | Value |",
            "|---|---|",
            *(f"| {k} | {v} |" for k, v in self.figures.items()),
        ]
        return "\n".join(rows)

    def failure_message(self, examples: int = 5, logs: int = 4) -> str:
        """The violations by invariant (a few examples each) and the logs that tell more."""
        by_kind: dict[str, list[Violation]] = {}
        for violation in self.violations:
            by_kind.setdefault(violation.invariant, []).append(violation)
        lines = [
            f"The soak (seed {self.seed}, {self.seconds:g} s; rerun with "
            f"BATONFLOW_SOAK_SEED={self.seed}) broke {len(by_kind)} invariant(s):"
        ]
        shown: list[str] = []
        for invariant, found in sorted(by_kind.items()):
            runs = len({v.run_id for v in found if v.run_id})
            lines.append(f"\n## {invariant}: {len(found)} time(s), {runs} run(s)")
            for violation in found[:examples]:
                lines.append(f"- run {violation.run_id or '-'}: {violation.detail}")
                shown.extend(violation.logs)
                error = _ERROR_ID.search(violation.detail)
                if error is not None and error.group(1) in self.errors:
                    lines.append(_indent(self.errors[error.group(1)]))
        lines.append("\n## faults (seconds since the load began)")
        lines.extend(
            f"- +{f.started - self.began:.1f} s to +{f.ended - self.began:.1f} s: {f.kind} "
            f"{f.target} (pid {f.pid}) {f.detail}"
            for f in self.faults
        )
        for name in list(dict.fromkeys(shown))[:logs]:
            lines.append(f"\n## the end of {name}\n{self.tails.get(name, '(no log)')}")
        lines.append("\n## figures\n" + self.markdown())
        return "\n".join(lines)


def run_soak(config: SoakConfig, folder: Path, say: Callable[[str], None] = print) -> SoakReport:
    """Run the soak in ``folder`` (logs stay there) and return its report.

    Raises:
        AssertionError: The first replicas did not start (their logs are in the message).
    """
    seed = config.seed if config.seed is not None else random.SystemRandom().randrange(10**6)
    say(f"soak: seed {seed}, {config.seconds:g} s, lease {config.lease:g} s, logs in {folder}")
    ledger = Ledger()
    step_log = folder / "steps.log"
    # A commit must survive the postmaster's SIGKILL, as it would in production.
    with running_server(synchronous_commit=True) as server:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute('CREATE DATABASE "soak"')
        pool = ReplicaPool(server.url("soak"), folder, config.lease, config.replicas, ledger)
        load: Load | None = None
        injector: FaultInjector | None = None
        try:
            for slot in range(config.replicas):
                if pool.start(slot, f"r{slot + 1}") is None:
                    raise AssertionError(f"replica r{slot + 1} did not start: {ledger.notes}")
            began = time.monotonic()
            t0 = time.time()
            until = began + config.seconds
            load = Load(
                pool,
                ledger,
                seed,
                step_log,
                until,
                max_in_flight=config.max_in_flight,
                starters=config.starters,
                readers=config.readers,
            )
            injector = FaultInjector(
                server, pool, ledger, random.Random(seed), until, config.gap, config.faults
            )
            load.start()
            injector.start()
            injector.join(config.seconds + 600)
            if injector.is_alive():
                ledger.violate("harness", None, "the fault injector outlived its deadline")
                injector.halt.set()
                injector.join(60)
            say(f"soak: faults over after {time.monotonic() - began:.0f} s; settling")
            if server.postmaster_pid() is None:
                start_server(server)
            settled = _settle(server.url("soak"), pool, config.settle)
            if not settled:
                ledger.note(f"runs were still in progress {config.settle:g} s after the faults")
            _idle(pool, 3 * config.lease)  # a late replica's writes would land now
            load.stop()
            with psycopg.connect(server.url("soak"), autocommit=True) as conn:
                runs = read_database(conn)
            steps = read_step_log(step_log)
            pool.supervise()
        finally:
            if injector is not None:
                injector.halt.set()
                injector.join(60)
            if load is not None:
                load.halt.set()
            pool.stop_all()
            if load is not None:
                load.stop(10)
            if server.postmaster_pid() is None:
                start_server(server)  # so that running_server stops it cleanly
        log_of_pid = {r.pid: r.log.name for r in pool.all}
        violations = [*ledger.violations, *check(runs, steps, ledger, log_of_pid, t0)]
        report = SoakReport(seed, config.seconds, t0, violations=violations, notes=ledger.notes)
        report.faults = list(ledger.faults)
        report.errors = _tracebacks(pool)
        report.figures = _figures(config, seed, ledger, runs, steps, pool, violations)
        report.tails = {r.log.name: r.tail(25) for r in pool.all}
        report.tails["postgres"] = server.log_tail(3000)
    say(f"soak: {len(violations)} violation(s)")
    return report


#: The error id a 500 answer names (the replica logs its traceback under it).
_ERROR_ID = re.compile(r'"error_id":"([0-9a-f]+)"')


def _tracebacks(pool: ReplicaPool) -> dict[str, str]:
    """Error id -> the last lines of the traceback a replica logged under it."""
    found = {}
    for replica in pool.all:
        text = replica.log.read_text(errors="replace") if replica.log.exists() else ""
        for part in text.split("Unhandled error ")[1:]:
            error_id = part.split(" ", 1)[0]
            lines = [
                line for line in part.splitlines()[:400] if line.strip(" \t^~")
            ]  # no blank lines, nor the lines of carets under a frame
            found[error_id] = "\n".join([lines[0], *_last_frames(lines)])
    return found


def _last_frames(lines: list[str], frames: int = 6) -> list[str]:
    """The last frames and the exception line of the (last chained) traceback in ``lines``."""
    chained = ("The above exception", "During handling")
    for i in range(2, len(lines)):
        if lines[i].startswith((" ", "\t")) or not lines[i - 1].startswith((" ", "\t")):
            continue
        if i + 1 < len(lines) and lines[i + 1].startswith(chained):
            continue
        return lines[max(1, i - frames) : i + 1]
    return lines[1 : frames + 1]


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def _settle(db_url: str, pool: ReplicaPool, seconds: float) -> bool:
    """Keep the replicas up until no run is in progress; whether that happened in time."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pool.supervise()
        try:
            with psycopg.connect(db_url, autocommit=True, connect_timeout=5) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM checkpoint_runs WHERE status IN ('running', 'waiting')"
                ).fetchone()
        except psycopg.OperationalError:
            row = None
        if row is not None and row[0] == 0:
            return True
        time.sleep(1.0)
    return False


def _idle(pool: ReplicaPool, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pool.supervise()
        time.sleep(0.5)


def _figures(
    config: SoakConfig,
    seed: int,
    ledger: Ledger,
    runs: dict,
    steps: dict,
    pool: ReplicaPool,
    violations: list[Violation],
) -> dict[str, str]:
    counts = ledger.counts
    durations = sorted(
        r.ended_at - r.started_at for r in ledger.runs.values() if r.ended_at is not None
    )
    completed = sum(r.status == "completed" for r in runs.values())
    wrong = {v.run_id for v in violations if v.run_id is not None}
    right = sum(r.status == "completed" and r.run_id not in wrong for r in runs.values())
    faults = {kind: sum(f.kind == kind for f in ledger.faults) for kind in FAULT_KINDS}
    answers = [a for found in ledger.answers.values() for a in found]
    readings = list(ledger.readings.values())
    logs = [r.log.read_text(errors="replace") if r.log.exists() else "" for r in pool.all]
    executions = sum(len(e) for e in steps.values())
    distinct = sum(len({x.step for x in e}) for e in steps.values())
    by_invariant: dict[str, int] = {}
    for v in violations:
        by_invariant[v.invariant] = by_invariant.get(v.invariant, 0) + 1
    return {
        "seed": str(seed),
        "duration of faults and load": f"{config.seconds:g} s (lease {config.lease:g} s)",
        "replicas started (processes) / starts refused": (
            f"{len(pool.all)} / {counts['replica starts refused']}"
        ),
        "runs started / completed right": f"{len(runs)} / {right}",
        "runs started with a 202 / recorded / completed": (
            f"{counts['runs started']} / {len(runs)} / {completed}"
        ),
        "runs that asked for an answer": str(sum(bool(r.start.get("ask")) for r in runs.values())),
        "answers accepted": str(sum(a.accepted for a in answers)),
        "answers posted / accepted (2xx) / refused (409)": (
            f"{len(answers)} / {sum(a.accepted for a in answers)} / "
            f"{sum(a.code == 409 for a in answers)}"
        ),
        "faults: stall / term / kill / pg restart / pg kill": " / ".join(
            str(faults[k]) for k in FAULT_KINDS
        ),
        "takeovers (replica log lines)": str(sum(t.count("takes over run") for t in logs)),
        "start to end seen by a client, median / max": (
            f"{statistics.median(durations):.1f} s / {durations[-1]:.1f} s" if durations else "-"
        ),
        "HTTP requests": str(counts["requests"]),
        "503 answers / client retries": f"{counts['503 answers']} / {counts['client retries']}",
        "connection errors and timeouts": str(counts["connection errors and timeouts"]),
        "SSE runs followed / reconnects": (
            f"{len(readings)} / {sum(r.reconnects for r in readings)}"
        ),
        "SSE reconnects after": ", ".join(
            f"{why} {n}" for why, n in Counter(b for r in readings for b in r.breaks).most_common()
        )
        or "-",
        "SSE runs followed to the end / events seen": (
            f"{sum(r.finished for r in readings)} / {sum(len(r.seen) for r in readings)}"
        ),
        "step executions / repeated": f"{executions} / {executions - distinct}",
        "violations": ", ".join(f"{k} {n}" for k, n in sorted(by_invariant.items())) or "none",
    }
