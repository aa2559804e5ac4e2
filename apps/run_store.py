"""How the server and the CLI read the one run store.

There is one record of a run, kept by the engine's :class:`~batonflow.core.CheckpointStore`
(``SqliteCheckpointStore`` for a file, ``InMemoryCheckpointStore`` otherwise): its status,
start fields, result or error, the caller's ``traceparent``, its append-only event log (the SSE
ids) and its inbox. :class:`RunStore` is a read view over it in the shape the HTTP API and
``batonflow runs`` present (:class:`RunRow`, events as JSON objects); it writes nothing but
the ``end`` entry of a run it could not bring back.

A run whose status is ``running`` but whose CLI process is gone is shown as ``interrupted``.
"""

from __future__ import annotations

import builtins
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batonflow.core.checkpoints import (
    InMemoryCheckpointStore,
    RunRecord,
    SqliteCheckpointStore,
)
from batonflow.core.durable._text import text_problem

from ._statuses import FINISHED as FINISHED
from ._statuses import STATUSES as STATUSES
from ._wire import rfc3339

#: How many finished runs an in-memory store keeps (the oldest go first).
MEMORY_RETENTION = 1000


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run as the HTTP API and ``batonflow runs`` show it."""

    run_id: str
    workflow: str
    status: str
    start: dict[str, Any]
    result: Any
    error: str | None
    traceparent: str | None
    created_at: float
    updated_at: float
    owner: str | None = None
    pid: int | None = None
    flow_ref: str | None = None
    parent_run_id: str | None = None
    parent_seq: int | None = None
    #: A child run's parent step; how the run came from its parent ("fork", "child").
    parent_step: str | None = None
    parent_kind: str | None = None
    #: The event-log ``seq`` of the question a waiting run asked.
    waiting_seq: int | None = None
    #: The version of the workflow that started it (``Workflow.version``).
    workflow_version: str | None = None

    def public(self) -> dict[str, Any]:
        """The run as the HTTP API and ``batonflow runs show`` present it."""
        return {
            "run_id": self.run_id,
            "workflow": self.workflow,
            "status": self.status,
            "start": self.start,
            "result": self.result,
            "error": self.error,
            "waiting_for_input": self.status == "waiting",
            # RFC 3339 for people and most clients; the same instants as Unix seconds for
            # arithmetic (see docs/server.md, "Times").
            "created_at": rfc3339(self.created_at),
            "updated_at": rfc3339(self.updated_at),
            "created": self.created_at,
            "updated": self.updated_at,
            "parent_run_id": self.parent_run_id,
            "parent_seq": self.parent_seq,
            "parent_step": self.parent_step,
            # A fork recorded before runs had a parent kind is a fork all the same.
            "parent_kind": self.parent_kind or ("fork" if self.parent_run_id else None),
            "workflow_version": self.workflow_version,
        }


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One entry of a run's event log: ``seq`` from 1, ``kind`` ``event`` or ``end``."""

    seq: int
    kind: str
    body: dict[str, Any]


