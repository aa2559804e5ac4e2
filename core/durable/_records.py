"""The records a run store keeps: runs, checkpoints, stream events, inbox events.

These are plain frozen dataclasses shared by every :class:`~batonflow.core.checkpoints.
CheckpointStore` backend (in memory, SQLite, and later PostgreSQL), so a store test written
once runs against each of them.

The status vocabulary is the same for library, CLI and server runs:

``queued``       the run waits in the run queue for its limits to let it start (nothing ran)
``running``      the run is in progress (or its process died and nobody resumed it yet)
``waiting``      the run asked for input (an ``InputRequiredEvent``) and waits for an answer
``completed``    the run returned its result
``failed``       a step raised, or the run timed out (``error`` says which)
``cancelled``    the run was cancelled
``interrupted``  the run was stopped from outside (a signal, a server that could not restore
                 it, a full disk); it can be resumed from its last checkpoint
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import CheckpointError, RunConflictError
from ._state_extensions import edited

#: Every status a stored run can have.
STATUSES = ("running", "waiting", "completed", "failed", "cancelled", "interrupted", "queued")
#: Statuses of a run that is still going on (or was left so by a crash).
ACTIVE = frozenset({"running", "waiting"})
#: Statuses of a run that ended; its record does not change any more.
ENDED = frozenset({"completed", "failed", "cancelled"})


def state_values(state: Mapping[str, Any] | None) -> dict[str, Any]:
    """The untyped state's ``{key: encoded}`` map in a state snapshot (either layout)."""
    data = (state or {}).get("state_data")
    if isinstance(data, Mapping) and isinstance(data.get("_data"), Mapping):
        return dict(data["_data"])  # the LlamaIndex layout (version 2)
    return dict(data) if isinstance(data, Mapping) else {}


