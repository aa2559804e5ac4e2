"""Collection streams: a list-returning step's branches and the ``list[E]`` steps they feed.

A step that returns a list of events fans out: when a ``list[E]`` step collects what its items
lead to, :class:`Branches` opens a collection stream, one branch per item, and tags every event
of a branch (``(stream id, branch)``). A branch stays live while an event of it is queued or
running; when every branch is done (or a collector has the items it takes), the collector
gets its :class:`~batonflow.core.events.CollectedEvents`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..data.events import CollectedEvents, Event, StopEvent
from ._collect import CollectionStream
from ._lanes import Execution, Lane, Tag

if TYPE_CHECKING:
    from ._runtime import Run
    from ._snapshot import RunSnapshot
    from .graph import Graph


class Branches:
    """The open collection streams of one run, and the stepwise outputs held by the caller."""

    __slots__ = ("graph", "handed", "next_stream", "run", "streams")

    def __init__(self, run: Run) -> None:
        #: The run (its lifecycle and routing); the reference is dropped when the run ends.
        self.run = run
        self.graph: Graph = run.graph
        #: Open collection streams (fan-outs of list-returning steps) by id.
        self.streams: dict[int, CollectionStream] = {}
        self.next_stream = 1
        #: Stepwise outputs of collection branches held by the caller: id -> (event, branch).
        self.handed: dict[int, tuple[Event, tuple[int, int]]] = {}

    def hand_out(self, ex: Execution, outputs: tuple[Event, ...], fan_out: bool) -> None:
        """Stepwise runs: give a step's outputs to the caller, who sends them on.

        Outputs belonging to a collection stream (a ``list[E]`` fan-out feeding a ``list[R]``
        join) keep their branch: the branch stays open while the caller holds the event, and
        the event rejoins it when sent back with ``ctx.send_event``.
        """
        run = self.run
        tags: list[Tag] = [ex.tag] * len(outputs)
        sid = self.open(ex, len(outputs)) if fan_out else None
        if sid is not None:
            tags = [(sid, i) for i in range(len(outputs))]
        for ev, tag in zip(outputs, tags, strict=True):
            run.step_outputs.append(ev)
            if isinstance(ev, StopEvent):
                run.complete(ev)
            elif tag is not None and tag[0] in self.streams:
                self.handed[id(ev)] = (ev, tag)
                self.streams[tag[0]].live[tag[1]] += 1

    def open(self, ex: Execution, size: int) -> int | None:
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

    def route_outputs(self, ex: Execution, outputs: tuple[Event, ...], fan_out: bool) -> None:
        """Route a step's outputs, a fan-out of them in a stream of its own if one collects."""
        route = self.run.route
        sid = self.open(ex, len(outputs)) if fan_out else None
        if sid is not None:
            for i, ev in enumerate(outputs):
                route(ev, ex.id, None, emitter=ex, tag=(sid, i))
            self.check(sid)
            return
        tag = ex.tag
        for ev in outputs:
            route(ev, ex.id, None, emitter=ex, tag=tag)

    def done(self, tag: tuple[int, int]) -> None:
        """An event of branch ``tag`` was taken up (its execution ended, or it was collected)."""
        stream = self.streams.get(tag[0])
        if stream is None:
            return
        stream.live[tag[1]] -= 1
        if stream.live[tag[1]] == 0:
            self.check(tag[0])

    def check(self, sid: int) -> None:
        """Fire the collectors of stream ``sid`` once every branch of it is done."""
        stream = self.streams.get(sid)
        if stream is None or not stream.closed():
            return
        del self.streams[sid]
        for index in stream.collectors:
            if index not in stream.fired:
                self.fire(index, stream)

    def collect_member(self, lane: Lane, event: Event, tag: tuple[int, int]) -> None:
        """File ``event`` of branch ``tag`` for the ``list[E]`` step of ``lane``."""
        stream = self.streams.get(tag[0])
        if stream is None or lane.index in stream.fired:
            return
        if lane.index not in stream.collectors:
            stream.collectors.append(lane.index)
        items = stream.items.setdefault(lane.index, [])
        items.append((tag[1], event))
        take = lane.spec.collect_take
        if take is not None and len(items) >= take:
            self.fire(lane.index, stream)

    def fire(self, index: int, stream: CollectionStream) -> None:
        """Queue the collected events of ``stream`` for the ``list[E]`` step ``index``."""
        run = self.run
        stream.fired.add(index)
        items = stream.items.pop(index, [])
        lane = run.executions.lane(index)
        take = lane.spec.collect_take
        if take is not None:
            events = [e for _, e in items[:take]]
        else:
            events = [e for _, e in sorted(items, key=lambda item: item[0])]
        lane.pending.append(CollectedEvents(events=events))
        lane.meta.append((None, None, None))
        if not (run.hold or run.stepwise) and lane.active < lane.limit:
            run.executions.start(lane)

    def parts(self) -> list[dict[str, Any]]:
        """The open collection streams, by step names (for snapshots; also after the run)."""
        if not self.streams:
            return []  # most runs, at every durable checkpoint
        names = [spec.name for spec in self.graph.order]
        return [
            {
                "id": sid,
                "size": stream.size,
                "collectors": [names[i] for i in stream.collectors],
                "fired": [names[i] for i in stream.fired],
                "items": {
                    names[i]: [(branch, ev) for branch, ev in items]
                    for i, items in stream.items.items()
                },
            }
            for sid, stream in self.streams.items()
        ]

    def restore(self, snap: RunSnapshot) -> None:
        """Reopen the collection streams a snapshot saved."""
        self.next_stream = snap.next_stream
        index_of = {spec.name: i for i, spec in enumerate(self.graph.order)}
        for saved in snap.streams:
            stream = CollectionStream(
                saved["size"], tuple(index_of[n] for n in saved["collectors"])
            )
            stream.fired = {index_of[n] for n in saved["fired"]}
            stream.items = {index_of[n]: list(items) for n, items in saved["items"].items()}
            self.streams[saved["id"]] = stream


__all__ = ["Branches"]
