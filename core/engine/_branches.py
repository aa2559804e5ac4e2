"""Collection streams: a list-returning step's branches and the ``list[E]`` steps they feed.

These functions are methods of :class:`~batonflow.core.engine._runtime.Run` (bound in its class body).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..data.events import CollectedEvents, Event, StopEvent
from ._collect import CollectionStream
from ._lanes import Execution, Lane, Tag

if TYPE_CHECKING:
    from ._runtime import Run


def hand_out(self: Run, ex: Execution, outputs: tuple[Event, ...], fan_out: bool) -> None:
    """Stepwise runs: give a step's outputs to the caller, who sends them on.

    Outputs belonging to a collection stream (a ``list[E]`` fan-out feeding a ``list[R]``
    join) keep their branch: the branch stays open while the caller holds the event, and
    the event rejoins it when sent back with ``ctx.send_event``.
    """
    tags: list[Tag] = [ex.tag] * len(outputs)
    sid = _open_stream(self, ex, len(outputs)) if fan_out else None
    if sid is not None:
        tags = [(sid, i) for i in range(len(outputs))]
    for ev, tag in zip(outputs, tags, strict=True):
        self._step_outputs.append(ev)
        if isinstance(ev, StopEvent):
            self.complete(ev)
        elif tag is not None and tag[0] in self.streams:
            self._handed[id(ev)] = (ev, tag)
            self.streams[tag[0]].live[tag[1]] += 1


def _open_stream(self: Run, ex: Execution, size: int) -> int | None:
    """Open a collection stream for ``size`` outputs of ``ex`` when they feed a ``list[E]``
    join (one branch per item); return its id, or ``None`` when no such join takes them."""
    declared = tuple(e for e in ex.lane.spec.emitted if not issubclass(e, StopEvent))
    collectors = self.graph.collectors_from(declared)
    if not collectors:
        return None
    sid = self.next_stream
    self.next_stream += 1
    self.streams[sid] = CollectionStream(size, collectors)
    return sid


def route_outputs(self: Run, ex: Execution, outputs: tuple[Event, ...], fan_out: bool) -> None:
    sid = _open_stream(self, ex, len(outputs)) if fan_out else None
    if sid is not None:
        for i, ev in enumerate(outputs):
            self.route(ev, ex.id, None, emitter=ex, tag=(sid, i))
        self._check_stream(sid)
        return
    tag = ex.tag
    for ev in outputs:
        self.route(ev, ex.id, None, emitter=ex, tag=tag)


def branch_done(self: Run, tag: tuple[int, int]) -> None:
    stream = self.streams.get(tag[0])
    if stream is None:
        return
    stream.live[tag[1]] -= 1
    if stream.live[tag[1]] == 0:
        self._check_stream(tag[0])


def check_stream(self: Run, sid: int) -> None:
    stream = self.streams.get(sid)
    if stream is None or not stream.closed():
        return
    del self.streams[sid]
    for index in stream.collectors:
        if index not in stream.fired:
            self._fire(index, stream)


def collect_member(self: Run, lane: Lane, event: Event, tag: tuple[int, int]) -> None:
    stream = self.streams.get(tag[0])
    if stream is None or lane.index in stream.fired:
        return
    if lane.index not in stream.collectors:
        stream.collectors.append(lane.index)
    items = stream.items.setdefault(lane.index, [])
    items.append((tag[1], event))
    take = lane.spec.collect_take
    if take is not None and len(items) >= take:
        self._fire(lane.index, stream)


def fire(self: Run, index: int, stream: CollectionStream) -> None:
    stream.fired.add(index)
    items = stream.items.pop(index, [])
    lane = self._lane(index)
    take = lane.spec.collect_take
    if take is not None:
        events = [e for _, e in items[:take]]
    else:
        events = [e for _, e in sorted(items, key=lambda item: item[0])]
    lane.pending.append(CollectedEvents(events=events))
    lane.meta.append((None, None, None))
    if not (self._hold or self.stepwise) and lane.active < lane.limit:
        self._start(lane)
