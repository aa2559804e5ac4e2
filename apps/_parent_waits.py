"""Runs listed as waiting because a child run of theirs waits for an answer.

A parent whose step follows a child run (``await ctx.run_child(...)``) stays ``running`` in
the store while the child waits for a person. ``GET /runs/{id}`` shows such a parent as
``waiting`` (``_child_answers.waiting_parent``); the lists (``GET /runs``, the console's
runs, ``batonflow runs list``) and ``batonflow runs show`` on a local store show it so too,
with ``waiting_children``. ``status=waiting`` finds it, ``status=running`` leaves it out.

The store is read once per level of nesting for all the listed running runs together
(``waiting_child_ids``), not once per run.
"""

from __future__ import annotations

from typing import Any

from batonflow.core.durable._child_answers import waiting_child_ids

from .run_store import RunRow, RunStore

#: ``RunStore.list``'s limit when every run of a status is needed.
_ALL = 2**62


def marks(children: list[str]) -> dict[str, Any]:
    """What a run's public fields become while its child runs ``children`` wait."""
    return {
        "status": "waiting",
        "waiting_for_input": True,
        "waiting_reason": "input",
        "waiting_children": children,
    }


def waiting_parents(store: RunStore, rows: list[RunRow]) -> dict[str, list[str]]:
    """For each running run of ``rows`` that is not itself a child run, its waiting child
    runs (at any depth), when it has some."""
    ids = [r.run_id for r in rows if r.status == "running" and r.parent_kind != "child"]
    return waiting_child_ids(store.backend, ids) if ids else {}


def listed_runs(
    store: RunStore, workflow: str | None, status: str | None, limit: int
) -> list[dict[str, Any]]:
    """The runs' public fields, newest first, a running parent whose child run waits for an
    answer shown ``waiting`` (and filtered as such)."""
    if status == "waiting":
        rows = store.list(workflow, "waiting", limit) + store.list(workflow, "running", _ALL)
    elif status == "running":
        rows = store.list(workflow, "running", _ALL)
    else:
        rows = store.list(workflow, status, limit)
    waiting = waiting_parents(store, rows)
    found: list[dict[str, Any]] = []
    for row in sorted(rows, key=lambda r: (r.created_at, r.run_id), reverse=True):
        body = row.public()
        if row.run_id in waiting:
            body.update(marks(waiting[row.run_id]))
        if status is None or body["status"] == status:
            found.append(body)
    return found[:limit]


__all__ = ["listed_runs", "marks", "waiting_parents"]
