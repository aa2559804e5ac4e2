"""Waiters: steps paused in ``ctx.wait_for_event`` (live, or restored from a snapshot)."""

from __future__ import annotations

import asyncio
from typing import Any

from ..data.events import Event

_MISSING: Any = object()


class Waiter:
    """A step waiting in ``ctx.wait_for_event`` (or restored, waiting to be re-reached)."""

    __slots__ = (
        "event_type",
        "execution_id",
        "future",
        "question",
        "requirements",
        "step",
        "type_name",
        "waiter_id",
    )

    def __init__(
        self,
        waiter_id: str,
        type_name: str,
        event_type: type[Event] | None,
        requirements: dict[str, Any],
        future: asyncio.Future[Event] | None,
        step: str,
        execution_id: int,
        question: Event | None = None,
    ) -> None:
        self.waiter_id = waiter_id
        self.type_name = type_name
        self.event_type = event_type
        self.requirements = requirements
        self.future = future
        self.step = step
        self.execution_id = execution_id
        #: The ``waiter_event`` the wait asked with (``None``: it asked nothing itself).
        self.question = question

    def matches(self, event: Event) -> bool:
        """Whether ``event`` answers this waiter (its type and its ``requirements``)."""
        if not self.wants_type(event):
            return False
        return all(event.get(key, _MISSING) == value for key, value in self.requirements.items())

    def wants_type(self, event: Event) -> bool:
        """Whether ``event`` is of the awaited type (requirements aside)."""
        if self.event_type is not None:
            return isinstance(event, self.event_type)
        return any(type_name(c) == self.type_name for c in type(event).__mro__)


def type_name(cls: type) -> str:
    """``module.QualName`` of a class, as written in snapshots."""
    return f"{cls.__module__}.{cls.__qualname__}"
