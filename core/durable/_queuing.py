"""A checkpointer with limits: runs queued in its store, started as the limits allow.

These functions are members of :class:`~batonflow.core.checkpoints.WorkflowCheckpointer`
(bound in its class body), as the recording ones are. ``WorkflowCheckpointer(wf, store,
limits=RunLimits(concurrency=2))`` records each start ``queued`` (:meth:`enqueue`) and starts
it here once the limits let it (:class:`~._dispatch.Dispatcher`), counting the runs of every
process that shares the store: the same queue ``batonflow serve`` replicas pull from.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any

from ..data.events import StartEvent
from ..errors import (
    CheckpointError,
    LeaseLostError,
    QueueFullError,
    RunBusyError,
    RunConflictError,
    WorkflowCancelledByUser,
)
from . import _idempotency
from ._dispatch import Dispatcher
from ._queue import QueueEntry, QueuePlace, QueueStore
from ._records import RunRecord
from ._store import OffLoopWrites

if TYPE_CHECKING:
    from ..engine.handler import WorkflowHandler
    from .checkpoints import RunInfo, WorkflowCheckpointer


def _queue_store(self: WorkflowCheckpointer) -> QueueStore:
    store = self.store
    if self._queue_checked is store:
        return store  # type: ignore[return-value]  # checked below, once per store
    if not isinstance(store, QueueStore):
        raise CheckpointError(
            f"{self.store!r} keeps no run queue, so runs cannot wait for their limits in it; "
            "use InMemoryCheckpointStore, SqliteCheckpointStore or PostgresCheckpointStore."
        )
    self._queue_checked = store  # a runtime Protocol check costs more than a run's write
    return store


def enqueue(
    self: WorkflowCheckpointer,
    start_event: StartEvent | None = None,
    *,
    run_id: str | None = None,
    info: RunInfo | None = None,
    idempotency_key: str | None = None,
    priority: int = 0,
    key: str | None = None,
    budget: Any = None,
    **kwargs: Any,
) -> str:
    """Record a run ``queued``; it starts here (or in any process serving the same store's
    queue) once the limits let it. Returns its id.

    Args:
        start_event: The start event (else built from ``kwargs``, as ``Workflow.run``).
        run_id: The run's id (default: a new one).
        info: The record's extra fields (see :meth:`start`).
        idempotency_key: One run per key (see :meth:`start`).
        priority: Higher leaves the queue first (then the oldest first).
        key: The run's key for ``key_concurrency`` (default: the ``key_field`` start field).
        budget: The run's budget (default: the checkpointer's; see :meth:`start`).
        **kwargs: The start event's fields.

    Raises:
        QueueFullError: ``max_queued`` runs wait already; nothing was recorded. Its
            ``retry_after`` is the limits' :meth:`~RunLimits.admission_wait`.
        DuplicateStartError: ``idempotency_key`` started a run already; nothing was recorded.
        CheckpointError: The store refused the record, or keeps no queue.
    """
    limits = self.limits
    if limits is None:
        raise CheckpointError(
            "This checkpointer has no limits, so it queues nothing; create it with "
            "WorkflowCheckpointer(workflow, store, limits=RunLimits(...)) or call start()."
        )
    store = _queue_store(self)
    checked = None if idempotency_key is None else _idempotency.check_key(idempotency_key)
    if key is None:
        key = limits.key_of(kwargs)
    if info is None:
        info = type(self).run_info()
    limit = self._budget_of(budget)
    record, _, _ = self._new_run(start_event, run_id, info, kwargs, checked)
    record = dataclasses.replace(record, status="queued")
    try:
        store.enqueue(record, QueueEntry(key, int(priority)), limits.max_queued)
    except RunConflictError:
        self._lost_race(record)
        raise
    except QueueFullError as exc:
        if exc.retry_after is None:
            exc.retry_after = limits.admission_wait()
        raise
    self._set_budget(record.run_id, limit)  # kept before the run is offered to this process
    if self._dispatcher is not None:
        self._dispatcher.wake()
    return record.run_id


async def astart_queued(
    self: WorkflowCheckpointer, start_event: StartEvent | None = None, **kwargs: Any
) -> WorkflowHandler:
    """:meth:`enqueue` (off the loop where the store writes so), then wait until the run
    starts here; its handler."""
    if isinstance(self.store, OffLoopWrites):
        run_id = await asyncio.to_thread(self.enqueue, start_event, **kwargs)
    else:
        run_id = self.enqueue(start_event, **kwargs)
    return await self.started(run_id)


async def started(self: WorkflowCheckpointer, run_id: str) -> WorkflowHandler:
    """Wait until queued run ``run_id`` starts in this process; its handler.

    The checkpointer serves its queue while someone waits (a task of its own, stopped with
    :meth:`close_queue`). A run another process starts, or that is cancelled while queued,
    never starts here: wait with a timeout, or read its record.
    """
    live = self._live.get(run_id)
    if live is not None:
        return live
    waiter = self._starting.get(run_id)
    if waiter is None:
        waiter = self._starting[run_id] = asyncio.get_running_loop().create_future()
    serve_queue(self)
    return await asyncio.shield(waiter)


def serve_queue(self: WorkflowCheckpointer) -> Dispatcher:
    """Start serving the queue in the running loop (once); the dispatcher."""
    dispatcher = self._dispatcher
    if dispatcher is None:
        assert self.limits is not None  # enqueue() checked
        dispatcher = self._dispatcher = Dispatcher(
            _queue_store(self),
            self.workflow.workflow_name,
            self.limits,
            start=lambda record: _start_claimed(self, record),
            running=lambda: len(self._live),
        )
    if self._serving is None or self._serving.done():
        self._serving = asyncio.get_running_loop().create_task(
            dispatcher.serve(), name=f"batonflow-queue-{self.workflow.workflow_name}"
        )
    return dispatcher


def start_claimed(self: WorkflowCheckpointer, record: RunRecord) -> WorkflowHandler:
    """Start a run this checkpointer's store just claimed from the run queue (its record as
    claimed); its handler. The store holds the run already: nothing else is written first."""
    return self._restart(record, claimed=True)


def _start_claimed(self: WorkflowCheckpointer, record: RunRecord) -> None:
    try:
        handler = start_claimed(self, record)
    except (RunBusyError, LeaseLostError):
        raise  # another process holds the run: it starts it there
    except Exception as exc:
        # The claim took the run out of the queue: say why it did not start (resumable by code
        # that can start it), and tell whoever waits for it here instead of leaving them waiting.
        waiter = self._starting.pop(record.run_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        # The store may be away too: the dispatcher logs that error with this one as its cause.
        self.store.finish_run(record.run_id, "interrupted", error=f"It could not start: {exc}")
        raise
    dispatcher = self._dispatcher
    if dispatcher is not None:
        handler.add_done_callback(lambda _: dispatcher.wake())
    waiter = self._starting.pop(record.run_id, None)
    if waiter is not None and not waiter.done():
        waiter.set_result(handler)


async def close_queue(self: WorkflowCheckpointer) -> None:
    """Stop serving the queue here (runs already started go on; queued ones stay queued)."""
    task, self._serving = self._serving, None
    if task is not None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def cancel_queued(self: WorkflowCheckpointer, run_id: str) -> bool:
    """Cancel run ``run_id`` if it is still queued: it never starts; whether it was queued.

    A caller waiting in :meth:`started` for it gets ``WorkflowCancelledByUser``.
    """
    done = _queue_store(self).cancel_queued(run_id, "The run was cancelled while queued.")
    waiter = self._starting.pop(run_id, None)
    if done and waiter is not None and not waiter.done():
        waiter.set_exception(WorkflowCancelledByUser(f"Run {run_id} was cancelled while queued."))
    return done


def queue_place(self: WorkflowCheckpointer, run_id: str) -> QueuePlace | None:
    """Where queued run ``run_id`` waits (position, the limit it waits on), else ``None``."""
    return _queue_store(self).queue_place(run_id, self.limits)


__all__ = [
    "astart_queued",
    "cancel_queued",
    "close_queue",
    "enqueue",
    "queue_place",
    "serve_queue",
    "start_claimed",
    "started",
]
