"""Checkpoints: a snapshot of the run after each completed step, to continue it later.

:class:`WorkflowCheckpointer` wraps a workflow. Runs started with ``cptr.run(**kw)`` record a
:class:`Checkpoint` after every completed step (the Context's ``to_dict()`` at that step
boundary, taken before the step's output events are dispatched). ``cptr.run_from(checkpoint=c)``
continues from one of them without re-running the steps before it, and ``cptr.resume(run_id)``
continues a run from its latest checkpoint, also in a new process after a crash, when the
checkpoints live in a durable store (:class:`SqliteCheckpointStore`).

Stores implement the :class:`CheckpointStore` protocol: :class:`InMemoryCheckpointStore` (the
default of the checkpointer) and :class:`SqliteCheckpointStore` (one file, WAL mode).
"""

from __future__ import annotations

import asyncio
import builtins
import itertools
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ._sqlite_store import SqliteCheckpointStore
from .errors import (
    CheckpointError,
    ContextSerdeError,
    SerializationError,
    WorkflowCancelledByUser,
    WorkflowTimeoutError,
)
from .events import Event, StopEvent
from .serialization import BaseSerializer, JsonSerializer, qualified_name

if TYPE_CHECKING:
    from .context import Context
    from .handler import WorkflowHandler
    from .hooks import StepBoundary
    from .workflow import Workflow


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The run as it was right after one step completed.

    Attributes:
        id: Unique id of the checkpoint.
        run_id: The run it belongs to.
        workflow_name: The workflow that ran.
        step_name: The step that had just completed (``None`` for the snapshot taken when a
            durable run starts, before any step).
        input_event_type: ``"module:Class"`` of the event the step ran on.
        output_event_types: ``"module:Class"`` of each event the step returned.
        created_at: Wall-clock time (``time.time()``) the checkpoint was taken.
        ctx_data: ``ctx.to_dict()`` at the step boundary: state, queued and in-progress events,
            buffers, waiters (JSON-compatible).
        seq: Position in the run (0 for the start snapshot, then 1, 2, ...).
        final_event: The serialized StopEvent when this step ended the run, else ``None``.
        input_event: The event the step ran on (the seeds' LlamaIndex name). Kept in memory
            only: ``None`` for checkpoints read back from a store's file.
        output_event: The event the step returned (the first one, for a fan-out), ``None``
            when it returned nothing; in memory only, as ``input_event``.
    """

    id: str
    run_id: str
    workflow_name: str
    step_name: str | None
    input_event_type: str | None
    output_event_types: tuple[str, ...]
    created_at: float
    ctx_data: dict[str, Any] = field(repr=False)
    seq: int = 0
    final_event: str | None = field(default=None, repr=False)
    input_event: Event | None = field(default=None, repr=False, compare=False)
    output_event: Event | None = field(default=None, repr=False, compare=False)

    @property
    def id_(self) -> str:
        """LlamaIndex's name for :attr:`id`."""
        return self.id

    @property
    def last_completed_step(self) -> str | None:
        """LlamaIndex's name for :attr:`step_name`."""
        return self.step_name

    @property
    def ctx_state(self) -> dict[str, Any]:
        """LlamaIndex's name for :attr:`ctx_data`."""
        return self.ctx_data


@dataclass(frozen=True, slots=True)
class RunRecord:
    """What a store knows about one run.

    Attributes:
        run_id: The run's id.
        workflow_name: The workflow that ran.
        status: ``running`` (also: crashed before finishing), ``completed``, ``failed``,
            ``cancelled`` or ``timed_out``.
        created_at: When its first checkpoint was written.
        updated_at: When it last changed.
        result: The serialized result of a completed run, if it could be serialized.
        error: ``"ExceptionType: message"`` of a run that did not complete.
    """

    run_id: str
    workflow_name: str
    status: str
    created_at: float
    updated_at: float
    result: str | None = None
    error: str | None = None


@runtime_checkable
class CheckpointStore(Protocol):
    """Where checkpoints are kept. Methods are synchronous and must be quick (they run in the
    event loop, at every step boundary)."""

    def put(self, checkpoint: Checkpoint) -> None:
        """Store a checkpoint; its run becomes ``running``."""
        ...

    def list(self, run_id: str) -> builtins.list[Checkpoint]:
        """A run's checkpoints, oldest first (empty for an unknown run)."""
        ...

    def latest(self, run_id: str) -> Checkpoint | None:
        """A run's most recent checkpoint."""
        ...

    def get(self, checkpoint_id: str) -> Checkpoint:
        """One checkpoint; raises ``CheckpointError`` when unknown."""
        ...

    def runs(
        self, *, workflow_name: str | None = None, status: str | None = None
    ) -> builtins.list[RunRecord]:
        """The runs with checkpoints, oldest first, optionally filtered."""
        ...

    def run(self, run_id: str) -> RunRecord | None:
        """One run's record."""
        ...

    def finish_run(
        self, run_id: str, status: str, *, result: str | None = None, error: str | None = None
    ) -> None:
        """Record how a run ended."""
        ...

    def delete(self, run_id: str) -> None:
        """Forget a run and its checkpoints."""
        ...


class InMemoryCheckpointStore:
    """Checkpoints in a dict: fast, gone with the process (the checkpointer's default)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_run: dict[str, builtins.list[Checkpoint]] = {}
        self._by_id: dict[str, Checkpoint] = {}
        self._seqs: dict[str, set[int]] = {}
        self._runs: dict[str, RunRecord] = {}

    def put(self, checkpoint: Checkpoint) -> None:
        """Store a checkpoint; its run becomes ``running``.

        Raises:
            CheckpointError: The id or the run's seq is taken.
        """
        with self._lock:
            taken = self._by_run.setdefault(checkpoint.run_id, [])
            seqs = self._seqs.setdefault(checkpoint.run_id, set())
            if checkpoint.id in self._by_id or checkpoint.seq in seqs:
                raise CheckpointError(
                    f"Run {checkpoint.run_id} already has checkpoint {checkpoint.id} or seq "
                    f"{checkpoint.seq}; use a new id and the next seq."
                )
            taken.append(checkpoint)
            seqs.add(checkpoint.seq)
            self._by_id[checkpoint.id] = checkpoint
            now = time.time()
            old = self._runs.get(checkpoint.run_id)
            self._runs[checkpoint.run_id] = RunRecord(
                checkpoint.run_id,
                checkpoint.workflow_name,
                "running",
                old.created_at if old else now,
                now,
            )

    def list(self, run_id: str) -> builtins.list[Checkpoint]:
        """A run's checkpoints, oldest first."""
        with self._lock:
            return builtins.list(self._by_run.get(run_id, ()))

    def latest(self, run_id: str) -> Checkpoint | None:
        """A run's most recent checkpoint, or ``None``."""
        with self._lock:
            found = self._by_run.get(run_id)
            return found[-1] if found else None

    def get(self, checkpoint_id: str) -> Checkpoint:
        """One checkpoint by id.

        Raises:
            CheckpointError: No checkpoint has that id.
        """
        with self._lock:
            found = self._by_id.get(checkpoint_id)
        if found is None:
            raise CheckpointError(
                f"No checkpoint {checkpoint_id!r} in this store; list a run's checkpoints with "
                "store.list(run_id)."
            )
        return found

    def runs(
        self, *, workflow_name: str | None = None, status: str | None = None
    ) -> builtins.list[RunRecord]:
        """Runs with checkpoints, oldest first, optionally by workflow name and status."""
        with self._lock:
            records = builtins.list(self._runs.values())
        return [
            r
            for r in sorted(records, key=lambda r: (r.created_at, r.run_id))
            if (workflow_name is None or r.workflow_name == workflow_name)
            and (status is None or r.status == status)
        ]

    def run(self, run_id: str) -> RunRecord | None:
        """One run's record, or ``None``."""
        with self._lock:
            return self._runs.get(run_id)

    def finish_run(
        self, run_id: str, status: str, *, result: str | None = None, error: str | None = None
    ) -> None:
        """Record how a run ended."""
        with self._lock:
            old = self._runs.get(run_id)
            if old is not None:
                self._runs[run_id] = RunRecord(
                    run_id, old.workflow_name, status, old.created_at, time.time(), result, error
                )

    def delete(self, run_id: str) -> None:
        """Forget a run and its checkpoints."""
        with self._lock:
            for cp in self._by_run.pop(run_id, ()):
                self._by_id.pop(cp.id, None)
            self._seqs.pop(run_id, None)
            self._runs.pop(run_id, None)


class WorkflowCheckpointer:
    """Runs a workflow with a checkpoint after every completed step.

    ::

        cptr = WorkflowCheckpointer(workflow=JokeFlow())
        handler = cptr.run(topic="Pirates")
        await handler
        first = cptr.checkpoints[handler.run_id][0]
        handler = cptr.run_from(checkpoint=first)  # re-runs only the steps after it

    With ``store=SqliteCheckpointStore(path)`` runs are durable: after the process dies,
    ``cptr.resume(run_id)`` in a new process continues from the last completed step. Steps that
    had completed are not run again; steps that were running re-run from their start.

    Only runs started through the checkpointer (``run``, ``run_from``, ``resume``) are recorded.

    Args:
        workflow: The workflow instance to run.
        store: Where checkpoints go (default: a new :class:`InMemoryCheckpointStore`).
        serializer: Encodes the contexts (default: the workflow's serializer, else JSON).
        checkpoint_serializer: LlamaIndex's name for ``serializer``.
        disabled_steps: Steps that do not write a checkpoint.
    """

    def __init__(
        self,
        workflow: Workflow,
        store: CheckpointStore | None = None,
        serializer: BaseSerializer | None = None,
        *,
        checkpoint_serializer: BaseSerializer | None = None,
        disabled_steps: Iterable[str] = (),
    ) -> None:
        self.workflow = workflow
        self.store: CheckpointStore = store if store is not None else InMemoryCheckpointStore()
        self.serializer: BaseSerializer = (
            serializer or checkpoint_serializer or workflow.serializer or JsonSerializer()
        )
        self._disabled: set[str] = set()
        for name in disabled_steps:
            self.disable_checkpoint(name)
        self._seq: dict[str, itertools.count[int]] = {}
        self._run_ids: builtins.list[str] = []
        # One bound-method object, so detach() can remove exactly what was added.
        self._listener = self._on_step
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
                last = self.store.latest(run_id)
                self._track(run_id, start=(last.seq + 1) if last is not None else 0)
                handler = self._launch(ctx=ctx, **kwargs)
                if last is None:
                    self._put(run_id, None, None, (), dict(handler.ctx.to_dict(self.serializer)))
                self._watch(handler)
                return handler
        return self.run(ctx=ctx, **kwargs)

    def detach(self) -> None:
        """Stop recording: remove this checkpointer's step listener from the workflow.

        Runs already in progress write no further checkpoints; stored ones stay.
        """
        self.workflow.remove_step_listener(self._listener)

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
        """Start a checkpointed run; same arguments as ``Workflow.run``.

        A start snapshot (``seq`` 0, ``step_name`` None) is stored first, so a durable run that
        dies in its first step can still be resumed. It is not listed in :attr:`checkpoints`.
        """
        run_id = str(kwargs.pop("run_id", None) or uuid.uuid4().hex)
        self._track(run_id, start=0)
        handler = self._launch(run_id=run_id, **kwargs)
        self._put(
            run_id,
            step_name=None,
            input_type=None,
            outputs=(),
            ctx_data=dict(handler.ctx.to_dict(self.serializer)),
        )
        self._watch(handler)
        return handler

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

        Completed steps are not run again; steps that were running re-run from their start.
        A run that had already ended returns its result again.

        Raises:
            CheckpointError: The store has no checkpoint for that run, or it cannot be restored.
        """
        latest = self.store.latest(run_id)
        if latest is None:
            raise CheckpointError(
                f"No checkpoint for run {run_id!r} in {self.store!r}; start it with "
                "cptr.run(...), or pass the store the run was recorded in."
            )
        return self._continue(latest, run_id, {})

    def _continue(
        self, checkpoint: Checkpoint, run_id: str, kwargs: dict[str, Any]
    ) -> WorkflowHandler:
        from .context import Context

        name = self.workflow.workflow_name
        if checkpoint.workflow_name != name:
            raise CheckpointError(
                f"Checkpoint {checkpoint.id} was recorded by workflow "
                f"{checkpoint.workflow_name!r}, not {name!r}; continue it with a "
                f"{checkpoint.workflow_name} instance."
            )
        data = dict(checkpoint.ctx_data)
        data["run_id"] = run_id
        try:
            ctx = Context.from_dict(self.workflow, data, serializer=self.serializer)
            final = (
                self.serializer.deserialize(checkpoint.final_event)
                if checkpoint.final_event is not None
                else None
            )
        except ContextSerdeError as exc:
            raise CheckpointError(
                f"Checkpoint {checkpoint.id} (run {checkpoint.run_id}, after step "
                f"{checkpoint.step_name}) cannot be restored: {exc}"
            ) from exc
        last = self.store.latest(run_id)
        self._track(run_id, start=(last.seq + 1) if last is not None else 0)
        if final is not None and ctx._snapshot is not None:
            # The run had ended at this step: hand its StopEvent back instead of waiting.
            ctx.send_event(final)
        handler = self._launch(ctx=ctx, **kwargs)
        if last is None:
            self._put(run_id, None, None, (), dict(handler.ctx.to_dict(self.serializer)))
        self._watch(handler)
        return handler

    # -- recording ----------------------------------------------------------------------------

    def _track(self, run_id: str, start: int) -> None:
        self._seq[run_id] = itertools.count(start)
        if run_id not in self._run_ids:
            self._run_ids.append(run_id)

    def _on_step(self, boundary: StepBoundary) -> None:
        if boundary.run_id not in self._seq or boundary.step_name in self._disabled:
            return
        final = next((e for e in boundary.output_events if isinstance(e, StopEvent)), None)
        self._put(
            boundary.run_id,
            boundary.step_name,
            qualified_name(type(boundary.input_event)),
            boundary.output_events,
            dict(boundary.ctx.to_dict(self.serializer)),
            final_event=self.serializer.serialize(final) if final is not None else None,
            created_at=boundary.finished_at,
            events=(boundary.input_event, next(iter(boundary.output_events), None)),
        )

    def _put(
        self,
        run_id: str,
        step_name: str | None,
        input_type: str | None,
        outputs: Iterable[Event],
        ctx_data: dict[str, Any],
        *,
        final_event: str | None = None,
        created_at: float | None = None,
        events: tuple[Event | None, Event | None] = (None, None),
    ) -> None:
        self.store.put(
            Checkpoint(
                id=uuid.uuid4().hex,
                run_id=run_id,
                workflow_name=self.workflow.workflow_name,
                step_name=step_name,
                input_event_type=input_type,
                output_event_types=tuple(qualified_name(type(e)) for e in outputs),
                created_at=created_at if created_at is not None else time.time(),
                ctx_data=ctx_data,
                seq=next(self._seq[run_id]),
                final_event=final_event,
                input_event=events[0],
                output_event=events[1],
            )
        )

    def _watch(self, handler: WorkflowHandler) -> None:
        run_id = handler.run_id

        def finished(fut: asyncio.Future[Any]) -> None:
            if fut.cancelled():
                self.store.finish_run(run_id, "cancelled", error="CancelledError")
                return
            error = fut.exception()
            if error is None:
                try:
                    result = self.serializer.serialize(fut.result())
                except SerializationError:
                    result = None
                self.store.finish_run(run_id, "completed", result=result)
                return
            status = (
                "cancelled"
                if isinstance(error, WorkflowCancelledByUser)
                else "timed_out"
                if isinstance(error, WorkflowTimeoutError)
                else "failed"
            )
            self.store.finish_run(run_id, status, error=f"{type(error).__name__}: {error}")

        handler.add_done_callback(finished)

    # -- reading ------------------------------------------------------------------------------

    @property
    def checkpoints(self) -> dict[str, builtins.list[Checkpoint]]:
        """The step checkpoints of the runs this checkpointer started, by run id."""
        return {
            run_id: [c for c in self.store.list(run_id) if c.step_name is not None]
            for run_id in self._run_ids
        }

    def filter_checkpoints(
        self,
        run_id: str | None = None,
        last_completed_step: str | None = None,
        input_event_type: type[Event] | str | None = None,
        output_event_type: type[Event] | str | None = None,
    ) -> builtins.list[Checkpoint]:
        """The checkpoints matching every given criterion, oldest first within a run.

        Args:
            run_id: Only this run.
            last_completed_step: Only checkpoints taken after this step.
            input_event_type: Only steps that ran on this event class (or its name).
            output_event_type: Only steps that returned this event class (or its name).
        """
        wanted_in = _type_name(input_event_type)
        wanted_out = _type_name(output_event_type)
        found: builtins.list[Checkpoint] = []
        for rid, cps in self.checkpoints.items():
            if run_id is not None and rid != run_id:
                continue
            for cp in cps:
                if last_completed_step is not None and cp.step_name != last_completed_step:
                    continue
                if wanted_in is not None and not _same_type(cp.input_event_type, wanted_in):
                    continue
                if wanted_out is not None and not any(
                    _same_type(t, wanted_out) for t in cp.output_event_types
                ):
                    continue
                found.append(cp)
        return found


def _type_name(t: type[Event] | str | None) -> str | None:
    if t is None or isinstance(t, str):
        return t
    return qualified_name(t)


def _same_type(recorded: str | None, wanted: str) -> bool:
    if recorded is None:
        return False
    if ":" in wanted:
        return recorded == wanted
    # A bare or dotted class name matches the end of "module:QualName".
    dotted = recorded.replace(":", ".")
    return dotted == wanted or dotted.endswith("." + wanted)


__all__ = [
    "Checkpoint",
    "CheckpointStore",
    "InMemoryCheckpointStore",
    "RunRecord",
    "SqliteCheckpointStore",
    "WorkflowCheckpointer",
]
