"""The run store's contract: the :class:`CheckpointStore` protocol every backend implements,
and how the checkpointer turns events and outcomes into what a store keeps.

The records themselves, and what every backend builds from them alike (the record of a run
checkpointed without ``create_run``, a status change, the run filter, the refusals), are in
:mod:`batonflow.core.durable._records`. The backends: :mod:`batonflow.core.durable._memory_store`, and one SQL
store (:mod:`batonflow.core.durable._sql_store` on the schema of :mod:`batonflow.core.durable._sql_schema`)
with SQLite (:mod:`batonflow.core.durable._sqlite_store`) and PostgreSQL (``batonflow.postgres``) as
its dialects. A new backend implements this protocol, or is one more dialect of the SQL store,
and joins the parametrised store tests (``tests/core/test_store_contract.py``).
"""

from __future__ import annotations

import asyncio
import builtins
import json
from collections.abc import Awaitable, Collection
from typing import Any, Protocol, runtime_checkable

from pydantic_core import to_jsonable_python

from ..data.serialization import BaseSerializer
from ..errors import CheckpointError, SerializationError, WorkflowCancelledByUser
from ._records import Checkpoint, InboxItem, RunRecord, StoredEvent
from ._text import storable


@runtime_checkable
class CheckpointStore(Protocol):
    """Where runs are kept: their records, checkpoints, event logs and inboxes.

    One store serves library, CLI and server runs alike. Methods are synchronous and must be
    quick (they run in the event loop, at every step boundary); each write is atomic. A store
    error is a :class:`~batonflow.core.errors.CheckpointError` subclass that tells a full
    disk, a read-only file, a lock held too long and a corrupt file apart.
    """

    def create_run(self, record: RunRecord) -> None:
        """Record a new run before any of its steps runs; ``RunConflictError`` if it exists."""
        ...

    def set_status(
        self, run_id: str, status: str, *, result: str | None = None, error: str | None = None
    ) -> None:
        """Set a run's status (one of ``STATUSES``), result and error."""
        ...

    def finish_run(
        self,
        run_id: str,
        status: str,
        *,
        result: str | None = None,
        error: str | None = None,
        end: str | None = None,
    ) -> None:
        """Record how a run ended; with ``end`` (JSON text), also append it as the run's
        last log entry (kind ``"end"``) in the same atomic write."""
        ...

    def runs(
        self,
        *,
        workflow_name: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> builtins.list[RunRecord]:
        """The runs, oldest first, optionally filtered (the newest ``limit`` of them)."""
        ...

    def run(self, run_id: str) -> RunRecord | None:
        """One run's record."""
        ...

    def delete(self, run_id: str) -> None:
        """Forget a run with its checkpoints, event log and inbox."""
        ...

    def ended_runs(
        self,
        before: float,
        *,
        workflow_name: str | None = None,
        exclude: Collection[str] = (),
        limit: int = 100,
    ) -> builtins.list[str]:
        """Ids of runs that ended (completed, failed, cancelled) and last changed before
        ``before`` (epoch seconds), oldest first: of ``workflow_name`` only when given, never
        of the workflows in ``exclude``; at most ``limit`` (what retention deletes)."""
        ...

    def put(self, checkpoint: Checkpoint) -> None:
        """Store a checkpoint (a run not recorded yet is recorded as ``running``)."""
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

    def append_event(self, run_id: str, kind: str, body: str, *, waiting: bool = False) -> int:
        """Append to the run's event log; return the entry's ``seq`` (given once, from 1).

        ``waiting=True`` (an ``InputRequiredEvent``) makes the run ``waiting`` for it.
        """
        ...

    def events(
        self, run_id: str, after: int = 0, limit: int | None = None
    ) -> builtins.list[StoredEvent]:
        """The run's event-log entries with ``seq > after``, in order."""
        ...

    def post_event(self, run_id: str, body: str, *, answer: bool = False) -> int:
        """Commit an event sent to the run into its inbox; return its inbox ``seq``.

        With ``answer=True`` it answers the question the run waits for: exactly one answer
        per question is accepted (``RunConflictError`` for the others).
        """
        ...

    def inbox(self, run_id: str, after: int = 0) -> builtins.list[InboxItem]:
        """The run's inbox events with ``seq > after``, in order."""
        ...


@runtime_checkable
class OffLoopWrites(Protocol):
    """A store that can also make its writes off the event loop (optional).

    A store whose every write is a network round trip (PostgreSQL's) would block the loop for
    each: the loop could serve nothing else meanwhile. Such a store implements these methods
    too; each *starts* its write at once, on a thread of the store's own, and returns an
    awaitable of its outcome, with the same result, errors and guarantees as the synchronous
    method (a run's writes are made in the order they were started). The checkpointer writes a
    step's checkpoint with :meth:`aput` and the run waits for it at the step boundary; the
    server records a run's start and end and reads its record with the others.
    """

    def aput(self, checkpoint: Checkpoint) -> Awaitable[None]:
        """:meth:`CheckpointStore.put`, off the loop."""
        ...

    def acreate_run(self, record: RunRecord) -> Awaitable[None]:
        """:meth:`CheckpointStore.create_run`, off the loop."""
        ...

    def afinish_run(
        self,
        run_id: str,
        status: str,
        *,
        result: str | None = None,
        error: str | None = None,
        end: str | None = None,
    ) -> Awaitable[None]:
        """:meth:`CheckpointStore.finish_run`, off the loop."""
        ...

    def aappend_event(self, run_id: str, kind: str, body: str) -> asyncio.Future[int]:
        """:meth:`CheckpointStore.append_event` of an entry that asks for nothing, off the loop.

        An unreachable server is waited for off the loop (the run's later writes wait behind
        it); the future fails only as the synchronous write would have failed after that.
        """
        ...

    def arun(self, run_id: str) -> Awaitable[RunRecord | None]:
        """:meth:`CheckpointStore.run`, off the loop."""
        ...


def event_body(
    event: Any,
    *,
    waiting_for: builtins.list[Any] | None = None,
    step: str | None = None,
    execution: int | None = None,
) -> str:
    """One stream event as the event log keeps it: ``{"type", "qualified_name", "value"}``.

    ``value`` holds the event's declared and extra fields as JSON (what JSON cannot hold is
    written as its ``repr``); private attributes stay private. A question (an
    ``InputRequiredEvent``) also holds ``waiting_for``: what the run's waiting steps wait for.
    An event a step execution wrote also holds ``step`` and ``execution`` (its id in the run):
    after a crash they tell which entries the interrupted attempt wrote (``StepRestarted``).
    """
    cls = type(event)
    fields: Any = {name: getattr(event, name) for name in cls.model_fields}
    fields.update(event.__pydantic_extra__ or {})
    try:
        value = to_jsonable_python(fields, fallback=repr, serialize_unknown=False)
        extra: dict[str, Any] = {}
        if step is not None:
            extra["step"] = step
            extra["execution"] = execution
        if waiting_for is not None:
            extra["waiting_for"] = to_jsonable_python(
                waiting_for, fallback=repr, serialize_unknown=False
            )
        return json.dumps(
            {
                "type": cls.__name__,
                "qualified_name": f"{cls.__module__}.{cls.__qualname__}",
                "value": value,
                **extra,
            },
            separators=(",", ":"),
            ensure_ascii=False,
        )
    except (ValueError, RecursionError):
        return json.dumps(
            {
                "type": cls.__name__,
                "qualified_name": f"{cls.__module__}.{cls.__qualname__}",
                "value": {"repr": repr(event)[:1000]},
                **({} if step is None else {"step": step, "execution": execution}),
            }
        )


def encode(serializer: BaseSerializer, value: Any, what: str) -> str:
    """``serializer.serialize(value)``, with a clear error for values nested too deeply."""
    try:
        return serializer.serialize(value)
    except RecursionError as exc:
        raise SerializationError(
            f"Cannot serialize {what}: it is nested too deeply for {type(serializer).__name__} "
            "to encode; send a flatter value."
        ) from exc


def outcome(fut: asyncio.Future[Any], serializer: BaseSerializer) -> tuple[str, Any, Any]:
    """(status, serialized result, error text) of a finished run's future."""
    if fut.cancelled():
        return "cancelled", None, "CancelledError"
    error = fut.exception()
    if error is None:
        try:
            return "completed", encode(serializer, fut.result(), "the result"), None
        except SerializationError:
            return "completed", None, None
    # Escaped: an error quoting a step's input may hold text no store can (a NUL character).
    text = storable(f"{type(error).__name__}: {error}")
    if isinstance(error, WorkflowCancelledByUser):
        return "cancelled", None, text
    if isinstance(error, CheckpointError) and type(error) is not CheckpointError:
        # The store failed (full, read-only, locked): what it holds is intact, so the run
        # can be resumed from its last checkpoint once the store works again.
        return "interrupted", None, text
    return "failed", None, text


__all__ = ["CheckpointStore", "OffLoopWrites", "encode", "event_body", "outcome"]
