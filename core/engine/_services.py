"""What a Context asks of its run: ``collect_events``, ``wait_for_event``, stepwise waves.

These functions are methods of :class:`~batonflow.core.engine._runtime.Run` (bound in its class body).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..data.events import Event
from ..instruments.instrument import EventsJoined
from ._collect import CollectBuffer, RepeatedType
from ._lanes import Execution, RunStatus
from ._waiters import Waiter, type_name

if TYPE_CHECKING:
    from ._runtime import Run


def collect(
    self: Run, ex: Execution, event: Event, expected: Sequence[type[Event]], buffer_id: str | None
) -> list[Event] | None:
    """``ctx.collect_events`` for the execution ``ex``."""
    key = (ex.lane.spec.name, buffer_id)
    buf = self.buffers.get(key)
    if buf is None:
        buf = self.buffers[key] = CollectBuffer()
    if type(expected) is RepeatedType:  # collect_events(ev, cls, count=n): no calls to compare
        if expected.n != buf.size or (expected.n and expected.cls is not buf.first):
            buf.configure(expected)
    elif len(expected) != buf.size or (
        expected and (expected[0] is not buf.first or expected[-1] is not buf.last)
    ):
        buf.configure(expected)
    if not buf.add(event, ex.origins) or buf.satisfied < len(buf.need):
        return None
    released = buf.release()
    if released is None:
        return None
    events, origins = released
    if self._want_joined:
        self.instruments.call(
            "events_joined",
            EventsJoined(
                self.run_id,
                self.workflow.workflow_name,
                ex.lane.spec.name,
                ex.id,
                tuple(events),
                origins,
            ),
        )
    return events


def offer_waiters(self: Run, event: Event) -> bool:
    for waiter in list(self.waiters.values()):
        if not waiter.matches(event):
            continue
        if waiter.future is None:
            # Restored waiter whose step has not re-reached wait_for_event yet.
            del self.waiters[waiter.waiter_id]
            self.waiter_results[waiter.waiter_id] = event
            return True
        if not waiter.future.done():
            del self.waiters[waiter.waiter_id]
            waiter.future.set_result(event)
            return True
    return False


async def wait_for(
    self: Run,
    ex: Execution,
    event_type: type[Event],
    waiter_event: Event | None,
    waiter_id: str | None,
    requirements: dict[str, Any] | None,
    timeout: float | None,
) -> Event:
    """``ctx.wait_for_event`` for the execution ``ex``."""
    count = getattr(ex, "wait_count", 0)
    if waiter_id is None:
        waiter_id = f"{ex.lane.spec.name}:{ex.id}:{count}"
    ex.wait_count = count + 1
    found = self.waiter_results.pop(waiter_id, None)
    if found is not None:
        return found
    future: asyncio.Future[Event] = self.loop.create_future()
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
    if waiter_event is not None and waiter_id not in self.emitted_waiters:
        self.emitted_waiters.add(waiter_id)
        self.stream.put(waiter_event)
    self.waiting += 1
    if self.internal:
        self._maybe_idle()
    # Time spent waiting for someone else is not charged to the step's own timeout.
    step_timer = getattr(ex, "step_timeout", None)
    remaining: float | None = None
    if step_timer is not None:
        deadline = step_timer.when()
        if deadline is not None:
            remaining = deadline - self.loop.time()
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
            step_timer.reschedule(self.loop.time() + remaining)


async def run_wave(self: Run) -> list[Event] | None:
    """Run every pending execution once (bounded per step); return what they produced."""
    while True:
        if self.status is not RunStatus.RUNNING:
            outputs, self._step_outputs = self._step_outputs, []
            return outputs or None
        started = False
        for lane in self.lanes:
            if lane is not None:
                while lane.pending and lane.active < lane.limit:
                    self._start(lane)
                    started = True
        if not started and not self.running:
            outputs, self._step_outputs = self._step_outputs, []
            return outputs
        if self.running:
            self._wave = self.loop.create_future()
            await self._wave
            self._wave = None
        if self._step_outputs:
            outputs, self._step_outputs = self._step_outputs, []
            return outputs
