"""A small SSE reader and polling helpers for the server tests."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx


def read_sse(
    client: httpx.Client,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    params: dict[str, Any] | None = None,
    stop_after: int | None = None,
) -> list[dict[str, Any]]:
    """Read SSE messages as dicts {id, event, data}; stop after ``stop_after`` or at the end."""
    messages: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    with client.stream("GET", path, headers=headers, params=params) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line == "":
                if "data" in current:
                    messages.append(current)
                    if stop_after is not None and len(messages) >= stop_after:
                        break
                current = {}
            elif line.startswith(":"):
                continue
            else:
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                current[field] = json.loads(value) if field == "data" else value
    return messages


def wait_status(
    client: httpx.Client, run_id: str, statuses: set[str], timeout: float = 15.0
) -> dict[str, Any]:
    """Poll GET /runs/{id} until its status is one of ``statuses``."""
    deadline = time.monotonic() + timeout
    while True:
        data = client.get(f"/runs/{run_id}").json()
        if data["status"] in statuses:
            return data
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} stayed {data['status']}, wanted {statuses}")
        time.sleep(0.02)


def wait_checkpoint(db, run_id: str, step_name: str, timeout: float = 20.0) -> None:
    """Poll the checkpoint store in ``db`` until run ``run_id`` has a checkpoint after ``step_name``."""
    from batonflow.core.checkpoints import SqliteCheckpointStore

    store = SqliteCheckpointStore(db)
    try:
        deadline = time.monotonic() + timeout
        while not any(c.step_name == step_name for c in store.list(run_id)):
            if time.monotonic() > deadline:
                raise AssertionError(f"no checkpoint after {step_name} for run {run_id}")
            time.sleep(0.02)
    finally:
        store.close()
