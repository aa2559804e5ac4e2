"""Two processes resuming one run in one SQLite file: one wins before anything runs.

The other gets ``RunBusyError`` naming the run and the process that holds it; the step runs
once more in all, and the run's result is the winner's. A resumer killed with ``kill -9``
holds nothing: the next resume goes on.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from batonflow.core.checkpoints import SqliteCheckpointStore

WORKER = Path(__file__).with_name("resume_race_worker.py")


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(WORKER), *args], stdout=subprocess.PIPE, text=True)


def _steps(log: Path) -> list[tuple[str, int]]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [(step, int(pid)) for _, step, pid in (line.split() for line in lines)]


def _wait_for_step(log: Path, pid: int, step: str = "two") -> None:
    deadline = time.monotonic() + 60
    while (step, pid) not in _steps(log):
        assert time.monotonic() < deadline, f"process {pid} never reached step {step}"
        time.sleep(0.02)


def _killed_in_step_two(db: Path, log: Path, pause: float) -> int:
    """Start the run (its slow step takes ``pause`` s) and kill -9 its process inside that
    step; return the pid."""
    first = _spawn("start", str(db), "job", str(log), str(pause))
    _wait_for_step(log, first.pid)
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    first.stdout.close()  # type: ignore[union-attr]
    return first.pid


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("round_", range(3))
def test_two_processes_resuming_one_run_one_wins_before_anything_runs(tmp_path, round_):
    """Both resumers are released at once: one returns the result, the other is refused with
    a message naming the run and the winner; step two ran once after the crash."""
    db, log, go = tmp_path / "runs.db", tmp_path / "steps.log", tmp_path / "go"
    dead = _killed_in_step_two(db, log, 2.0)
    racers = [_spawn("resume", str(db), "job", str(log), str(go)) for _ in range(2)]
    for racer in racers:
        assert racer.stdout is not None and racer.stdout.readline().strip() == "ready"
    go.touch()
    outs = {racer.pid: json.loads(racer.communicate(timeout=60)[0]) for racer in racers}
    winners = [pid for pid, out in outs.items() if "result" in out]
    losers = [pid for pid, out in outs.items() if "busy" in out]
    assert len(winners) == 1 and len(losers) == 1, outs
    assert outs[winners[0]] == {"result": "done"}
    message = outs[losers[0]]["busy"]
    assert "Run 'job'" in message and f"process {winners[0]}" in message
    assert message.endswith("then resume it again.")
    assert _steps(log) == [("one", dead), ("two", dead), ("two", winners[0])]
    with SqliteCheckpointStore(db) as store:
        record = store.run("job")
        assert record is not None and (record.status, record.result) == ("completed", '"done"')


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_resumer_killed_with_sigkill_does_not_block_the_next_resume(tmp_path):
    """kill -9 the process that resumed the run, inside its step: the next resume goes on."""
    db, log, go = tmp_path / "runs.db", tmp_path / "steps.log", tmp_path / "go"
    go.touch()
    _killed_in_step_two(db, log, 3.0)
    second = _spawn("resume", str(db), "job", str(log), str(go))
    _wait_for_step(log, second.pid)
    second.send_signal(signal.SIGKILL)
    second.wait(10)
    second.stdout.close()  # type: ignore[union-attr]
    third = _spawn("resume", str(db), "job", str(log), str(go))
    out = json.loads(third.communicate(timeout=60)[0].splitlines()[-1])
    assert out == {"result": "done"}
    assert [step for step, _ in _steps(log)] == ["one", "two", "two", "two"]
