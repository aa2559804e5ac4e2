"""What ``GET /runs`` and ``GET /runs/{id}`` read from the run store, off the event loop.

A run's record is several reads: the run, the schedule that started it, its budget and usage,
its place in the queue. On a store over the network (PostgreSQL) each is a round trip, so they
are made together in a thread (:func:`off_loop`), and the loop serves the other runs meanwhile;
a local file (SQLite) is read in place, where a thread would cost more than the reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from batonflow.core.durable._store import OffLoopWrites

from ._budget_view import budget_fields, usage_of_runs
from ._parent_waits import listed_runs
from ._queue import queue_place
from .schedules import schedule_links

T = TypeVar("T")


async def off_loop(records: Any, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``: in a thread when ``records`` is a store over the network, else here."""
    if isinstance(records, OffLoopWrites):
        return await asyncio.to_thread(fn, *args)
    return fn(*args)


def run_body(manager: Any, run_id: str) -> tuple[Any, dict[str, Any], dict[str, Any]] | None:
    """The run's row, its record as ``GET /runs/{id}`` shows it (without what it waits for,
    which the caller adds on the loop from the live run) and its budget's fields, or ``None``."""
    row = manager.store.get(run_id)
    if row is None:
        return None
    budgets = budget_fields(manager.records, run_id, row.status)
    body = {
        **row.public(),
        "schedule": schedule_links(manager.records, [run_id]).get(run_id),
        **budgets,
    }
    if row.status == "queued":
        body["queue"] = queue_place(manager, row)
    return row, body, budgets


def runs_body(
    manager: Any, workflow: str | None, status: str | None, limit: int
) -> list[dict[str, Any]]:
    """The runs as ``GET /runs`` lists them, newest first (a running parent whose child run
    waits for an answer as ``waiting``: ``_parent_waits.py``)."""
    rows = listed_runs(manager.store, workflow, status, limit)
    ids = [r["run_id"] for r in rows]
    links = schedule_links(manager.records, ids)
    usage = usage_of_runs(manager.records, ids)
    return [
        {**r, "schedule": links.get(r["run_id"]), "usage": usage.get(r["run_id"])} for r in rows
    ]


__all__ = ["off_loop", "run_body", "runs_body"]
