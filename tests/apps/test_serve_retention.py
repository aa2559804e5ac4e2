"""`batonflow serve --keep-finished`: a real server forgets ended runs past their period."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest

from .served import _env
from .test_cli_serve import FLOW_ARGS


def _statuses(url: str) -> dict[str, str]:
    return {r["run_id"]: r["status"] for r in httpx.get(f"{url}/runs").json()["runs"]}


def test_ended_runs_are_deleted_past_keep_finished_and_others_kept(serve) -> None:
    args = (*FLOW_ARGS, "--keep-finished", "1s", "--keep-finished-for", "echo=1h")
    first = serve(*args)
    echo = httpx.post(f"{first.url}/workflows/echo/runs", json={"message": "hi"}).json()
    ask = httpx.post(f"{first.url}/workflows/approval/runs", json={}).json()
    slow = httpx.post(f"{first.url}/workflows/sleepy/runs", json={"seconds": 30}).json()
    httpx.post(f"{first.url}/runs/{slow['run_id']}/cancel").raise_for_status()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = _statuses(first.url)
        if runs.get(echo["run_id"]) == "completed" and runs.get(ask["run_id"]) == "waiting":
            break
        time.sleep(0.1)
    assert runs[slow["run_id"]] == "cancelled"
    assert first.stop() == 0
    time.sleep(1.2)  # every run ended more than --keep-finished ago now
    second = serve(*args)
    deadline = time.monotonic() + 60  # the first sweep runs as the server starts
    while slow["run_id"] in (runs := _statuses(second.url)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert slow["run_id"] not in runs  # cancelled more than 1 s ago: gone
    assert httpx.get(f"{second.url}/runs/{slow['run_id']}").status_code == 404
    assert runs[echo["run_id"]] == "completed"  # its workflow keeps runs an hour
    assert runs[ask["run_id"]] == "waiting"  # still going on: never deleted


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--keep-finished", "7x"], "--keep-finished: keep_finished expects a duration such as"),
        (["--keep-finished", "7d", "--keep-finished-for", "r"], "expects NAME=DURATION"),
        (["--keep-finished-for", "r=1d"], "--keep-finished-for needs --keep-finished too"),
    ],
)
def test_bad_retention_settings_stop_the_server_before_it_starts(tmp_path, args, message) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "batonflow", "serve", "--port", "0", "--db",
         str(tmp_path / "runs.db"), "--no-prebuilt", *args],
        capture_output=True, text=True, timeout=120, env=_env(), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert message in done.stderr
