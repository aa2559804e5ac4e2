"""Continuing a run from a checkpoint: a resume, ``run_from``, and a fork.

These functions are members of :class:`~batonflow.core.checkpoints.WorkflowCheckpointer`
(bound in its class body), as the recording ones are.

A **fork** (``cptr.fork(run_id, at=seq)``) is time travel: a new run that continues from any
checkpoint of any run, the steps before it never run again, optionally with its state changed
(``state={"path": value}``, each path set as ``ctx.store.set`` would) or with another event
pending instead of the ones queued at that checkpoint (``event=``). The new run's record names
its parent and the checkpoint it continues from (``parent_run_id``, ``parent_seq``); the
parent is not touched. Forking at the checkpoint a step wrote continues after that step.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..data.events import Event, StartEvent
from ..engine.context import Context
from ..errors import CheckpointError, ContextSerdeError, IncompatibleRunError
from . import _versions
from ._records import Checkpoint, RunRecord
from ._restarts import Interrupted
from ._store import OffLoopWrites

if TYPE_CHECKING:
    from ..engine.handler import WorkflowHandler
    from .checkpoints import WorkflowCheckpointer


@dataclass(frozen=True, slots=True)
class Fork:
    """What a fork changes at its checkpoint.

    Attributes:
        parent: The run forked from.
        state: State paths to set before the new run goes on (``{"user.name": "Ada"}``).
        event: An event to make pending instead of the ones queued at the checkpoint.
    """

    parent: str
    state: Mapping[str, Any] = field(default_factory=dict)
    event: Event | None = None


def restart(
    self: WorkflowCheckpointer, record: RunRecord, *, claimed: bool = False
) -> WorkflowHandler:
    """Run a recorded run that died before its first checkpoint from its start event.

    ``claimed``: a run this store just took out of the run queue (it holds it already); the
    events sent to it while it was queued wait in its inbox and are delivered now, in order.
    """
    assert record.start_event is not None  # resume() checked it
    try:
        event = self.serializer.deserialize(record.start_event)
    except ContextSerdeError as exc:
        raise CheckpointError(
            f"Run {record.run_id}'s recorded start event cannot be restored: {exc}"
        ) from exc
    if not isinstance(event, StartEvent):
        raise CheckpointError(
            f"Run {record.run_id}'s recorded start event decoded to "
            f"{type(event).__name__}, not a StartEvent; delete the run and start it again."
        )
    if not claimed:
        self._acquire(record.run_id, record.status)
    self._track(record.run_id, start=1)
    handler = self._launch(run_id=record.run_id, start_event=event)
    self._attach(handler, resumed=None if claimed else Interrupted())
    if claimed and isinstance(self.store, OffLoopWrites):
        self._deliver_off_loop(record.run_id)  # a queued run's start is on the dispatcher's loop
    else:
        self._deliver(record.run_id)
    self._watch(handler)
    return handler


def fork(
    self: WorkflowCheckpointer,
    run_id: str,
    at: int | None = None,
    *,
    state: Mapping[str, Any] | None = None,
    event: Event | None = None,
    new_run_id: str | None = None,
) -> WorkflowHandler:
    """Start a new run that continues run ``run_id`` from its checkpoint ``at``.

    The steps before the checkpoint do not run again (forking at the checkpoint a step wrote
    continues after that step); the run goes on with the events queued there, or with
    ``event`` instead. The new run's record names its parent and fork point
    (``parent_run_id``, ``parent_seq``); the parent run is left as it is, running or ended.

    Args:
        run_id: The run to fork (of this checkpointer's workflow, in its store).
        at: The checkpoint's ``seq`` (default: the run's latest).
        state: State paths to set first, as ``ctx.store.set(path, value)`` would (typed
            state validates them).
        event: An event to make pending instead of the ones queued at the checkpoint (the
            steps that were in progress there still run again).
        new_run_id: The new run's id (default: a new one).

    Returns:
        The new run's handler.

    Raises:
        CheckpointError: The run or the checkpoint is not in the store, or cannot be restored.
        StateError: A ``state`` value the state does not take; nothing was recorded.
    """
    checkpoints = self.store.list(run_id)
    if not checkpoints:
        raise CheckpointError(
            f"Run {run_id!r} has no checkpoint in {self.store!r} to fork from; fork a run "
            "that was run durably (through a WorkflowCheckpointer on this store)."
        )
    found = checkpoints[-1] if at is None else next((c for c in checkpoints if c.seq == at), None)
    if found is None:
        seqs = ", ".join(str(c.seq) for c in checkpoints)
        raise CheckpointError(
            f"Run {run_id!r} has no checkpoint {at}; its checkpoints are {seqs}: fork at one "
            "of those (GET /runs/{id}/steps names each step's checkpoint)."
        )
    plan = Fork(run_id, dict(state or {}), event)
    return continue_from(self, found, str(new_run_id or uuid.uuid4().hex), {}, plan)


def _restored(
    self: WorkflowCheckpointer, checkpoint: Checkpoint, run_id: str, plan: Fork | None
) -> tuple[Context[Any], Any]:
    """The checkpoint's context under ``run_id`` (changed as ``plan`` says), its StopEvent."""
    data = dict(checkpoint.ctx_data)
    data["run_id"] = run_id
    final_text = checkpoint.final_event
    if plan is not None and plan.event is not None:
        data["queue"] = []  # the new event is the one pending
        data.pop("stop_event", None)
        final_text = None
    try:
        ctx = Context.from_dict(self.workflow, data, serializer=self.serializer)
        final = self.serializer.deserialize(final_text) if final_text is not None else None
    except ContextSerdeError as exc:
        raise CheckpointError(
            f"Checkpoint {checkpoint.id} (run {checkpoint.run_id}, after step "
            f"{checkpoint.step_name}) cannot be restored: {exc}"
        ) from exc
    if plan is not None:
        for path, value in plan.state.items():
            ctx.store._set(str(path), value)
        if plan.event is not None:
            ctx.send_event(plan.event)
    return ctx, final