def with_state_values(state: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` (a state snapshot) holding ``values`` as its untyped key map."""
    if isinstance(state.get("state_data"), Mapping) and "_data" in state["state_data"]:
        return {**state, "state_data": {"_data": dict(values)}}
    return {**state, "state_data": dict(values)}


def check_status(status: str) -> str:
    """Return ``status`` if it is one of :data:`STATUSES`.

    Raises:
        ValueError: An unknown status.
    """
    if status not in STATUSES:
        raise ValueError(f"Unknown run status {status!r}; use one of {', '.join(STATUSES)}.")
    return status


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The run as it was right after one step completed.

    Attributes:
        id: Unique id of the checkpoint.
        run_id: The run it belongs to.
        workflow_name: The workflow that ran.
        step_name: The step that had just completed (``None`` for the snapshot taken when a
            durable run starts, before any step, or while it waits for an answer).
        input_event_type: ``"module:Class"`` of the event the step ran on.
        output_event_types: ``"module:Class"`` of each event the step returned.
        created_at: Wall-clock time (``time.time()``) the checkpoint was taken.
        ctx_data: ``ctx.to_dict()`` at the step boundary: state, queued and in-progress events,
            buffers, waiters (JSON-compatible). Stream events are not in it: they are in the
            run's event log, recorded once when written.
        seq: Position in the run (0 for the start snapshot, then 1, 2, ...).
        final_event: The serialized StopEvent when this step ended the run, else ``None``.
        inbox_seq: How many of the run's inbox events (see ``CheckpointStore.post_event``) the
            run had taken in at this checkpoint; a resume delivers the ones after it.
        state_changes: When not ``None``, ``ctx_data["state"]["state_data"]`` holds only the
            untyped state keys written since the previous checkpoint (encoded values; ``None``
            for a deleted key) and the store rebuilds the full state when it reads the
            checkpoint back. ``True`` for "these changes on top of the previous state",
            ``False`` for "this is the whole state" (the first checkpoint, or after
            ``set_state``/``clear``); ``2``: changes some of which are edits of the key's
            previous value (see ``_state_extensions``).
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
    inbox_seq: int = 0
    state_changes: bool | int | None = None
    input_event: Any = field(default=None, repr=False, compare=False)
    output_event: Any = field(default=None, repr=False, compare=False)

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
        status: One of :data:`STATUSES`.
        created_at: When the run was recorded (before its first step ran).
        updated_at: When it last changed.
        result: The serialized result of a completed run, if it could be serialized.
        error: ``"ExceptionType: message"`` of a run that did not complete.
        start_event: The serialized StartEvent the run began with (``None`` for a run
            continued from a restored context).
        input: The start fields as JSON text, for display (the server's ``start``).
        traceparent: The W3C ``traceparent`` of the caller who started it.
        owner: Who runs it: ``"server"``, ``"cli"`` or ``None`` (library code).
        pid: The process id that started it, to tell later whether that process died.
        flow_ref: How to load its workflow again (``module:Class``, a prebuilt name).
        waiting_seq: The event-log ``seq`` of the ``InputRequiredEvent`` a waiting run asked
            with; an answer to it is accepted once.
        idempotency_key: The key the run was started with (see ``cptr.start``): one run per
            key in a store, for as long as the run is kept.
        parent_run_id: The run this one was forked from (``cptr.fork``) or started by as a
            child (``ctx.run_child``), else ``None``.
        parent_seq: The checkpoint of the parent a fork continues from (its ``seq``).
        workflow_version: The version of the workflow that started it (``Workflow.version``:
            declared, or the hash of its shape); ``None`` for runs recorded before versions.
        parent_step: The parent's step that started a child run.
        parent_kind: How it came from its parent: ``"fork"`` or ``"child"`` (``None`` for a
            run without a parent, and for a fork recorded before SQLite schema 9, PostgreSQL 12).
    """

    run_id: str
    workflow_name: str
    status: str
    created_at: float
    updated_at: float
    result: str | None = None
    error: str | None = None
    start_event: str | None = field(default=None, repr=False)
    input: str | None = field(default=None, repr=False)
    traceparent: str | None = None
    owner: str | None = None
    pid: int | None = None
    flow_ref: str | None = None
    waiting_seq: int | None = None
    idempotency_key: str | None = None
    parent_run_id: str | None = None
    parent_seq: int | None = None
    workflow_version: str | None = None
    parent_step: str | None = None
    parent_kind: str | None = None


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What a run's record keeps besides its id and start event (see ``cptr.start``).

    Attributes:
        input: The start fields to show for the run (default: the start event's fields).
        traceparent: The caller's W3C ``traceparent``.
        owner: Who runs it (``"server"``, ``"cli"``); library runs leave it ``None``.
        flow_ref: How to load the workflow again (``module:Class``) to resume the run.
        name: The workflow name to record (default: ``workflow.workflow_name``; the server
            records the name it serves the workflow under).
        parent_run_id: The run that started this one as its child (``ctx.run_child``).
        parent_step: The parent's step that started it.
    """

    input: Mapping[str, Any] | None = None
    traceparent: str | None = None
    owner: str | None = None
    flow_ref: str | None = None
    name: str | None = None
    parent_run_id: str | None = None
    parent_step: str | None = None


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One entry of a run's append-only event log.

    Attributes:
        seq: Its sequence number in the run, from 1, given once when it was recorded.
        kind: ``"event"`` for a stream event, ``"end"`` for the run's last entry.
        body: The entry as JSON text (``{"type", "qualified_name", "value"}`` for events).
    """

    seq: int
    kind: str
    body: str


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One journaled call's outcome (``ctx.journal``), committed when the call returned.

    Attributes:
        step: The step that made it.
        execution: The step execution's id in the run (the same when a crash re-runs it).
        call: Its position among the journaled calls of that execution (from 0).
        name: The name the step gave the call.
        attempt: The step's attempt (retries) that recorded it.
        error: Whether ``body`` is the exception the call raised (else its result).
        body: The result or exception, serialized with the run's serializer.
        created_at: When it was recorded.
    """

    step: str
    execution: int
    call: int
    name: str
    attempt: int
    error: bool
    body: str = field(repr=False)
    created_at: float


@dataclass(frozen=True, slots=True)
class InboxItem:
    """One event sent to a run from outside, committed before the sender got an answer.

    Attributes:
        seq: Its position in the run's inbox, from 1.
        body: The event, serialized with the workflow's serializer.
        key: What it answers (``"answer:<seq of the InputRequiredEvent>"``) or ``None``.
    """

    seq: int
    body: str
    key: str | None = None


def check_post(run_id: str, row: tuple[str, int | None] | None, answer: bool) -> str | None:
    """The inbox key of a post to a run in ``row`` (status, waiting_seq), or an error."""
    if row is None:
        raise RunConflictError(
            f"Run {run_id!r} is not in the store; send events to a run that was started."
        )
    status, waiting_seq = row
    if status not in ACTIVE and status not in ("interrupted", "queued"):
        raise RunConflictError(
            f"Run {run_id!r} is {status}; events can only be sent to a run in progress."
        )
    if not answer:
        return None  # a queued run takes it in, in order, when it starts
    if status == "queued":
        raise RunConflictError(
            f"Run {run_id!r} is queued: it has not started, so it has asked no question to "
            "answer yet; answer once its status is 'waiting' (events it takes as they come "
            "can be sent now)."
        )
    if status != "waiting" or waiting_seq is None:
        raise answered_error(run_id)
    return f"answer:{waiting_seq}"


def answered_error(run_id: str) -> RunConflictError:
    """The refusal of an answer to a run that waits for none (or was answered already)."""
    return RunConflictError(
        f"Run {run_id!r} is not waiting for an answer (its question was answered already); "
        "read the run's status and answer only when it is 'waiting'."
    )


# -- what every backend builds the same way ------------------------------------------------


def implicit_record(run_id: str, workflow_name: str) -> RunRecord:
    """The record of a run checkpointed without ``create_run`` first: ``running``."""
    now = time.time()
    return RunRecord(run_id, workflow_name, "running", now, now)


def with_status(record: RunRecord, status: str, result: str | None, error: str | None) -> RunRecord:
    """``record`` after ``set_status``: a run keeps its ``waiting_seq`` only while waiting."""
    return dataclasses.replace(
        record,
        status=status,
        result=result,
        error=error,
        updated_at=time.time(),
        waiting_seq=record.waiting_seq if status == "waiting" else None,
    )


def apply_changes(values: dict[str, str], changes: Mapping[str, Any]) -> None:
    """Apply one checkpoint's untyped state changes to ``values`` (``None`` deletes a key, a
    list is an edit of the key's value: see ``_state_extensions``).

    Raises:
        ValueError: An edit does not apply (a corrupt checkpoint).
    """
    for key, value in changes.items():
        if value is None:
            values.pop(str(key), None)
        elif isinstance(value, list):
            values[str(key)] = edited(values.get(str(key)), value)
        else:
            values[str(key)] = str(value)


def check_limit(limit: int | None) -> int | None:
    """Return ``limit`` (``None``: no limit) if it is a count.

    Raises:
        ValueError: A negative limit.
    """
    if limit is not None and int(limit) < 0:
        raise ValueError(f"limit={limit!r} is negative; pass a count, or None for no limit.")
    return None if limit is None else int(limit)


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs ``CheckpointStore.runs`` returns, for every backend alike.

    Runs come oldest first (by ``created_at``, then ``run_id``); ``limit`` keeps the newest
    ``limit`` of the runs that match (0 keeps none).

    Attributes:
        workflow_name: Only runs of this workflow.
        status: Only runs with this status.
        limit: At most this many runs (the newest).
    """

    workflow_name: str | None = None
    status: str | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "limit", check_limit(self.limit))

    def equals(self) -> tuple[tuple[str, str], ...]:
        """The ``(column, value)`` pairs a record must equal (what SQL puts in ``WHERE``)."""
        wanted = (("workflow_name", self.workflow_name), ("status", self.status))
        return tuple((column, value) for column, value in wanted if value is not None)

    def select(self, records: Iterable[RunRecord]) -> list[RunRecord]:
        """The matching records of ``records``, oldest first, the newest ``limit`` of them."""
        equals = self.equals()
        found = sorted(
            (r for r in records if all(getattr(r, c) == v for c, v in equals)),
            key=lambda r: (r.created_at, r.run_id),
        )
        if self.limit is None:
            return found
        return found[len(found) - self.limit :] if self.limit else []


def run_exists_error(run_id: str, where: str, key: str | None = None) -> RunConflictError:
    """The refusal of ``create_run`` for a run id (or an idempotency ``key``) that is taken in
    the store at ``where``."""
    if key is not None:
        return RunConflictError(
            f"Run {run_id!r} or idempotency key {key!r} exists already in {where}; read the "
            "key's run with store.run_for_key(key), or start with a new run_id and key."
        )
    return RunConflictError(
        f"Run {run_id!r} exists already in {where}; start it with a new run_id, or resume it."
    )


def checkpoint_taken_error(checkpoint: Checkpoint) -> CheckpointError:
    """The refusal of ``put`` for a checkpoint whose id or ``(run_id, seq)`` is taken."""
    return CheckpointError(
        f"Run {checkpoint.run_id} already has checkpoint {checkpoint.id} or seq "
        f"{checkpoint.seq}; is another process resuming the same run? Give each checkpoint a "
        "new id and the run's next seq."
    )


def checkpoint_id(run_id: str, seq: int) -> str:
    """The id the checkpointer gives checkpoint ``seq`` of run ``run_id``: ``"<run_id>:<seq>"``.

    Unique as the run's seqs are, and made without drawing random bytes; a SQL store finds it
    by its run and seq, without an index of ids (see ``_sql_schema.OTHER_ID``).
    """
    return f"{run_id}:{seq}"


def made_id_parts(checkpoint_id: str) -> tuple[str, int] | None:
    """``(run_id, seq)`` when ``checkpoint_id`` has the form :func:`checkpoint_id` makes."""
    run_id, colon, seq = checkpoint_id.rpartition(":")
    if not colon or not seq.isascii():
        return None
    try:
        number = int(seq)
    except ValueError:
        return None
    # Only the text checkpoint_id() writes: no sign, zeros, spaces or underscores added.
    return (run_id, number) if str(number) == seq else None


def check_checkpoint_id(checkpoint: Checkpoint) -> bool:
    """Whether ``checkpoint.id`` is the one made from its run and seq; refuse an id that is
    the made id of another checkpoint.

    Raises:
        CheckpointError: The id has the form ``"<run_id>:<seq>"`` of another run or seq.
    """
    if checkpoint.id == f"{checkpoint.run_id}:{checkpoint.seq}":
        return True
    named = made_id_parts(checkpoint.id)
    if named is not None:
        raise CheckpointError(
            f"Checkpoint id {checkpoint.id!r} names checkpoint {named[1]} of run {named[0]!r}, "
            f"but it is checkpoint {checkpoint.seq} of run {checkpoint.run_id!r}; ids of the "
            "form '<run_id>:<seq>' are the checkpointer's: give it "
            f"{checkpoint_id(checkpoint.run_id, checkpoint.seq)!r} or an id of another form."
        )
    return False


#: The ``final_event`` column of a checkpoint that has no StopEvent although its snapshot
#: holds one (only a hand-built checkpoint can be so); see :func:`final_column`.
_NO_FINAL = ""


def final_column(checkpoint: Checkpoint) -> str | None:
    """What a SQL store writes for ``checkpoint.final_event``: nothing when the snapshot has it.

    The step that ends a run leaves its StopEvent in the snapshot (``ctx_data["stop_event"]``,
    which restores the ended run by itself), so the column would hold a second copy of the
    same text: it is written only when it differs. :func:`final_of` reads it back. Rows of
    older versions hold both copies and read the same.
    """
    final = checkpoint.final_event
    held = checkpoint.ctx_data.get("stop_event")
    if final is not None and final == held:
        return None
    if final is None and held is not None:
        return _NO_FINAL
    return final


def final_of(column: str | None, ctx_data: Mapping[str, Any]) -> str | None:
    """A checkpoint's ``final_event`` from its column and its snapshot (see :func:`final_column`)."""
    if column is None:
        held = ctx_data.get("stop_event")
        return held if isinstance(held, str) else None
    return None if column == _NO_FINAL else column


def no_checkpoint_error(checkpoint_id: str, where: str) -> CheckpointError:
    """The error of ``get`` for a checkpoint id the store at ``where`` does not hold."""
    return CheckpointError(
        f"No checkpoint {checkpoint_id!r} in {where}; list a run's checkpoints with "
        "store.list(run_id)."
    )


__all__ = [
    "ACTIVE",
    "ENDED",
    "STATUSES",
    "Checkpoint",
    "InboxItem",
    "JournalEntry",
    "RunFilter",
    "RunInfo",
    "RunRecord",
    "StoredEvent",
    "answered_error",
    "apply_changes",
    "check_checkpoint_id",
    "check_limit",
    "check_post",
    "check_status",
    "checkpoint_id",
    "checkpoint_taken_error",
    "final_column",
    "final_of",
    "implicit_record",
    "made_id_parts",
    "no_checkpoint_error",
    "run_exists_error",
    "state_values",
    "with_state_values",
    "with_status",
]
