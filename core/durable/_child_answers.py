"""Answers for child runs: an event sent to a parent run reaches the child that waits for it.

A child run that asks a question (an ``InputRequiredEvent``, ``ctx.wait_for_event``) is
``waiting`` in the run store while its parent stays ``running``. The rule, the same in every
way an answer is sent (``handler.ctx.send_event``, ``cptr.send_event``, ``POST
/runs/{id}/events``, the client, the console):

- A run that waits for an answer itself takes the event (as before child runs).
- Else, when the event is of a type some of its child runs (children, grandchildren...) wait
  for, with the values they require, and no step of the run itself takes that type from
  outside, the event goes to that child: it is committed to the **child's** inbox, once (the
  child's question accepts one answer), so a crash after the answer resumes the child with it.
- When several child runs wait for it, nothing is sent: the error names them, and the answer
  is sent to the child run itself (its run id is the ``child_run_id`` of the
  ``ChildRunEvent`` that carried its question).

This module reads the store (any process can route: a server replica that does not run the
run too); the in-process routing of ``handler.ctx.send_event`` is in ``engine/_children.py``.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python

from ..errors import RunConflictError
from ._records import RunRecord


@dataclass(frozen=True, slots=True)
class WaitingChild:
    """A child run waiting for an answer, as the store records it.

    Attributes:
        record: The child's run record (``status == "waiting"``).
        question: The question's event-log entry (``type``, ``qualified_name``, ``value``,
            ``waiting_for``), or ``None`` when it cannot be read.
    """

    record: RunRecord
    question: dict[str, Any] | None

    @property
    def waits(self) -> list[dict[str, Any]]:
        """What its waiting steps wait for (step, type, qualified_name, requirements)."""
        waits = (self.question or {}).get("waiting_for") or []
        return [w for w in waits if isinstance(w, dict)]

    def takes_type(self, type_name: str, data: Any = None) -> bool:
        """Whether it waits for an event named ``type_name`` (a class name) whose fields
        ``data`` (JSON, when given) hold the values the wait requires; a question asked
        without ``wait_for_event`` (a step takes the answer) takes any."""
        if not self.waits:
            return True
        given = data if isinstance(data, dict) else None
        return any(
            w.get("type") == type_name and (given is None or _holds(given, w.get("requirements")))
            for w in self.waits
        )

    def takes(self, event: Any) -> bool:
        """Whether ``event`` answers a wait of the child (its class and required values)."""
        if not self.waits:
            return True
        names = {f"{c.__module__}.{c.__qualname__}" for c in type(event).__mro__}
        return any(
            w.get("qualified_name") in names and _requires(event, w.get("requirements"))
            for w in self.waits
        )

    def describe(self) -> str:
        """``<run id> (Outline, waits for HumanResponseEvent in step ask)``."""
        waits = ", ".join(f"{w.get('type')} in step {w.get('step')}" for w in self.waits)
        return f"{self.record.run_id} ({self.record.workflow_name}" + (
            f", waits for {waits})" if waits else ")"
        )


def _requires(event: Any, requirements: Any) -> bool:
    if not isinstance(requirements, dict):
        return True
    for key, wanted in requirements.items():
        value = event.get(key, _MISSING)
        if value is _MISSING:
            return False
        if value != wanted and to_jsonable_python(value, fallback=repr) != wanted:
            return False
    return True


_MISSING: Any = object()


def _holds(data: dict[str, Any], requirements: Any) -> bool:
    """Whether JSON fields ``data`` have the required values (a value left out may be filled
    in by the sender's tools: only a different one rules the wait out)."""
    if not isinstance(requirements, dict):
        return True
    return all(data.get(k, v) == v for k, v in requirements.items())


def waiting_children(store: Any, run_id: str) -> list[WaitingChild]:
    """The child runs (at any depth) of run ``run_id`` that wait for an answer, oldest first.

    A waiting child's own children are not looked into: it takes its answers first.
    """
    children = getattr(store, "children", None)
    if children is None:
        return []
    found: list[WaitingChild] = []
    todo = [run_id]
    seen = {run_id}
    while todo:
        for child in children(todo.pop(0)):
            if child.parent_kind != "child" or child.run_id in seen:
                continue
            seen.add(child.run_id)
            if child.status == "waiting":
                found.append(WaitingChild(child, _question(store, child)))
            elif child.status == "running":
                todo.append(child.run_id)
    return found


def waiting_child_ids(store: Any, run_ids: Collection[str]) -> dict[str, list[str]]:
    """For each of the running runs ``run_ids``, the ids of its child runs (at any depth)
    that wait for an answer (level by level, oldest first in each); runs none of whose
    children waits are left out.

    The rule of :func:`waiting_children` (a waiting child's own children are not looked
    into), for many runs at once: one read of the store per level of nesting
    (``store.children_of``; a store without it is asked run by run).
    """
    children_of = getattr(store, "children_of", None)
    if children_of is None:
        one = getattr(store, "children", None)
        if one is None:
            return {}

        def children_of(ids: Collection[str]) -> list[RunRecord]:
            return [child for run_id in ids for child in one(run_id)]

    root = {run_id: run_id for run_id in run_ids}
    found: dict[str, list[str]] = {}
    todo = list(root)
    while todo:
        level, todo = todo, []
        for child in children_of(level):
            parent = child.parent_run_id
            if child.parent_kind != "child" or child.run_id in root or parent not in root:
                continue
            root[child.run_id] = root[parent]
            if child.status == "waiting":
                found.setdefault(root[parent], []).append(child.run_id)
            elif child.status == "running":
                todo.append(child.run_id)
    return found


def _question(store: Any, record: RunRecord) -> dict[str, Any] | None:
    """The event-log entry of the question ``record``'s run asked last."""
    if record.waiting_seq is None:
        return None
    logged = store.events(record.run_id, after=record.waiting_seq - 1, limit=1)
    if not logged or logged[0].seq != record.waiting_seq:
        return None
    try:
        body = json.loads(logged[0].body)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def ambiguous(run_id: str, what: str, children: list[WaitingChild]) -> RunConflictError:
    """The refusal of an answer to ``run_id`` that several waiting child runs could take."""
    listed = "; ".join(c.describe() for c in children)
    return RunConflictError(
        f"Run {run_id!r} does not wait for {what} itself, and {len(children)} of its child "
        f"runs do: {listed}. Nothing was sent; send the answer to the child run it is for "
        "(POST /runs/{child_run_id}/events, cptr.send_event(child_run_id, ...): the "
        "child_run_id of the ChildRunEvent that carried its question)."
    )


def answer_target(store: Any, run_id: str, event: Any, parent_takes: bool) -> str:
    """The run that ``event``, sent to run ``run_id``, is for: ``run_id`` or a waiting child.

    Args:
        store: The run store.
        run_id: The run the event was sent to.
        event: The event.
        parent_takes: Whether a step of run ``run_id`` takes the event's type from outside.

    Raises:
        RunConflictError: Several child runs wait for it (nothing was sent).
    """
    record = store.run(run_id)
    if record is None or record.status != "running" or parent_takes:
        return run_id
    takers = [c for c in waiting_children(store, run_id) if c.takes(event)]
    if len(takers) > 1:
        raise ambiguous(run_id, type(event).__name__, takers)
    return takers[0].record.run_id if takers else run_id


__all__ = [
    "WaitingChild",
    "ambiguous",
    "answer_target",
    "waiting_child_ids",
    "waiting_children",
]
