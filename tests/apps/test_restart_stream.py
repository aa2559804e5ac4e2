"""A restart is visible in the stream: `batonflow serve` killed mid-step, an SSE client
reconnecting with ``Last-Event-ID`` reads a StepRestarted before the step's events again."""

from __future__ import annotations

from pathlib import Path

import pytest
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