def _check_version(
    self: WorkflowCheckpointer, checkpoint: Checkpoint, same_run: bool, plan: Fork | None
) -> None:
    """Refuse, before anything runs, a checkpoint this code cannot continue (``_versions``);
    a resume (``same_run``) checked its run already."""
    if same_run:
        return
    source = self.store.run(checkpoint.run_id)
    if source is None:  # a checkpoint of another store: its data says it all
        source = RunRecord(checkpoint.run_id, checkpoint.workflow_name, "running", 0.0, 0.0)
    data = dict(checkpoint.ctx_data)
    if plan is not None and plan.event is not None:
        data["queue"] = []  # the fork's event replaces them
    found = _versions.check_record(self.workflow, self.serializer, source, checkpoint, data)
    if not found.ok:
        raise IncompatibleRunError(found.message(), found.reasons)


def continue_from(
    self: WorkflowCheckpointer,
    checkpoint: Checkpoint,
    run_id: str,
    kwargs: dict[str, Any],
    plan: Fork | None = None,
) -> WorkflowHandler:
    """Continue from ``checkpoint`` as run ``run_id`` (its own run: a resume; another: a new
    run, a fork when ``plan`` is given)."""
    name = self.workflow.workflow_name
    if checkpoint.workflow_name != name:
        raise CheckpointError(
            f"Checkpoint {checkpoint.id} was recorded by workflow "
            f"{checkpoint.workflow_name!r}, not {name!r}; continue it with a "
            f"{checkpoint.workflow_name} instance."
        )
    same_run = run_id == checkpoint.run_id
    _check_version(self, checkpoint, same_run, plan)
    ctx, final = _restored(self, checkpoint, run_id, plan)
    last = checkpoint if same_run else self.store.latest(run_id)
    if last is None:
        record = self.store.run(checkpoint.run_id)
        # The continuation of a run is run as it was: a server's under its served name
        # (so another replica takes it over), with the same way to load its workflow.
        self.store.create_run(
            RunRecord(
                run_id,
                record.workflow_name if record is not None else name,
                "running",
                time.time(),
                time.time(),
                start_event=record.start_event if record is not None else None,
                input=record.input if record is not None else None,
                owner=record.owner if record is not None else None,
                pid=os.getpid(),
                flow_ref=record.flow_ref if record is not None else None,
                parent_run_id=plan.parent if plan is not None else None,
                parent_seq=checkpoint.seq if plan is not None else None,
                parent_kind="fork" if plan is not None else None,
                workflow_version=self.workflow.version,
            )
        )
    else:
        record = self.store.run(run_id)
        self._acquire(run_id, record.status if record is not None else None)
    self._track(run_id, start=(last.seq + 1) if last is not None else 0)
    if final is not None and ctx._snapshot is not None:
        # The run had ended at this step: hand its StopEvent back instead of waiting.
        ctx.send_event(final)
    handler = self._launch(ctx=ctx, **kwargs)
    self._attach(
        handler,
        inbox_seq=checkpoint.inbox_seq if same_run else 0,
        resumed=Interrupted.from_data(checkpoint.ctx_data) if same_run else None,
    )
    if last is None:
        self._put(run_id, None, None, (), dict(handler.ctx.to_dict(self.serializer)))
    if same_run:
        self._deliver(run_id)
    self._watch(handler)
    return handler


__all__ = ["Fork", "continue_from", "fork", "restart"]
