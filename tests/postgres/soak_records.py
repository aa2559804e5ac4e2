"""What the soak (``soak.py``) observes while it runs, kept in one thread-safe :class:`Ledger`.

Clients, SSE readers, the fault injector and the replica supervisor run in threads; each notes
what it did and saw here (runs it started, answers and their status codes, the events a reader
saw, faults, violations found on the spot), and the checks at the end read it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

#: Faults aimed at one replica (the others hit PostgreSQL).
REPLICA_FAULTS = ("stall", "term", "kill")
PG_FAULTS = ("pg_restart", "pg_kill")
FAULT_KINDS = (*REPLICA_FAULTS, *PG_FAULTS)


@dataclass
class StartedRun:
    """A run a client started and got ``202`` for."""

    run_id: str
    n: int
    ask: bool
    pause: float
    replica: str
    started_at: float  # time.time() when the 202 came
    ended_at: float | None = None  # when a client first saw it ended


@dataclass(frozen=True)
class Answer:
    """One answer posted to a run (retries of one attempt share its value)."""

    value: str
    code: int | None  # None: no answer came (the client gave up)
    replica: str
    at: float

    @property
    def accepted(self) -> bool:
        """Whether the server accepted it (2xx)."""
        return self.code is not None and 200 <= self.code < 300


@dataclass
class Reading:
    """What one SSE reader saw of one run, across its reconnects."""

    run_id: str
    seen: list[tuple[int, str]] = field(default_factory=list)  # (seq, kind)
    replicas: list[str] = field(default_factory=list)  # each connection's replica
    reconnects: int = 0
    breaks: list[str] = field(default_factory=list)  # why each connection ended early
    finished: bool = False
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Fault:
    """One fault the injector caused."""

    kind: str
    target: str  # the replica's log name, or "postgres"
    pid: int | None
    started: float
    ended: float
    detail: str = ""


@dataclass(frozen=True)
class Violation:
    """An invariant found broken: which, for which run, what exactly, whose logs tell more."""

    invariant: str
    run_id: str | None
    detail: str
    logs: tuple[str, ...] = ()  # log names of the replicas involved


class Ledger:
    """Everything the soak's threads noted, behind one lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: dict[str, StartedRun] = {}
        self.answers: dict[str, list[Answer]] = {}
        self.readings: dict[str, Reading] = {}
        self.faults: list[Fault] = []
        self.violations: list[Violation] = []
        self.counts: Counter[str] = Counter()
        self.notes: list[str] = []

    def count(self, what: str, n: int = 1) -> None:
        """Add ``n`` to the counter ``what``."""
        with self.lock:
            self.counts[what] += n

    def violate(
        self, invariant: str, run_id: str | None, detail: str, logs: tuple[str, ...] = ()
    ) -> None:
        """Note a broken invariant."""
        with self.lock:
            self.violations.append(Violation(invariant, run_id, detail, logs))

    def note(self, text: str) -> None:
        """Note something worth reading that breaks no invariant of the soak."""
        with self.lock:
            self.notes.append(text)

    def add_run(self, run: StartedRun) -> None:
        """Note a run started."""
        with self.lock:
            self.runs[run.run_id] = run

    def in_flight(self) -> list[StartedRun]:
        """The started runs nobody saw end yet."""
        with self.lock:
            return [r for r in self.runs.values() if r.ended_at is None]

    def ended(self, run_id: str) -> None:
        """Note that a client saw ``run_id`` ended (the first time counts)."""
        with self.lock:
            run = self.runs.get(run_id)
            if run is not None and run.ended_at is None:
                run.ended_at = time.time()

    def add_answer(self, run_id: str, answer: Answer) -> None:
        """Note an answer posted to ``run_id``."""
        with self.lock:
            self.answers.setdefault(run_id, []).append(answer)

    def accepted_answers(self, run_id: str) -> int:
        """How many answers to ``run_id`` were accepted so far."""
        with self.lock:
            return sum(a.accepted for a in self.answers.get(run_id, []))

    def add_fault(self, fault: Fault) -> None:
        """Note a fault caused."""
        with self.lock:
            self.faults.append(fault)
