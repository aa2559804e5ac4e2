"""The soak's invariants, checked once faults have stopped and every run had time to end.

What is read: the database (every run's record and event log, also runs no client heard of
because the answer to their start was lost), ``StepsFlow``'s step log (who ran which step,
when) and the :class:`~soak_records.Ledger`. Each broken invariant becomes a
:class:`~soak_records.Violation` naming the run and what exactly is wrong:

* ``run completes once``: status ``completed``, with the right result (``value`` = 2 × ``n``,
  ``answer`` = ``"auto"``, or one of the answers sent to the run when it asked);
* ``log ends once``: exactly one ``end`` entry, the last one, saying ``completed`` with that
  result; sequence numbers 1..N;
* ``accepted answers count``: every answer accepted with ``2xx`` is the one the run used;
* ``SSE sees each event once``: each reader saw seq 1, 2, ... up to the ``end``, the same
  entries as the log, none twice, none skipped;
* ``steps run once``: a step ran twice only when a fault hit the first execution (a stall,
  SIGTERM or SIGKILL of its replica, or a PostgreSQL restart, after it began and before the
  next execution began), or the second is the code of a stalled replica that had the step in
  flight when it stopped and finished it when it woke;
* ``accepted starts are recorded``: a run a client got ``202`` for is in the database.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from soak_records import PG_FAULTS, REPLICA_FAULTS, Fault, Ledger, Reading, Violation

STEPS = ("work", "check", "finish")
#: Seconds after PostgreSQL is back during which a step may still fail on an old connection.
PG_GRACE = 1.0


@dataclass(frozen=True)
class StoredRun:
    """A run's row and log as the database holds them after the soak."""

    run_id: str
    status: str
    result: Any
    error: str | None
    start: dict[str, Any]
    lease_owner: str | None
    log: tuple[tuple[int, str, dict[str, Any]], ...]  # (seq, kind, body)


@dataclass(frozen=True)
class Execution:
    """One line of the step log."""

    step: str
    pid: int
    at: float


def read_database(conn: Any) -> dict[str, StoredRun]:
    """Every run of the soak's database with its event log (``conn``: a psycopg connection)."""
    logs: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}
    for run_id, seq, kind, body in conn.execute(
        "SELECT run_id, seq, kind, body FROM run_events ORDER BY run_id, seq"
    ):
        logs.setdefault(run_id, []).append((int(seq), kind, _json(body)))
    runs = {}
    for run_id, status, result, error, start, owner in conn.execute(
        "SELECT run_id, status, result, error, input, lease_owner FROM checkpoint_runs"
    ):
        runs[run_id] = StoredRun(
            run_id,
            status,
            _json(result),
            error,
            _json(start) or {},
            owner,
            tuple(logs.get(run_id, ())),
        )
    return runs


def read_step_log(path: Path) -> dict[str, list[Execution]]:
    """Run id -> the step executions ``StepsFlow`` noted, in time order."""
    found: dict[str, list[Execution]] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        run_id, step, pid, at = line.split()
        found.setdefault(run_id, []).append(Execution(step, int(pid), float(at)))
    for executions in found.values():
        executions.sort(key=lambda e: e.at)
    return found


def expected_result(run: StoredRun, answers_sent: Iterable[str]) -> str | None:
    """Why ``run``'s result is wrong, or ``None`` when it is the one its inputs call for."""
    result = run.result
    if not isinstance(result, dict):
        return f"result {result!r} is not a dict"
    if result.get("value") != 2 * int(run.start.get("n", 1)):
        return f"value {result.get('value')!r} != 2 × n = {2 * int(run.start.get('n', 1))}"
    sent = set(answers_sent)
    if run.start.get("ask"):
        if result.get("answer") not in sent:
            return f"answer {result.get('answer')!r} is none of the answers sent ({sorted(sent)})"
    elif result.get("answer") != "auto":
        return f"answer {result.get('answer')!r} != 'auto' (the run asked nothing)"
    return None


def check(
    runs: dict[str, StoredRun],
    steps: dict[str, list[Execution]],
    ledger: Ledger,
    log_of_pid: dict[int, str],
    t0: float = 0.0,
) -> list[Violation]:
    """The violations of the invariants in the module doc (the ledger's own come on top).

    Times in the messages are seconds since ``t0`` (the soak's start).
    """
    found: list[Violation] = []

    def bad(invariant: str, run_id: str, detail: str, pids: Iterable[int] = ()) -> None:
        logs = tuple(dict.fromkeys(log_of_pid[p] for p in pids if p in log_of_pid))
        found.append(Violation(invariant, run_id, detail, logs))

    for run_id in ledger.runs:
        if run_id not in runs:
            bad("accepted starts are recorded", run_id, "the start got 202; no record of it")
    faults = list(ledger.faults)
    for run_id, run in sorted(runs.items()):
        executions = steps.get(run_id, [])
        pids = [e.pid for e in executions]
        answers = ledger.answers.get(run_id, [])
        why = (
            None if run.status != "completed" else expected_result(run, (a.value for a in answers))
        )
        if run.status != "completed":
            bad(
                "run completes once",
                run_id,
                f"status {run.status!r} (error {run.error!r}, lease {run.lease_owner!r}); "
                f"steps ran: {_steps(executions, log_of_pid)}",
                pids,
            )
        elif why is not None:
            bad("run completes once", run_id, f"wrong result: {why}", pids)
        _check_log(run, bad, pids)
        for answer in answers:
            if answer.accepted and (
                not isinstance(run.result, dict) or run.result.get("answer") != answer.value
            ):
                used = run.result.get("answer") if isinstance(run.result, dict) else None
                bad(
                    "accepted answers count",
                    run_id,
                    f"answer {answer.value!r} got {answer.code} from {answer.replica}, the run "
                    f"is {run.status} with answer {used!r}",
                    pids,
                )
        reading = ledger.readings.get(run_id)
        if reading is not None:
            _check_reading(run, reading, bad, pids)
        if run.status == "completed":
            _check_steps(run_id, executions, faults, log_of_pid, bad, t0)
    return found


