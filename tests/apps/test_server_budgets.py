"""Budgets through a real ``batonflow serve``: a run started with ``?budget=`` waits before the
LLM call that would pass it, stays waiting (no call made) across a server killed and started
again, and finishes once ``POST /runs/{id}/budget`` raises it. Bad budgets get a clear 422."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from .budget_flows import calls
from .served import Served

FLOW = f"budgeted={Path(__file__).with_name('budget_flows.py')}:BudgetedAgent"


def _until(client: httpx.Client, run_id: str, check: Any, deadline: float = 60) -> dict[str, Any]:
    """The run's record once ``check(record)`` holds (at most ``deadline`` seconds)."""
    end = time.monotonic() + deadline
    while True:
        body = client.get(f"/runs/{run_id}").json()
        if check(body):
            return body
        if time.monotonic() > end:
            raise AssertionError(f"run {run_id} is still {body}")
        time.sleep(0.1)


def _blocked(body: dict[str, Any]) -> bool:
    return body["status"] == "waiting" and body.get("waiting_reason") == "budget"


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_budget_waits_across_a_server_restart_and_a_raise_finishes_it(tmp_path, backend, request):
    """Budget 120: one LLM call (120 tokens), the second waits; killed and restarted, the run
    still waits with no call made; a raise lets it finish, 300 tokens in all."""
    db = [] if backend == "sqlite" else ["--db", request.getfixturevalue("postgres_url")]
    first = Served(tmp_path, "--no-prebuilt", "-w", FLOW, *db)
    try:
        with httpx.Client(base_url=first.url, timeout=30) as client:
            started = client.post(
                "/workflows/budgeted/runs",
                params={"budget": "120"},
                json={"user_msg": "What is the answer?"},
            )
            assert started.status_code == 202, started.text
            run_id = started.json()["run_id"]
            body = _until(client, run_id, _blocked)
            assert body["budget"] == {"tokens": 120, "cost": None, "on_exceed": "wait"}
            assert body["usage"]["total_tokens"] == 120
            assert body["budget_blocked"]["used"] == 120
            assert body["waiting_for_input"] is False
        assert calls(tmp_path) == 1
    finally:
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(20)
    second = Served(tmp_path, "--no-prebuilt", "-w", FLOW, *db)
    try:
        with httpx.Client(base_url=second.url, timeout=30) as client:
            second.wait_for(rf"resumed 1 run|resumes run {run_id}", timeout=90)
            _until(client, run_id, _blocked)
            time.sleep(0.5)  # a call made past the budget would show meanwhile
            assert calls(tmp_path) == 1
            raised = client.post(f"/runs/{run_id}/budget", json={"tokens": 1000})
            assert raised.status_code == 200, raised.text
            assert raised.json()["budget"]["tokens"] == 1120
            body = _until(client, run_id, lambda b: b["status"] == "completed")
            assert "42" in str(body["result"])
            assert body["usage"]["total_tokens"] == 300
            assert body["usage"]["calls"] == 2
            assert list(body["usage_by_step"]) == ["run_agent_step"]
            listed = client.get("/runs").json()["runs"][0]
            assert listed["usage"]["total_tokens"] == 300
            ended = client.post(f"/runs/{run_id}/budget", json={"tokens": 5})
            assert ended.status_code == 409 and "has ended" in ended.json()["detail"]
        assert calls(tmp_path) == 2
    finally:
        second.stop()


@pytest.mark.slow
def test_bad_budgets_are_refused_with_the_fix(tmp_path):
    """A negative budget, an unknown unit, a negative raise, an unknown run: clear errors."""
    served = Served(tmp_path, "--no-prebuilt", "-w", FLOW)
    try:
        with httpx.Client(base_url=served.url, timeout=30) as client:
            for budget, message in (("-5", "is negative"), ("5 apples", "write e.g.")):
                refused = client.post(
                    "/workflows/budgeted/runs", params={"budget": budget}, json={"user_msg": "x"}
                )
                assert refused.status_code == 422
                assert message in refused.json()["detail"]
            assert client.get("/runs").json()["runs"] == []  # nothing started
            missing = client.post("/runs/nope/budget", json={"tokens": 5})
            assert missing.status_code == 404
            assert client.post("/runs/nope/budget", json={"tokens": -5}).status_code == 422
    finally:
        served.stop()
