"""Waiting for a stored run's status, for the budget tests of this folder."""

from __future__ import annotations

import asyncio
import time
from typing import Any


async def until_status(store: Any, run_id: str, status: str, deadline: float = 20.0) -> None:
    """Wait (at most ``deadline`` seconds) for the run's stored status to be ``status``."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        record = store.run(run_id)
        if record is not None and record.status == status:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {run_id} is {store.run(run_id)}, not {status}")
