"""Checkpoints and durable runs: a run recorded before it starts, a checkpoint per step.

:class:`WorkflowCheckpointer` wraps a workflow. A run started with ``cptr.run(**kw)`` is first
recorded in the store (its id and start event: if that fails, nothing runs), then writes a
:class:`Checkpoint` after every completed step (the Context's ``to_dict()`` at that step
boundary, taken before the step's output events are dispatched, with only the state keys the
step changed). Every stream event is appended to the run's event log when it is written, with
a sequence number given once; a checkpoint does not carry them. Events sent to the run with
``cptr.send_event`` are committed to its inbox before they are delivered, and a checkpoint
records how many it had taken in.

``cptr.run_from(checkpoint=c)`` continues from a checkpoint without re-running the steps before
it, and ``cptr.resume(run_id)`` continues a run from its latest checkpoint, also in a new
process after a crash, when the store is durable (:class:`SqliteCheckpointStore`): completed
steps neither run again nor re-deliver their events; steps that were running re-run; inbox
events the checkpoint had not taken in are delivered again.

Stores implement the :class:`CheckpointStore` protocol: :class:`InMemoryCheckpointStore` (the
default of the checkpointer) and :class:`SqliteCheckpointStore` (one file, WAL mode).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .._public import publish
from ..data.events import Event, StartEvent
from ..data.serialization import BaseSerializer, JsonSerializer
from ..engine._snapshot import register_workflow
from ..engine.context import Context
from ..errors import (
    CheckpointError,
    RunConflictError,
    WorkflowRuntimeError,
)
from . import (
    _budget_runs,
    _checkpoint_query,
    _checkpoint_recording,
    _continuing,
    _idempotency,
    _queuing,
    _versions,
)
from ._budget import Budget, parse_budget
from ._dispatch import Dispatcher
from ._inbox import CANCEL_REQUEST as CANCEL_REQUEST
from ._inbox import RunInbox
from ._memory_store import InMemoryCheckpointStore
from ._queue import RunLimits
from ._records import (
    ENDED,
    STATUSES,
    Checkpoint,
    InboxItem,
    RunInfo,
    RunRecord,
    StoredEvent,
)
from ._restarts import Interrupted
from ._sqlite_store import SqliteCheckpointStore
from ._state_extensions import StateTexts
from ._store import CheckpointStore, OffLoopWrites, event_body
from ._versions import RunCheck

logger = logging.getLogger("batonflow.core")

if TYPE_CHECKING:
    from ..engine.handler import WorkflowHandler
    from ..engine.workflow import Workflow


def _continues(ctx: Context[Any] | None) -> bool:
    """Whether starting with ``ctx`` continues a run in progress (nothing to record)."""
    return ctx is not None and (
        ctx.is_running or (ctx._snapshot is not None and ctx._snapshot.is_running)
    )


class WorkflowCheckpointer(RunInbox):
    """Runs a workflow durably: recorded before it starts, a checkpoint after every step.

    ::

        cptr = WorkflowCheckpointer(workflow=JokeFlow())
        handler = cptr.run(topic="Pirates")
        await handler
        first = cptr.checkpoints[handler.run_id][0]
        handler = cptr.run_from(checkpoint=first)  # re-runs only the steps after it

    With ``store=SqliteCheckpointStore(path)`` runs are durable: after the process dies,
    ``cptr.resume(run_id)`` in a new process continues from the last completed step. Steps that
    had completed are not run again and their stream events are not delivered again; steps
    that were running re-run from their start.

    Only runs started through the checkpointer (``run``, ``start``, ``run_from``, ``resume``)
    are recorded.

    Args:
        workflow: The workflow instance to run.
        store: Where runs go (default: a new :class:`InMemoryCheckpointStore`).
        serializer: Encodes the contexts (default: the workflow's serializer, else JSON).
        checkpoint_serializer: LlamaIndex's name for ``serializer``.
        disabled_steps: Steps that do not write a checkpoint.
        on_end: Called as ``on_end(run_id, status, result, error)`` when a run ends, instead
            of recording its outcome: the caller records it (the server writes it together
            with the run's last log entry, so a crash cannot split the two).
        limits: A :class:`~batonflow.core.RunLimits`: runs are recorded ``queued`` and start
            as the limits allow, counted across every process sharing the store; start them
            with ``await cptr.astart(...)`` (waits for its turn) or ``cptr.enqueue(...)``.
        budget: The token or cost budget of every run started here (a :class:`Budget`, a
            number of tokens, or a text such as ``"5000 tokens"``; see ``docs/budgets.md``);
            ``start(budget=...)`` gives one run another.

    Raises:
        ValueError: A budget that is not one (a negative amount, an unknown unit).
    """

    def __init__(
        self,
        workflow: Workflow,
        store: CheckpointStore | None = None,
        serializer: BaseSerializer | None = None,
        *,
        checkpoint_serializer: BaseSerializer | None = None,
        disabled_steps: Iterable[str] = (),
        on_end: Callable[[str, str, str | None, str | None], None] | None = None,
        limits: RunLimits | None = None,
        budget: Budget | str | int | None = None,
    ) -> None:
        #: The budget of every run started here (``None``: none).
        self.budget = None if budget is None else parse_budget(budget)
        # One bound-method object, so detach() can remove exactly what was added.
        self._listener = self._on_step
        #: Every workflow instance this checkpointer recorded runs of (see the setter).
        self._recorded: list[Workflow] = []
        self.workflow = workflow
        self._on_end = on_end
        self.store: CheckpointStore = store if store is not None else InMemoryCheckpointStore()
        self.serializer: BaseSerializer = (
            serializer or checkpoint_serializer or workflow.serializer or JsonSerializer()
        )
        self._disabled: set[str] = set()
        for name in disabled_steps:
            self.disable_checkpoint(name)
        # Per run in progress in this process only: dropped when the run ends.
        self._seq: dict[str, itertools.count[int]] = {}
        self._live: dict[str, WorkflowHandler] = {}
        self._inbox: dict[str, int] = {}
        #: The checkpointers of this process's child runs of these runs, by child run id.
        self._children_live: dict[str, RunInbox] = {}
        self._released: set[str] = set()
        #: Stream events not written yet, per run, in order: (body, False) when they waited
        #: for an unreachable store, (event, True) for a question (written as its step has
        #: settled, with what the run waits for then).
        self._backlog: dict[str, list[tuple[Any, bool]]] = {}
        #: Per run: the question each wait that asked nothing itself was asked with.
        self._asked: dict[str, dict[str, Event]] = {}
        self._empty_state: tuple[BaseSerializer, dict[str, Any]] | None = None
        #: Per run: the state texts its last checkpoint left (see _state_extensions.py).
        self._texts = StateTexts()
        #: The store, when it writes off the loop too (a step's checkpoint is then awaited).
        self._off_loop = self.store if isinstance(self.store, OffLoopWrites) else None
        self._cancelling: set[asyncio.Future[None]] = set()  # kept referenced until done
        #: The limits runs queue under (``None``: runs start at once, nothing is queued).
        self.limits = limits if limits is not None and limits.queues else None
        self._dispatcher: Dispatcher | None = None
        self._serving: asyncio.Task[None] | None = None
        #: Callers of ``started`` waiting for a queued run to start here.
        self._starting: dict[str, asyncio.Future[WorkflowHandler]] = {}
        #: The store last found to keep a run queue (see ``_queuing._queue_store``).
        self._queue_checked: CheckpointStore | None = None

    @property
    def workflow(self) -> Workflow:
        """The instance runs start on; replacing it (``cptr.workflow = JokeFlow()``, as
        LlamaIndex's checkpointing notebook does) records the new one's runs too."""
        return self._workflow

    @workflow.setter
    def workflow(self, workflow: Workflow) -> None:
        self._workflow = workflow
        # Before anything is decoded (a recorded start event, an inbox event): the classes of
        # the workflow are the ones its runs' data may name.
        register_workflow(workflow)
        if all(w is not workflow for w in self._recorded):
            self._recorded.append(workflow)
        workflow.add_step_listener(self._listener)

    def _launch(self, **kwargs: Any) -> WorkflowHandler:
        # Start the run through the workflow; a workflow with its own checkpoint_store must not
        # record it a second time.
        workflow = self.workflow
        outer = workflow._checkpointing
        workflow._checkpointing = True
        try:
            return workflow.run(**kwargs)
        finally:
            workflow._checkpointing = outer

    def _run_durable(self, ctx: Context[Any] | None, **kwargs: Any) -> WorkflowHandler:
        """``Workflow.run`` of a workflow created with ``checkpoint_store=``."""
        if ctx is not None:
            if ctx.is_running:
                return self._launch(ctx=ctx, **kwargs)  # the live run's own handler
            snap = ctx._snapshot
            if snap is not None and snap.is_running:
                # A restored context continues its run: record it under the same run id.
                run_id = snap.run_id
                self._acquire(run_id, None)
                last = self.store.latest(run_id)
                self._track(run_id, start=(last.seq + 1) if last is not None else 0)
                interrupted = Interrupted.from_snapshot(snap)
                handler = self._launch(ctx=ctx, **kwargs)
                self._attach(
                    handler,
                    inbox_seq=last.inbox_seq if last is not None else 0,
                    resumed=interrupted,
                )
                if last is None:
                    self._put(run_id, None, None, (), dict(handler.ctx.to_dict(self.serializer)))
                self._watch(handler)
                return handler
        return self.run(ctx=ctx, **kwargs)

    def detach(self) -> None:
        """Stop recording: remove this checkpointer's step listener from the workflow.

        Runs already in progress write no further checkpoints; stored ones stay.
        """
        for workflow in self._recorded:
            workflow.remove_step_listener(self._listener)

    # -- enabling -----------------------------------------------------------------------------

    @property
    def enabled_checkpoints(self) -> set[str]:
        """The steps that write a checkpoint when they complete."""
        return set(self.workflow._graph().steps) - self._disabled

    def enable_checkpoint(self, step: str) -> None:
        """Write checkpoints after ``step`` again (all steps are enabled at first).

        Raises:
            CheckpointError: The workflow has no step of that name.
        """
        self._check_step(step)
        self._disabled.discard(step)

    def disable_checkpoint(self, step: str) -> None:
        """Write no checkpoint after ``step``.

        Raises:
            CheckpointError: The workflow has no step of that name.
        """
        self._check_step(step)
        self._disabled.add(step)

    def _check_step(self, step: str) -> None:
        steps = self.workflow._graph().steps
        if step not in steps:
            raise CheckpointError(
                f"{self.workflow.workflow_name} has no step {step!r}; its steps are: "
                f"{', '.join(steps)}."
            )

    # -- running ------------------------------------------------------------------------------

    def run(self, **kwargs: Any) -> WorkflowHandler:
        """Start a durable run; same arguments as ``Workflow.run``.

        The run is recorded in the store (id, start event) before any step runs; if that
        fails nothing runs. See :meth:`start` for the record's extra fields.

        Raises:
            SerializationError: The start event cannot be encoded by the serializer.
            CheckpointError: The store refused the record (a ``StoreFullError`` for a full
                disk, a ``RunConflictError`` for a run id in use).
        """
        return self.start(**kwargs)

    def start(
        self,
        start_event: StartEvent | None = None,
        *,
        run_id: str | None = None,
        ctx: Context[Any] | None = None,
        info: RunInfo | None = None,
        idempotency_key: str | None = None,
        budget: Budget | str | int | None = None,
        **kwargs: Any,
    ) -> WorkflowHandler:
        """Record a run, then start it: :meth:`run` with what the record should also keep.

        Args:
            start_event: The start event (else built from ``kwargs``, as ``Workflow.run``).
            run_id: The run's id (default: a new one).
            ctx: A Context whose state the new run starts with.
            info: The record's extra fields (shown input, traceparent, owner, flow, name).
            idempotency_key: Start at most one run with this key, in this store, for as long
                as the run is kept: a start whose key started a run already raises
                :class:`~batonflow.core.errors.DuplicateStartError` naming that run (and
                holding its handler when it runs here), also when two processes race.
            budget: This run's token or cost budget (default: the checkpointer's); its LLM
                calls are counted and stopped before they would pass it (``docs/budgets.md``).
            **kwargs: The start event's fields, and ``stepwise=``.

        Raises:
            SerializationError: The start event cannot be encoded by the serializer.
            DuplicateStartError: ``idempotency_key`` started a run already; nothing ran.
            IdempotencyKeyError: ``idempotency_key`` started a run with another workflow or
                start event; nothing ran.
            ValueError: An ``idempotency_key`` that is not 1 to 255 characters of text, or a
                budget that is not one.
            CheckpointError: The store refused the record; nothing ran.
        """
        key = None if idempotency_key is None else _idempotency.check_key(idempotency_key)
        if _continues(ctx):
            return self._run_durable(ctx, **kwargs)  # it continues a run: nothing to record
        if self.limits is not None:
            raise WorkflowRuntimeError(
                "This checkpointer queues its runs (it has limits), so a run may not start at "
                "once; use `await cptr.astart(...)`, which waits for its turn, or "
                "cptr.enqueue(...)."
            )
        limit = self._budget_of(budget)
        record, event, stepwise = self._new_run(start_event, run_id, info or RunInfo(), kwargs, key)
        try:
            self.store.create_run(record)
        except RunConflictError:
            self._lost_race(record)
            raise
        self._set_budget(record.run_id, limit)
        return self._begin(record.run_id, event, ctx, stepwise, limit)

    async def astart(
        self,
        start_event: StartEvent | None = None,
        *,
        run_id: str | None = None,
        ctx: Context[Any] | None = None,
        info: RunInfo | None = None,
        idempotency_key: str | None = None,
        budget: Budget | str | int | None = None,
        **kwargs: Any,
    ) -> WorkflowHandler:
        """:meth:`start`, recording the run off the event loop where the store can
        (:class:`~batonflow.core.durable._store.OffLoopWrites`): the loop serves the other
        runs meanwhile. Same arguments, result and errors.

        With ``limits``, the run is recorded ``queued`` and this waits until it starts here
        (``priority=`` and ``key=`` as :meth:`enqueue`); ``QueueFullError`` when its queue is
        full (nothing recorded)."""
        if self.limits is not None and not _continues(ctx):
            return await self._astart_queued(
                start_event,
                run_id=run_id,
                info=info,
                idempotency_key=idempotency_key,
                budget=budget,
                **kwargs,
            )
        key = None if idempotency_key is None else _idempotency.check_key(idempotency_key)
        if _continues(ctx):
            return self._run_durable(ctx, **kwargs)
        limit = self._budget_of(budget)
        # Written off the loop, the key is not looked up first: that read would be a round
        # trip on the loop (PostgreSQL) for every start the client sends with a key. The
        # insert finds a key that started a run (its unique index), and _lost_race answers.
        record, event, stepwise = self._new_run(
            start_event, run_id, info or RunInfo(), kwargs, key, look_up=self._off_loop is None
        )
        try:
            if self._off_loop is None:
                self.store.create_run(record)
            else:
                await self._off_loop.acreate_run(record)
        except RunConflictError:
            self._lost_race(record)
            raise
        self._set_budget(record.run_id, limit)
        return self._begin(record.run_id, event, ctx, stepwise, limit)

    def _lost_race(self, record: RunRecord) -> None:
        """After the store refused ``record``: another start with its key won the race, so
        raise what a start with that key gets (the run it started); else nothing."""
        key = record.idempotency_key
        if key is not None:
            _idempotency.started(self, key, record.workflow_name, record.start_event or "")

    def run_from(self, checkpoint: Checkpoint, **kwargs: Any) -> WorkflowHandler:
        """Continue from ``checkpoint`` as a new run (a new ``run_id``), recording checkpoints.

        The steps before the checkpoint are not run again; the run goes on with the events
        that were queued at that point. If the checkpoint's run had ended there, ``kwargs``
        start a new run with its state (as ``workflow.run(ctx=..., **kwargs)``); otherwise
        they are ignored, except ``run_id``.

        Raises:
            CheckpointError: The checkpoint is for another workflow, or cannot be restored.
        """
        run_id = str(kwargs.pop("run_id", None) or uuid.uuid4().hex)
        return self._continue(checkpoint, run_id, kwargs)

    def resume(self, run_id: str) -> WorkflowHandler:
        """Continue run ``run_id`` from its latest checkpoint (e.g. after the process died).

        Completed steps are not run again and their stream events are not delivered again;
        steps that were running re-run from their start; events committed to the run's inbox
        after the checkpoint are delivered. A run recorded but dead before its first
        checkpoint starts again from its recorded start event. A run that had already ended
        returns its result again.

        Only one process runs a run at a time: while the process that started or resumed it
        still runs it, a resume elsewhere is refused before anything runs (a process killed
        with ``kill -9`` holds nothing).

        A run started by another version of the workflow is checked first (``check``):
        one this code cannot continue is recorded ``interrupted`` with the reason as its
        error, and nothing runs.

        Raises:
            RunBusyError: Another live process runs it (its message names the process).
            IncompatibleRunError: This code cannot continue it (the message says why).
            CheckpointError: The store has no record of that run, or it cannot be restored.
        """
        latest = self.store.latest(run_id)
        record = self.store.run(run_id)
        if latest is None and (record is None or record.start_event is None):
            raise CheckpointError(
                f"No checkpoint for run {run_id!r} in {self.store!r}; start it with "
                "cptr.run(...), or pass the store the run was recorded in."
            )
        if record is not None and record.status not in ENDED:  # an ended run: its result
            found = _versions.check_record(self.workflow, self.serializer, record, latest)
            if not found.ok:
                raise _versions.refuse(self, found)
        if latest is None:
            assert record is not None  # checked above
            return self._restart(record)
        return self._continue(latest, run_id, {})

    def _acquire(self, run_id: str, status: str | None) -> None:
        """Take run ``run_id`` for this process before it continues here (see the store's
        ``acquire``: another live process running it is refused with ``RunBusyError``)."""
        acquire = getattr(self.store, "acquire", None)
        if acquire is not None:
            acquire(run_id)
        elif status in ("interrupted", "failed", "cancelled"):
            self.store.set_status(run_id, "running")  # a store of the protocol alone

    def release(self, run_id: str) -> None:
        """Stop recording run ``run_id`` in this process and leave its record as it is.

        For a shutdown: cancel the run afterwards and it stays ``running`` (or ``waiting``) in
        the store, to be resumed by the next process instead of being recorded as cancelled.
        """
        handler = self._live.pop(run_id, None)
        self._seq.pop(run_id, None)
        self._inbox.pop(run_id, None)
        self._backlog.pop(run_id, None)
        self._asked.pop(run_id, None)
        self._texts.forget(run_id)
        let_go = getattr(self.store, "let_go", None)
        if let_go is not None:
            try:
                let_go(run_id)
            except CheckpointError as exc:  # its holder name stays; a later resume checks it
                logger.warning("Run %s: could not let go of it in the store: %s", run_id, exc)
        if handler is not None:
            handler._run.stream.recorder = None
            if not handler.is_done():
                self._released.add(run_id)

    def flush_events(self, run_id: str) -> None:
        """Write the stream events of run ``run_id`` that waited for an unreachable store.

        The server calls it before it records the run's end, so the log ends with its end.

        Raises:
            StoreUnreachableError: The store is still away (the events keep waiting).
        """
        self._flush_events(run_id)

    # Whether this code can continue a run (started by another version): _versions.py.
    check = _versions.check_run
    check_runs = _versions.check_runs

    @staticmethod
    def run_info() -> RunInfo:
        """A record's extra fields, all left to their defaults (see :class:`RunInfo`)."""
        return RunInfo()

    # The run queue, when the checkpointer has limits: _queuing.py.
    enqueue = _queuing.enqueue
    started = _queuing.started
    serve_queue = _queuing.serve_queue
    close_queue = _queuing.close_queue
    queue_place = _queuing.queue_place
    cancel_queued = _queuing.cancel_queued
    start_claimed = _queuing.start_claimed
    _astart_queued = _queuing.astart_queued

    # Continuing a run from a checkpoint (its own, or a fork's): _continuing.py.
    _restart = _continuing.restart
    _continue = _continuing.continue_from
    fork = _continuing.fork

    # Recording the run as it goes: _checkpoint_recording.py.
    _new_run = _checkpoint_recording.new_run
    _begin = _checkpoint_recording.begin
    _track = _checkpoint_recording.track
    _attach = _checkpoint_recording.attach
    _waiting_snapshot = _checkpoint_recording.waiting_snapshot
    _ask_again = _checkpoint_recording.ask_again
    _unwait = _checkpoint_recording.unwait
    _flush_events = _checkpoint_recording.flush_events
    _flush_later = _checkpoint_recording.flush_later
    _on_step = _checkpoint_recording.on_step
    _changes = _checkpoint_recording.changes
    _put = _checkpoint_recording.put
    _watch = _checkpoint_recording.watch

    # Budgets: _budget.py.
    _budget_of = _budget_runs.budget_of
    _set_budget = _budget_runs.set_run_budget
    raise_budget = _budget_runs.raise_budget
    usage = _budget_runs.run_usage

    # Reading the checkpoints back: _checkpoint_query.py.
    checkpoints = property(_checkpoint_query.checkpoints)
    filter_checkpoints = _checkpoint_query.filter_checkpoints


__all__ = [
    "STATUSES",
    "Budget",
    "Checkpoint",
    "CheckpointStore",
    "InMemoryCheckpointStore",
    "InboxItem",
    "RunCheck",
    "RunInfo",
    "RunRecord",
    "SqliteCheckpointStore",
    "StoredEvent",
    "WorkflowCheckpointer",
    "event_body",
]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
