"""Three ``batonflow serve`` replicas on one PostgreSQL database; one is killed with SIGKILL.

Fifty runs are in flight, a third of them waiting for an answer. After the kill: every run
completes exactly once (one ``end`` entry, completed steps not re-run), no answer is lost, and
an SSE client that reconnects to a surviving replica with ``Last-Event-ID`` sees each event
once, in order.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from batonflow.client.errors import ClientError
from replicas import Replica


def _executions(log: Path) -> dict[tuple[str, str], list[int]]:
    """(run id, step) -> the pids that ran it, in order."""
    found: dict[tuple[str, str], list[int]] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        run_id, step, pid = line.split()[:3]
        found.setdefault((run_id, step), []).append(int(pid))
    return found


@pytest.mark.slow
@pytest.mark.timeout(300)  # three servers starting on two cores can take a while
def test_killing_one_of_three_replicas_loses_and_repeats_nothing(postgres_url, tmp_path):
    """50 runs in flight, SIGKILL one replica: each run completes once, answers all count."""
    lease = 2.0
    log = tmp_path / "steps.log"
    replicas = [Replica(f"r{i}", postgres_url, tmp_path, lease) for i in range(3)]
    try:
        runs: dict[str, bool] = {}  # run id -> asks for an answer
        on_victim: set[str] = set()
        for i in range(50):
            via = replicas[i % 3].client
            ask = i % 4 == 0
            run = via.start("steps", log=str(log), n=i, ask=ask, pause=0.5 if i < 25 else 2.0)
            runs[run.run_id] = ask
            if i % 3 == 0:
                on_victim.add(run.run_id)
        victim = replicas[0]
        survivors = replicas[1:]
        # A stream followed on the victim, to be resumed on a survivor after the kill.
        followed = sorted(on_victim)[0]
        seen: list[int] = []

        failures: list[BaseException] = []

        def follow_then_resume() -> None:
            try:
                try:
                    for event in victim.client.events(followed, reconnect=False):
                        seen.append(event.seq)
                except ClientError:
                    pass  # the victim died under the stream: go on elsewhere
                for event in survivors[0].client.events(followed, after=seen[-1] if seen else 0):
                    seen.append(event.seq)
            except BaseException as exc:  # reported by the test, not lost in the thread
                failures.append(exc)

        reader = threading.Thread(target=follow_then_resume)
        reader.start()
        time.sleep(0.8)  # let runs reach their steps, and some their question
        victim.kill()
        killed_at = time.monotonic()

        # Answer every waiting run through the survivors, retrying until it asks again.
        pending = {run_id for run_id, ask in runs.items() if ask}
        deadline = time.monotonic() + 90
        while pending and time.monotonic() < deadline:
            for n, run_id in enumerate(sorted(pending)):
                client = survivors[n % 2].client
                if client.get(run_id).status == "waiting":
                    try:
                        client.answer(run_id, "yes")
                        pending.discard(run_id)
                    except ClientError:
                        pass  # answered already or moved on: the status will tell
            time.sleep(0.1)
        assert not pending, f"runs never asked again after the kill: {pending}"

        finals = {run_id: survivors[0].client.wait(run_id, timeout=120) for run_id in runs}
        resumed_in = time.monotonic() - killed_at
        reader.join(150)
        assert not reader.is_alive(), f"the stream never ended; saw {seen}"
        assert not failures, failures

        for run_id, run in finals.items():
            assert run.status == "completed", (run_id, run.status, run.error)
            assert run.result["answer"] == ("yes" if runs[run_id] else "auto")
            ends = [e for e in survivors[1].client.events(run_id) if e.is_end]
            assert len(ends) == 1
        # Each event of the followed run was seen once, in order, across the reconnect.
        assert seen == sorted(set(seen)) and seen, seen
        assert seen == list(range(1, seen[-1] + 1))
        ran = _executions(log)
        repeated = 0
        for run_id in runs:
            for step in ("work", "check", "finish"):
                pids = ran[(run_id, step)]
                # A step runs again only when the kill interrupted it: then its first
                # execution was on the victim and the second on a survivor.
                assert len(pids) in (1, 2), (run_id, step, pids)
                if len(pids) == 2:
                    repeated += 1
                    assert pids[0] == victim.proc.pid and pids[1] != victim.proc.pid
        assert repeated <= sum(1 for pids in ran.values() if victim.proc.pid in pids)
        # The victim's unfinished runs were finished by the survivors.
        moved = {r for r in on_victim if victim.proc.pid not in ran[(r, "finish")]}
        assert moved, "no run was taken over: the kill came too late to test anything"
        assert any(runs[r] for r in moved), "no waiting run was taken over"
        assert resumed_in < 120
    finally:
        for replica in replicas:
            if replica.proc.poll() is None:
                replica.stop()
