"""A ``batonflow serve`` replica that stalls past its lease while runs are in flight.

Two replicas on one PostgreSQL database; the victim holds every run when it stalls, by SIGSTOP
or by a step that blocks its event loop (``time.sleep``) longer than the lease. The survivor
takes the runs over and completes them. When the victim wakes, each of its late writes is
refused: every run keeps the survivor's status and result, its log has exactly one ``end`` and
nothing after it, no step starts again on the victim, and the victim still stops cleanly
(exit 0, no traceback) on SIGTERM.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from replicas import Replica, executions, notes

LEASE = 2.0


def _stored(url: str, run_ids: list[str]) -> dict[str, Any]:
    """Each run's record (status, result, error) and its whole event log, from the database."""
    found: dict[str, Any] = {}
    with psycopg.connect(url) as conn:
        for run_id in run_ids:
            record = conn.execute(
                "SELECT status, result, error FROM checkpoint_runs WHERE run_id = %s", (run_id,)
            ).fetchone()
            log = conn.execute(
                "SELECT seq, kind, body FROM run_events WHERE run_id = %s ORDER BY seq",
                (run_id,),
            ).fetchall()
            found[run_id] = (record, log)
    return found


def _wait_until_dropped(victim: Replica, run_ids: list[str], within: float = 60) -> None:
    """Wait until the woken victim said, for every run, that it stops running it."""
    deadline = time.monotonic() + within
    while True:
        text = victim.log.read_text()
        left = [r for r in run_ids if f"stops running run {r}" not in text]
        if not left:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the victim never let go of {left}:\n{text}")
        time.sleep(0.1)


def _check_after(url: str, completed: dict[str, Any], victim: Replica, log: Path) -> None:
    """Nothing the victim did after waking changed a run, and no step started on it again."""
    after = _stored(url, list(completed))
    assert after == completed
    for run_id, (record, entries) in after.items():
        assert record[0] == "completed", (run_id, record)
        kinds = [kind for _, kind, _ in entries]
        assert kinds.count("end") == 1 and kinds[-1] == "end", (run_id, kinds)
    for (run_id, step), pids in executions(log).items():
        if step == "finish":
            continue  # a note inside `check`, not the start of a step
        assert len(pids) in (1, 2), (run_id, step, pids)
        if len(pids) == 2:  # the step the stall interrupted: the victim's run, then the redo
            assert pids[0] == victim.proc.pid and pids[1] != victim.proc.pid
    # Once the survivor ran a step of a run, the victim started none of its steps again.
    taken: set[str] = set()
    for run_id, step, pid in notes(log):
        if pid != victim.proc.pid:
            taken.add(run_id)
        elif step != "finish":
            assert run_id not in taken, f"the victim started {step} of {run_id} after takeover"
    assert victim.stop() == 0, victim.log.read_text()
    text = victim.log.read_text()
    assert "Traceback" not in text and "RecursionError" not in text, text


def _replicas(url: str, tmp: Path) -> tuple[Replica, Replica]:
    victim = Replica("victim", url, tmp, LEASE)
    try:
        survivor = Replica("survivor", url, tmp, LEASE)
    except BaseException:
        victim.stop()
        raise
    return victim, survivor


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_replica_woken_from_sigstop_changes_no_run_the_survivor_completed(postgres_url, tmp_path):
    """SIGSTOP the replica holding 8 runs past its lease; the survivor completes them; after
    SIGCONT each run's status, result and log stay as the survivor left them."""
    log = tmp_path / "steps.log"
    victim, survivor = _replicas(postgres_url, tmp_path)
    try:
        runs = [victim.client.start("steps", log=str(log), n=i, pause=2.0).run_id for i in range(8)]
        time.sleep(0.5)  # the runs are in their first step
        victim.pause()
        finals = {run_id: survivor.client.wait(run_id, timeout=90) for run_id in runs}
        for run_id, run in finals.items():
            assert run.status == "completed", (run_id, run.status, run.error)
        completed = _stored(postgres_url, runs)
        victim.go_on()
        _wait_until_dropped(victim, runs)
        assert {r: survivor.client.wait(r, timeout=30).result for r in runs} == {
            r: run.result for r, run in finals.items()
        }
        _check_after(postgres_url, completed, victim, log)
    finally:
        for replica in (victim, survivor):
            replica.stop()


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_replica_whose_step_blocks_its_loop_changes_no_run_after_takeover(postgres_url, tmp_path):
    """A step blocks the victim's event loop (time.sleep) for four leases; the survivor takes
    its runs over and completes them; the woken victim writes nothing and starts no step."""
    log = tmp_path / "steps.log"
    victim, survivor = _replicas(postgres_url, tmp_path)
    try:
        runs = [victim.client.start("steps", log=str(log), n=i, pause=1.0).run_id for i in range(5)]
        time.sleep(0.3)
        blocker = victim.client.start("steps", log=str(log), n=9, pause=1.0, block=4 * LEASE)
        runs.append(blocker.run_id)
        finals = {run_id: survivor.client.wait(run_id, timeout=90) for run_id in runs}
        for run_id, run in finals.items():
            assert run.status == "completed", (run_id, run.status, run.error)
        _wait_until_dropped(victim, runs)
        completed = _stored(postgres_url, runs)
        assert (blocker.run_id, "work") in executions(log)
        _check_after(postgres_url, completed, victim, log)
    finally:
        for replica in (victim, survivor):
            replica.stop()
