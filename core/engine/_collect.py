"""Join buffers for ``ctx.collect_events``: O(1) work per event, whatever the fan-in size.

:class:`Collecting` keeps a run's buffers (one per step and buffer id); :class:`CollectBuffer`
is one of them. :class:`CollectionStream` is one fan-out of a list-returning step (see
``_branches``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any, overload

from ..data.events import Event
from ..instruments.instrument import EventsJoined, InstrumentSet

if TYPE_CHECKING:
    from ._lanes import Execution
    from ._snapshot import RunSnapshot

_MISSING: Any = object()


class RepeatedType(Sequence[type[Event]]):
    """``[cls] * n`` without the list: what ``collect_events(ev, cls, count=n)`` waits for.

    The buffer reads only its length and first and last items per event (O(1)); it walks it
    once, when it is (re)configured.
    """

    __slots__ = ("cls", "n")

    def __init__(self, cls: type[Event], n: int) -> None:
        self.cls = cls
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[type[Event]]:
        return repeat(self.cls, self.n)  # C, not one __getitem__ call per item

    @overload
    def __getitem__(self, index: int) -> type[Event]: ...

    @overload
    def __getitem__(self, index: slice) -> list[type[Event]]: ...

    def __getitem__(self, index: int | slice) -> type[Event] | list[type[Event]]:
        if isinstance(index, slice):
            return [self.cls] * len(range(*index.indices(self.n)))
        if not -self.n <= index < self.n:
            raise IndexError(index)
        return self.cls


def repeat_type(cls: type[Event], count: int) -> RepeatedType:
    """The expected types of ``collect_events(ev, cls, count=count)``.

    The last one made is given again for the same ``cls`` and ``count`` (a fan-in asks for
    it once per arriving event; checking and building one costs ~0.7 µs).

    Raises:
        TypeError: ``count`` is not an int >= 0, or ``cls`` is not an Event class.
    """
    last = _LAST[0]
    if last.cls is cls and last.n == count and type(count) is int:
        return last
    if not issubclass(cls, Event):
        raise TypeError(
            f"collect_events() waits for Event classes, got {cls.__qualname__}; pass an Event "
            "subclass, e.g. collect_events(ev, Done, count=3)."
        )
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise TypeError(
            f"collect_events(count={count!r}) needs a whole number >= 0 of events to wait for, "
            "e.g. count=len(items)."
        )
    made = _LAST[0] = RepeatedType(cls, count)
    return made


#: The RepeatedType repeat_type made last (immutable, so sharing it is safe).
_LAST: list[RepeatedType] = [RepeatedType(Event, 0)]


class CollectBuffer:
    """Events buffered by ``collect_events`` for one (step, buffer id); O(1) per event."""

    __slots__ = (
        "expected",
        "first",
        "last",
        "need",
        "origins",
        "raw",
        "route",
        "satisfied",
        "size",
        "slots",
    )

    def __init__(self) -> None:
        self.size = -1
        self.first: Any = None
        self.last: Any = None
        self.expected: list[type[Event]] = []
        self.need: dict[type, int] = {}
        self.route: dict[type, type | None] = {}
        # Buffered events per expected type, and their origins in step with them (apart, so
        # a fan-in of thousands keeps one GC-tracked object per event, the event itself).
        self.slots: dict[type, deque[Event]] = {}
        self.origins: dict[type, deque[tuple[int, ...]]] = {}
        self.satisfied = 0
        self.raw: list[tuple[Event, tuple[int, ...]]] = []

    def configure(self, expected: Sequence[type[Event]]) -> None:
        # Runs once per buffer (or when the expected list changes): the expected list may be
        # long (a fan-in of thousands), so per-event work must not depend on its length.
        held = self.raw + [
            item for t, dq in self.slots.items() for item in zip(dq, self.origins[t], strict=True)
        ]
        self.raw = []
        self.size = len(expected)
        self.first = expected[0] if expected else None
        self.last = expected[-1] if expected else None
        self.expected = list(expected)
        need: dict[type, int] = {}
        if isinstance(expected, RepeatedType):
            if expected.n:
                need[expected.cls] = expected.n
        else:
            for t in expected:
                need[t] = need.get(t, 0) + 1
        self.need = need
        self.route = {}
        self.slots = {t: deque() for t in need}
        self.origins = {t: deque() for t in need}
        self.satisfied = 0
        for item in held:
            self.add(item[0], item[1])

    def add(self, event: Event, origins: tuple[int, ...]) -> bool:
        cls = type(event)
        target = self.route.get(cls, _MISSING)
        if target is _MISSING:
            target = (
                cls
                if cls in self.need
                else next((t for t in self.need if issubclass(cls, t)), None)
            )
            self.route[cls] = target
        if target is None:
            return False
        dq = self.slots[target]
        dq.append(event)
        self.origins[target].append(origins)
        if len(dq) == self.need[target]:
            self.satisfied += 1
        return True

    def release(self) -> tuple[list[Event], tuple[int, ...]] | None:
        if self.satisfied < len(self.need):
            return None
        events: list[Event] = []
        origins: list[int] = []
        slots = self.slots
        sources = self.origins
        for t in self.expected:
            events.append(slots[t].popleft())
            origins.extend(sources[t].popleft())
        self.satisfied = sum(1 for t, n in self.need.items() if len(slots[t]) >= n)
        return events, tuple(origins)

    def held(self) -> list[Event]:
        return [e for e, _ in self.raw] + [e for dq in self.slots.values() for e in dq]


class CollectionStream:
    """One fan-out of a ``list[E]``-returning step: its branches and what collectors got.

    ``live[i]`` counts the queued and running executions of branch ``i``; the stream closes when
    every branch reaches zero.
    """

    __slots__ = ("collectors", "fired", "items", "live", "size")

    def __init__(self, size: int, collectors: tuple[int, ...]) -> None:
        self.size = size
        self.live = [0] * size
        self.collectors = list(collectors)
        #: Per collector step index: (branch, event) in arrival order.
        self.items: dict[int, list[tuple[int, Event]]] = {}
        self.fired: set[int] = set()

    def closed(self) -> bool:
        """Whether every branch has finished."""
        return not any(self.live)


class Collecting:
    """The ``collect_events`` buffers of one run, by (step name, buffer id)."""

    __slots__ = ("_want_joined", "buffers", "instruments", "run_id", "workflow_name")

    def __init__(self, run_id: str, workflow_name: str, instruments: InstrumentSet) -> None:
        self.run_id = run_id
        self.workflow_name = workflow_name
        self.instruments = instruments
        self._want_joined = instruments.wants("events_joined")
        self.buffers: dict[tuple[str, str | None], CollectBuffer] = {}

    def collect(
        self, ex: Execution, event: Event, expected: Sequence[type[Event]], buffer_id: str | None
    ) -> list[Event] | None:
        """``ctx.collect_events`` for the execution ``ex``."""
        key = (ex.lane.spec.name, buffer_id)
        buf = self.buffers.get(key)
        if buf is None:
            buf = self.buffers[key] = CollectBuffer()
        if type(expected) is RepeatedType:  # collect_events(ev, cls, count=n): nothing to compare
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
                    self.workflow_name,
                    ex.lane.spec.name,
                    ex.id,
                    tuple(events),
                    origins,
                ),
            )
        return events

    def restore(self, snap: RunSnapshot) -> None:
        """The buffers a snapshot saved (configured again by the next ``collect_events``)."""
        for (step_name, buffer_id), events in snap.buffers.items():
            buf = CollectBuffer()
            buf.raw = [(e, ()) for e in events]
            self.buffers[(step_name, buffer_id)] = buf