class RunStore:
    """A read view of the one run store.

    A run id that holds a NUL character or a lone surrogate names no run, on every backend
    (PostgreSQL cannot even be asked for one): :meth:`get` returns ``None`` for it without
    asking the store.

    Args:
        path: The database file (created with its folder when missing, ``0600``);
            ``":memory:"`` keeps runs in memory (the last :data:`MEMORY_RETENTION` finished
            ones), nothing survives the process.
        backend: Use this checkpoint store instead of opening ``path``.
    """

    def __init__(self, path: str | Path = ":memory:", *, backend: Any = None) -> None:
        self.path = str(path)
        if backend is None:
            backend = (
                InMemoryCheckpointStore(max_finished=MEMORY_RETENTION)
                if self.path == ":memory:"
                else SqliteCheckpointStore(self.path)
            )
        self.backend = backend

    def close(self) -> None:
        """Close the store."""
        close = getattr(self.backend, "close", None)
        if callable(close):
            close()

    def delete(self, run_id: str) -> None:
        """Forget a run: its record, checkpoints, event log and inbox."""
        if _can_exist(run_id):
            self.backend.delete(run_id)

    def get(self, run_id: str) -> RunRow | None:
        """The run with this id, or ``None`` (also for an id no store can hold)."""
        if not _can_exist(run_id):
            return None
        record = self.backend.run(run_id)
        return None if record is None else _row(record)

    async def aget(self, run_id: str) -> RunRow | None:
        """:meth:`get`, off the event loop where the store can read so (PostgreSQL)."""
        if not _can_exist(run_id):
            return None
        arun = getattr(self.backend, "arun", None)
        record = self.backend.run(run_id) if arun is None else await arun(run_id)
        return None if record is None else _row(record)

    def list(
        self, workflow: str | None = None, status: str | None = None, limit: int = 100
    ) -> builtins.list[RunRow]:
        """Runs, newest first, optionally filtered by workflow name and status."""
        if status == "interrupted":  # recorded so, or running in a CLI process that died
            records = [
                r
                for wanted in ("running", "interrupted")
                for r in self.backend.runs(workflow_name=workflow, status=wanted)
            ]
            records.sort(key=lambda r: (r.created_at, r.run_id))
        else:
            records = self.backend.runs(workflow_name=workflow, status=status)
        rows = [_row(r) for r in reversed(records)]
        if status is not None:
            rows = [r for r in rows if r.status == status]
        return rows[:limit]

    def unfinished(self, owner: str | None = "server") -> builtins.list[RunRow]:
        """Runs of ``owner`` not ended when the store was last written (oldest first)."""
        found = [
            r
            for status in ("running", "waiting", "interrupted")
            for r in self.backend.runs(status=status)
            if owner is None or r.owner == owner
        ]
        return [_row(r) for r in sorted(found, key=lambda r: (r.created_at, r.run_id))]

    def events(self, run_id: str, after: int = 0) -> builtins.list[StoredEvent]:
        """The run's event-log entries with ``seq > after``, in order."""
        if not _can_exist(run_id):
            return []
        return [
            StoredEvent(e.seq, e.kind, {"seq": e.seq, **json.loads(e.body)})
            for e in self.backend.events(run_id, after)
        ]

    def flow_ref(self, run_id: str) -> str | None:
        """The flow reference a CLI run was started with (``module:Class``, a prebuilt name)."""
        record = self.backend.run(run_id) if _can_exist(run_id) else None
        return None if record is None else record.flow_ref


def _can_exist(run_id: str) -> bool:
    """Whether a run could have this id: text without NUL characters or lone surrogates."""
    return text_problem(run_id) is None


def _result(text: str | None) -> Any:
    """A stored result (serialized by the workflow's serializer) as plain JSON data."""
    if text is None:
        return None
    from batonflow.core.serialization import JsonSerializer

    from ._wire import jsonable

    try:
        return jsonable(JsonSerializer().deserialize(text))
    except Exception:  # a value only its own serializer (e.g. pickle) can read: show the text
        return text


def _process_gone(pid: int) -> bool:
    """Whether no process ``pid`` runs on this machine."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists but belongs to someone else
        return False
    return False


def _row(record: RunRecord) -> RunRow:
    status = record.status
    if status == "running" and record.owner == "cli" and record.pid and _process_gone(record.pid):
        status = "interrupted"  # its `batonflow run --durable` process died
    try:
        start = json.loads(record.input) if record.input else {}
    except ValueError:
        start = {}
    return RunRow(
        run_id=record.run_id,
        workflow=record.workflow_name,
        status=status,
        start=start if isinstance(start, dict) else {"value": start},
        result=_result(record.result),
        error=record.error,
        traceparent=record.traceparent,
        created_at=record.created_at,
        updated_at=record.updated_at,
        owner=record.owner,
        pid=record.pid,
        flow_ref=record.flow_ref,
        parent_run_id=record.parent_run_id,
        parent_seq=record.parent_seq,
        parent_step=record.parent_step,
        parent_kind=record.parent_kind,
        waiting_seq=record.waiting_seq if status == "waiting" else None,
        workflow_version=record.workflow_version,
    )


__all__ = ["FINISHED", "STATUSES", "RunRow", "RunStore", "StoredEvent"]