def _check_log(run: StoredRun, bad: Any, pids: list[int]) -> None:
    seqs = [seq for seq, _, _ in run.log]
    if seqs != list(range(1, len(seqs) + 1)):
        bad("log ends once", run.run_id, f"log seqs are not 1..N: {seqs}", pids)
    ends = [i for i, (_, kind, _) in enumerate(run.log) if kind == "end"]
    if len(ends) != 1:
        bodies = [run.log[i][2] for i in ends]
        bad("log ends once", run.run_id, f"{len(ends)} end entries: {bodies}", pids)
    if ends and ends[0] != len(run.log) - 1:
        after = [(seq, kind) for seq, kind, _ in run.log[ends[0] + 1 :]]
        bad("log ends once", run.run_id, f"entries after the first end: {after}", pids)
    if ends:
        body = run.log[ends[0]][2]
        if body.get("status") != run.status or (
            run.status == "completed" and body.get("result") != run.result
        ):
            bad(
                "log ends once",
                run.run_id,
                f"the first end says {body.get('status')!r} / {body.get('result')!r}; the "
                f"record says {run.status!r} / {run.result!r}",
                pids,
            )


def _check_reading(run: StoredRun, reading: Reading, bad: Any, pids: list[int]) -> None:
    where = f"(connections: {', '.join(reading.replicas)})"
    for problem in reading.problems:
        bad("SSE sees each event once", run.run_id, f"{problem} {where}", pids)
    if not reading.finished:
        if run.status == "completed":
            bad(
                "SSE sees each event once",
                run.run_id,
                f"the reader never saw the end; it saw {reading.seen[-5:]} {where}",
                pids,
            )
        return
    upto_end: list[tuple[int, str]] = []
    for seq, kind, _ in run.log:
        upto_end.append((seq, kind))
        if kind == "end":
            break
    if reading.seen != upto_end:
        bad(
            "SSE sees each event once",
            run.run_id,
            f"the reader saw {reading.seen}, the log holds {upto_end} {where}",
            pids,
        )


def _check_steps(
    run_id: str,
    executions: list[Execution],
    faults: list[Fault],
    log_of_pid: dict[int, str],
    bad: Any,
    t0: float,
) -> None:
    for step in STEPS:
        mine = [e for e in executions if e.step == step]
        if not mine:
            bad("steps run once", run_id, f"completed, yet step {step!r} never ran")
        for first, second in zip(mine, mine[1:], strict=False):
            if not _interrupted(first, second, faults):
                bad(
                    "steps run once",
                    run_id,
                    f"step {step!r} ran on {log_of_pid.get(first.pid, first.pid)} at "
                    f"+{first.at - t0:.2f} s and again on "
                    f"{log_of_pid.get(second.pid, second.pid)} at +{second.at - t0:.2f} s; no "
                    "fault hit the first in between",
                    (first.pid, second.pid),
                )


def _interrupted(first: Execution, second: Execution, faults: list[Fault]) -> bool:
    """Whether a fault hit ``first`` before ``second`` began (so running it again is right).

    A fault on ``first``'s replica hits it when it lasted until after ``first`` began (a
    replica SIGTERMed while it runs, or stalled, or killed); a PostgreSQL restart hits every
    execution under way while the server was down, or in the second after (when the pools'
    connections to the old server fail).
    """
    for fault in faults:
        if fault.started > second.at:
            continue
        if fault.kind in REPLICA_FAULTS and fault.pid == first.pid and fault.ended >= first.at:
            return True
        # A replica stalled with the step in flight finishes the step's code when it wakes,
        # while or after a survivor that took the run over runs it (its writes are refused;
        # the code between two awaits cannot be stopped from outside): the stalled execution
        # is the interrupted one, whichever note comes first.
        if fault.kind == "stall" and fault.started <= min(first.at, second.at):
            stalled = (
                first if fault.pid == first.pid else second if fault.pid == second.pid else None
            )
            if stalled is not None and stalled.at >= fault.ended:
                return True
        if fault.kind in PG_FAULTS and fault.ended + PG_GRACE >= first.at:
            return True
    return False


def _steps(executions: list[Execution], log_of_pid: dict[int, str]) -> str:
    return ", ".join(f"{e.step}@{log_of_pid.get(e.pid, e.pid)}" for e in executions) or "none"


def _json(text: Any) -> Any:
    if text is None or not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text
