"""Waiters: steps paused in ``ctx.wait_for_event`` (live, or restored from a snapshot).

:class:`Waits` keeps a run's waiters; the run offers it every event it routes (an awaited
event goes to its waiter, not to the steps that accept its type).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..data.events import Event

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._lanes import Execution
    from ._snapshot import RunSnapshot

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


class Waits:
    """The steps of one run waiting in ``ctx.wait_for_event``, and the answers they have."""

    __slots__ = ("emitted", "on_unanswered", "results", "waiters", "waiting")

    def __init__(self) -> None:
        self.waiters: dict[str, Waiter] = {}
        #: Answers that came for restored waiters before their step re-reached the wait.
        self.results: dict[str, Event] = {}
        #: The waiters whose ``waiter_event`` was written to the stream (written once).
        self.emitted: set[str] = set()
        #: How many executions are parked in ``wait_for_event`` now.
        self.waiting = 0
        #: Called with a waiter's id when its wait ends unanswered (its ``timeout`` ran out):
        #: a durable run that was ``waiting`` for it is running again (the checkpointer).
        self.on_unanswered: list[Callable[[str], None]] = []

    def offer(self, event: Event) -> bool:
        """Give ``event`` to the first waiter it answers; whether one took it."""
        for waiter in list(self.waiters.values()):
            if not waiter.matches(event):
                continue
            if waiter.future is None:
                # Restored waiter whose step has not re-reached wait_for_event yet.
                del self.waiters[waiter.waiter_id]
                self.results[waiter.waiter_id] = event
                return True
            if not waiter.future.done():
                del self.waiters[waiter.waiter_id]
                waiter.future.set_result(event)
                return True
        return False

    async def wait_for(
        self,
        ex: Execution,
        event_type: type[Event],
        waiter_event: Event | None,
        waiter_id: str | None,
        requirements: dict[str, Any] | None,
        timeout: float | None,
    ) -> Event:
        """``ctx.wait_for_event`` for the execution ``ex``."""
        run = ex.run
        count = getattr(ex, "wait_count", 0)
        if waiter_id is None:
            waiter_id = f"{ex.lane.spec.name}:{ex.id}:{count}"
        ex.wait_count = count + 1
        found = self.results.pop(waiter_id, None)
        if found is not None:
            return found
        loop = run.loop
        future: asyncio.Future[Event] = loop.create_future()
        self.waiters[waiter_id] = Waiter(
            waiter_id,
            type_name(event_type),
            event_type,
            dict(requirements or {}),
            future,
            ex.lane.spec.name,
            ex.id,
            waiter_event,
        )
        if waiter_event is not None and waiter_id not in self.emitted:
            self.emitted.add(waiter_id)
            run.stream.put(waiter_event)
        self.waiting += 1
        if run.internal:
            run.maybe_idle()
        # Time spent waiting for someone else is not charged to the step's own timeout.
        step_timer = getattr(ex, "step_timeout", None)
        remaining: float | None = None
        if step_timer is not None:
            deadline = step_timer.when()
            if deadline is not None:
                remaining = deadline - loop.time()
                step_timer.reschedule(None)
        try:
            if timeout is None:
                return await future
            timer = asyncio.timeout(timeout)
            try:
                async with timer:
                    return await future
            except TimeoutError:
                if not timer.expired():
                    raise
                for listener in self.on_unanswered:
                    listener(waiter_id)
                raise TimeoutError(
                    f"Step {ex.lane.spec.name} waited {timeout} seconds for "
                    f"{event_type.__name__} (waiter_id {waiter_id!r}) and none arrived. Send it "
                    "with handler.ctx.send_event(...), or pass a larger timeout= to "
                    "ctx.wait_for_event (None waits forever)."
                ) from None
        finally:
            self.waiting -= 1
            waiter = self.waiters.get(waiter_id)
            if waiter is not None and waiter.future is future:
                del self.waiters[waiter_id]
            if step_timer is not None and remaining is not None:
                step_timer.reschedule(loop.time() + remaining)

    def restore(self, snap: RunSnapshot) -> None:
        """The waiters a snapshot saved (each answered once its step waits again)."""
        self.emitted.update(snap.emitted_waiters)
        self.results.update(snap.waiter_results)
        for w in snap.waiters:
            self.waiters[w.waiter_id] = Waiter(
                w.waiter_id, w.type_name, None, w.requirements, None, w.step, w.execution_id
            )
