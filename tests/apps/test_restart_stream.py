"""A restart is visible in the stream: `batonflow serve` killed mid-step, an SSE client
reconnecting with ``Last-Event-ID`` reads a StepRestarted before the step's events again."""

from __future__ import annotations

from pathlib import Path

import pytest
from batonflow.client import RunEvent
from restart_stream import SERVE, check_restart

from .sse import read_sse, wait_status
from .test_server_restart import ServerProcess

N = 30


@pytest.mark.slow
def test_an_sse_client_reconnecting_after_a_kill_sees_the_step_restart(tmp_path: Path) -> None:
    """kill -9 while a step streams Progress; after the restart, the stream resumed with
    Last-Event-ID carries StepRestarted (the interrupted attempt's first event id) before the
    re-run's first event."""
    db = tmp_path / "runs.db"
    first = ServerProcess(db, None, True, *SERVE)
    try:
        run_id = first.client.post("/workflows/report/runs", json={"n": N, "pause": 0.1})
        run_id = run_id.json()["run_id"]
        before = read_sse(first.client, f"/runs/{run_id}/events", stop_after=3)
    finally:
        first.kill()
    second = ServerProcess(db, None, True, *SERVE)
    try:
        last = before[-1]["id"]
        after = read_sse(second.client, f"/runs/{run_id}/events", headers={"Last-Event-ID": last})
        check_restart(before, after, N)
    finally:
        second.kill()


@pytest.mark.slow
def test_a_run_that_never_crashes_streams_no_step_restarted(tmp_path: Path) -> None:
    """The same run served to its end: no StepRestarted, each event names its step."""
    server = ServerProcess(tmp_path / "runs.db", None, True, *SERVE)
    try:
        run_id = server.client.post("/workflows/report/runs", json={"n": 3, "pause": 0.01})
        run_id = run_id.json()["run_id"]
        wait_status(server.client, run_id, {"completed"})
        stream = read_sse(server.client, f"/runs/{run_id}/events")
        kinds = [m["data"].get("type") for m in stream]
        assert kinds == ["Progress", "Progress", "Progress", "StopEvent", None]
        assert [m["data"].get("step") for m in stream[:3]] == ["report"] * 3
    finally:
        server.kill()


def _event(seq: int, type_: str, step: str, execution: int, **extra) -> RunEvent:
    data = {"seq": seq, "type": type_, "value": extra.pop("value", {}), "step": step}
    return RunEvent(seq, "event", {**data, "execution": execution, **extra})


def test_a_restart_supersedes_only_its_executions_earlier_output() -> None:
    """RunEvent.supersedes: the same step execution, from the first event id up to the
    restart; not another execution, not a question, not the re-run."""
    restart = _event(
        6, "StepRestarted", "report", 2, value={"step_name": "report", "first_event_id": 2}
    )
    assert restart.is_restart and (restart.step, restart.execution) == ("report", 2)
    earlier = {
        1: _event(1, "Progress", "report", 2),  # before the interrupted attempt's first
        2: _event(2, "Progress", "report", 2),
        3: _event(3, "Progress", "side", 3),  # another step
        4: _event(4, "Progress", "report", 5),  # another execution of the step
        5: _event(5, "InputRequiredEvent", "report", 2, waiting_for=[]),  # a question
        7: _event(7, "Progress", "report", 2),  # the re-run's
    }
    assert [seq for seq, e in earlier.items() if restart.supersedes(e)] == [2]
    assert not earlier[2].supersedes(earlier[1])  # only a StepRestarted supersedes
