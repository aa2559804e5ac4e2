"""A run in progress in this server process, and the error of an operation its state refuses."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any


class RunStateError(RuntimeError):
    """An operation that does not fit the run's state (e.g. an event sent to a finished run)."""


@dataclass(eq=False)
class LiveRun:
    """A run in progress in this server process."""

    run_id: str
    workflow_name: str
    workflow: Any
    handler: Any
    status: str = "running"
    done: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    pump: asyncio.Task[None] | None = None

    def _notify(self) -> None:
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()


__all__ = ["LiveRun", "RunStateError"]
