"""How the drawing names and classes what it draws: event node ids, roles, descriptions.

Pure functions of event classes and docstrings, used by
:mod:`~batonflow.core.diagram.representation` to build a workflow's graph.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from ..data.events import Event, HumanResponseEvent, InputRequiredEvent, StartEvent, StopEvent

#: What an event node is to a run.
EventRole = Literal["start", "stop", "input_required", "human_response", "event"]


def return_type_name(factory: Any) -> str | None:
    """The name of the class a resource factory's return annotation names, if any."""
    ann = getattr(factory, "__annotations__", {}).get("return")
    if isinstance(ann, type):
        return ann.__name__
    return ann if isinstance(ann, str) else None


def event_ids(classes: Iterable[type[Event]]) -> dict[type[Event], str]:
    """``event:<Name>``; qualified by module, then numbered, when classes share a name."""
    classes = list(classes)
    names = [c.__name__ for c in classes]
    ids: dict[type[Event], str] = {}
    taken: set[str] = set()
    for c in classes:
        base = f"event:{c.__name__}"
        if names.count(c.__name__) > 1:
            base = f"event:{c.__module__}.{c.__qualname__}"
        candidate, k = base, 2
        while candidate in taken:
            candidate, k = f"{base}#{k}", k + 1
        taken.add(candidate)
        ids[c] = candidate
    return ids


def event_lineage(ev: type[Event]) -> tuple[str, ...]:
    """The names of ``ev`` and its Event base classes, most specific first."""
    return tuple(c.__name__ for c in ev.__mro__ if isinstance(c, type) and issubclass(c, Event))


def role(ev: type[Event]) -> EventRole:
    """What an event class is to a run: its start, its stop, a question, an answer, or other."""
    if issubclass(ev, StartEvent):
        return "start"
    if issubclass(ev, StopEvent):
        return "stop"
    if issubclass(ev, InputRequiredEvent):
        return "input_required"
    if issubclass(ev, HumanResponseEvent):
        return "human_response"
    return "event"


def first_line(doc: str | None) -> str | None:
    """The first non-blank line of a docstring (a node's description)."""
    if not doc:
        return None
    for line in doc.strip().splitlines():
        if line.strip():
            return line.strip()
    return None


__all__ = [
    "EventRole",
    "event_ids",
    "event_lineage",
    "first_line",
    "return_type_name",
    "role",
]
