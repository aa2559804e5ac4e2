"""Helpers of the run-queue tests: waiting with a deadline, a run holding its slot."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx


def wait_until(predicate: Callable[[], bool], timeout: float = 30.0, what: str = "it") -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(0.05)


def started(client: httpx.Client, fields: dict[str, Any], **options: Any) -> str:
    """Start an approval run and wait until it holds its slot (it waits for an answer)."""
    run_id = client.post("/workflows/approval/runs", json=fields, **options).json()["run_id"]
    wait_until(lambda: client.get(f"/runs/{run_id}").json()["status"] == "waiting", what="a wait")
    return str(run_id)
