"""A run taken apart for a snapshot, and put back together from one.

These functions are methods of :class:`~batonflow.core.engine._runtime.Run` (bound in its class body).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..data.events import Event, StopEvent
from ._collect import CollectBuffer, CollectionStream
from ._lanes import Origin, Tag
from ._waiters import Waiter

if TYPE_CHECKING:
    from ._runtime import Run
    from ._snapshot import RunSnapshot


def restore(self: Run, snap: RunSnapshot) -> None:
    self.next_id = snap.next_execution_id
    self.emitted_waiters = set(snap.emitted_waiters)
    self.waiter_results = dict(snap.waiter_results)
    for w in snap.waiters:
        self.waiters[w.waiter_id] = Waiter(
            w.waiter_id, w.type_name, None, w.requirements, None, w.step, w.execution_id
        )
    for (step_name, buffer_id), events in snap.buffers.items():
        buf = CollectBuffer()
        buf.raw = [(e, ()) for e in events]
        self.buffers[(step_name, buffer_id)] = buf
    for ev in snap.stream_pending:
        self.stream.put(ev)
    self.stream.position = snap.stream_position
    if isinstance(snap.stop_event, StopEvent):
        self.complete(snap.stop_event)
        return
    self.next_stream = snap.next_stream
    index_of = {spec.name: i for i, spec in enumerate(self.graph.order)}
    for saved in snap.streams:
        stream = CollectionStream(saved["size"], tuple(index_of[n] for n in saved["collectors"]))
        stream.fired = {index_of[n] for n in saved["fired"]}
        stream.items = {index_of[n]: list(items) for n, items in saved["items"].items()}
        self.streams[saved["id"]] = stream
    for step_name, param, events in snap.joins:
        lane = self._lane(self.graph.order.index(self.graph.steps[step_name]))
        if lane.joins is not None and param in lane.joins:
            lane.joins[param].extend((e, None) for e in events)
    # In-progress executions re-run first (with their ids, so default waiter ids match),
    # then the queued events in their original order.
    self._hold += 1
    for item in (*snap.in_progress, *snap.queued):
        lane = self._lane(self.graph.order.index(self.graph.steps[item.step]))
        tag = item.tag
        lane.pending.append(item.event)
        lane.meta.append((item.origin, item.execution_id, tag))
        if tag is not None and tag[0] in self.streams:
            self.streams[tag[0]].live[tag[1]] += 1
    self._hold -= 1
    for sid in list(self.streams):
        self._check_stream(sid)
    self._kick_all()


def stream_parts(self: Run) -> list[dict[str, Any]]:
    """The open collection streams, by step names (for snapshots)."""
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


def snapshot_parts(
    self: Run,
) -> tuple[
    list[tuple[str, Event, Origin, int | None, Tag]],
    list[tuple[str, Event, Origin, int, Tag]],
]:
    """``(queued, in_progress)`` as ``(step, event, origin, execution id, tag)`` tuples."""
    queued: list[tuple[str, Event, Origin, int | None, Tag]] = []
    for lane in self.lanes:
        if lane is not None:
            for event, (origin, eid, tag) in zip(lane.pending, lane.meta, strict=True):
                queued.append((lane.spec.name, event, origin, eid, tag))
    in_progress: list[tuple[str, Event, Origin, int, Tag]] = [
        (ex.lane.spec.name, ex.event, _origin_of(ex.origins), ex.id, ex.tag)
        for ex in sorted(self.running.values(), key=lambda e: e.id)
    ]
    return queued, in_progress


def join_parts(self: Run) -> list[tuple[str, str, list[Event]]]:
    """Events waiting for their set in steps with several event parameters."""
    return [
        (lane.spec.name, name, [event for event, _ in queue])
        for lane in self.lanes
        if lane is not None and lane.joins is not None
        for name, queue in lane.joins.items()
        if queue
    ]


def running_steps(self: Run) -> list[str]:
    """Names of the steps with an execution in progress."""
    return sorted({ex.lane.spec.name for ex in self.running.values()})


def _origin_of(origins: tuple[int, ...]) -> Origin:
    if not origins:
        return None
    return origins[0] if len(origins) == 1 else origins
