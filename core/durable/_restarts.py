"""A restart made visible: a resumed run's stream says which steps run again.

A step interrupted by a crash runs again when its run is resumed, and writes its stream events
again (at least once). Each event-log entry a step execution writes names the step and the
execution (``event_body(..., step=, execution=)``), and a resumed run keeps its executions' ids,
so the entries of an interrupted attempt are those of the executions the resume runs again.
Before any of them runs, :func:`announce` writes one
:class:`~batonflow.core.events.StepRestarted` per such execution into the run's event log and
its in-memory stream: the step, which run of it this is, and the ``seq`` of the first entry the
interrupted attempt wrote. A question (an entry with ``waiting_for``) is not part of that
output: a waiting step does not ask again when it runs again.

An execution is announced when the interrupted attempt wrote something, or when it was in
progress at the checkpoint the run continues from (it had started, though it wrote nothing),
unless it was only waiting there for an answer: it takes up its wait, nothing to drop.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..data.events import StepRestarted
from ..errors import CheckpointError
from ._store import event_body

if TYPE_CHECKING:
    from ..engine._runtime import Run
    from ..engine._snapshot import RunSnapshot
    from ._store import CheckpointStore

logger = logging.getLogger("batonflow.core")

#: An execution id in an entry's JSON (a field of the event's value may look the same: the
#: decoded entry is checked).
_TAG = re.compile(r'"execution": ?(\d+)[,}]')

#: How a StepRestarted entry names its class in the event log.
RESTARTED = f"{StepRestarted.__module__}.{StepRestarted.__qualname__}"


@dataclass(frozen=True, slots=True)
class Interrupted:
    """What the checkpoint a run continues from says about its executions.

    Attributes:
        in_progress: Ids of the executions that were running (they had started).
        waiting: Ids of those that waited for an answer (``ctx.wait_for_event``).
    """

    in_progress: frozenset[int] = frozenset()
    waiting: frozenset[int] = frozenset()

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Interrupted:
        """From a checkpoint's ``ctx_data`` (``Context.to_dict``)."""
        return cls(
            _ids(item.get("execution_id") for item in data.get("in_progress") or ()),
            _ids(item.get("execution_id") for item in data.get("waiters") or ()),
        )

    @classmethod
    def from_snapshot(cls, snap: RunSnapshot | None) -> Interrupted:
        """From a restored context's snapshot (``Context.from_dict``)."""
        if snap is None:
            return cls()
        return cls(
            _ids(item.execution_id for item in snap.in_progress),
            _ids(w.execution_id for w in snap.waiters),
        )


def _ids(values: Iterable[Any]) -> frozenset[int]:
    return frozenset(int(v) for v in values if v is not None)


def rerun(run: Run) -> dict[int, str]:
    """The executions the resumed ``run`` starts again (begun or queued with their id)."""
    found = {ex.id: ex.lane.spec.name for ex in run.executions.running.values()}
    for lane in run.executions.lanes:
        if lane is not None:
            for _, eid, _ in lane.meta:
                if eid is not None:
                    found[eid] = lane.spec.name
    return found


def restarts(
    store: CheckpointStore, run_id: str, again: Mapping[int, str], interrupted: Interrupted
) -> list[tuple[int, StepRestarted]]:
    """The StepRestarted of each execution in ``again`` (id: step) that the log or the
    checkpoint shows had started, with the execution's id, in id order."""
    if not again:
        return []
    # Per execution: how many restarts the log holds already, and the first entry its
    # latest attempt wrote (after its latest StepRestarted).
    seen: dict[int, list[Any]] = {}
    for entry in store.events(run_id, 0):
        # Only the entries of the executions that run again are decoded (a long log is read
        # in full once per resume).
        if entry.kind != "event" or not any(int(t) in again for t in _TAG.findall(entry.body)):
            continue
        body = json.loads(entry.body)
        eid = body.get("execution")
        if not isinstance(eid, int) or again.get(eid) != body.get("step"):
            continue
        state = seen.setdefault(eid, [0, None])
        if body.get("qualified_name") == RESTARTED:
            state[0] += 1
            state[1] = None
        elif state[1] is None and "waiting_for" not in body:
            state[1] = entry.seq
    found = []
    for eid in sorted(again):
        if eid in seen:
            restarted, first = seen[eid]
        elif eid in interrupted.in_progress and eid not in interrupted.waiting:
            restarted, first = 0, None
        else:
            continue  # not started (as far as anyone knows), or it takes up its wait
        event = StepRestarted(step_name=again[eid], attempt=restarted + 2, first_event_id=first)
        found.append((eid, event))
    return found


def announce(store: CheckpointStore, run: Run, interrupted: Interrupted) -> None:
    """Write the resumed ``run``'s StepRestarted events to its event log and its stream,
    before any step runs (call it before the run's stream is recorded).

    A store that fails meanwhile costs the announcement, not the resume (it is logged): the
    run is launched already, and goes on as it would have without it.
    """
    try:
        for eid, event in restarts(store, run.run_id, rerun(run), interrupted):
            body = event_body(event, step=event.step_name, execution=eid)
            store.append_event(run.run_id, "event", body)
            run.stream.put(event)
    except CheckpointError as exc:
        logger.warning("Run %s: its restarted steps could not be recorded: %s", run.run_id, exc)


__all__ = ["RESTARTED", "Interrupted", "announce", "rerun", "restarts"]
