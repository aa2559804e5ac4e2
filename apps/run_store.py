"""The server's durable record of runs: status, result, streamed events, resumable snapshots.

One SQLite file (``.batonflow/runs.db`` by default, WAL mode) with two tables of its own,
``server_runs`` and ``server_events``; the engine's checkpoint tables may live in the same file.
What is kept per run:

- its workflow name, status, start fields, result or error, timestamps, the caller's
  ``traceparent``;
- every event it streamed, numbered from 1 (the SSE ids), so a client can resume a stream
  after a server restart without loss or duplicates;
- a snapshot of its context (``ctx.to_dict()``) whenever it waits for a human, so that a
  restarted server restores it and the human's answer still finishes it.

All methods are synchronous and short; the server calls them from its event loop.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS server_runs (
    run_id      TEXT PRIMARY KEY,
    workflow    TEXT NOT NULL,
    status      TEXT NOT NULL,
    start       TEXT NOT NULL,
    result      TEXT,
    error       TEXT,
    snapshot    TEXT,
    traceparent TEXT,
    created_at  REAL NOT NULL,
    updated_at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS server_runs_by_status ON server_runs (status, workflow);
CREATE TABLE IF NOT EXISTS server_events (
    run_id TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    kind   TEXT NOT NULL,
    body   TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS flow_refs (
    run_id TEXT PRIMARY KEY,
    flow   TEXT NOT NULL,
    pid    INTEGER
);
"""

#: Statuses of a run that has ended; nothing changes it any more.
FINISHED = frozenset({"completed", "failed", "cancelled", "timed_out", "interrupted"})


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run as stored."""

    run_id: str
    workflow: str
    status: str
    start: dict[str, Any]
    result: Any
    error: str | None
    snapshot: dict[str, Any] | None
    traceparent: str | None
    created_at: float
    updated_at: float

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
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One streamed event of a run: ``seq`` from 1, ``kind`` ``event`` or ``end``."""

    seq: int
    kind: str
    body: dict[str, Any]


class RunStore:
    """SQLite-backed store of server runs.

    Args:
        path: The database file, created with its folder when missing; ``":memory:"`` keeps
            everything in memory (nothing survives the process).
    """

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA busy_timeout = 5000")
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
        self._db.executescript(_SCHEMA)
        columns = {r["name"] for r in self._db.execute("PRAGMA table_info(flow_refs)")}
        if "pid" not in columns:  # a store written before the pid was kept
            self._db.execute("ALTER TABLE flow_refs ADD COLUMN pid INTEGER")

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def create(
        self, run_id: str, workflow: str, start: dict[str, Any], traceparent: str | None = None
    ) -> None:
        """Record a new run in status ``running``."""
        now = time.time()
        with self._tx() as db:
            db.execute(
                "INSERT INTO server_runs (run_id, workflow, status, start, traceparent, "
                "created_at, updated_at) VALUES (?, ?, 'running', ?, ?, ?, ?)",
                (run_id, workflow, _dumps(start), traceparent, now, now),
            )

    def remember_flow(self, run_id: str, flow: str, pid: int | None = None) -> None:
        """Remember how to load the workflow of a run started elsewhere (``batonflow run``).

        Args:
            run_id: The run.
            flow: The flow reference it was started with (``module:Class``, a prebuilt name).
            pid: The id of the process running it, to tell later whether that process died.
        """
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO flow_refs (run_id, flow, pid) VALUES (?, ?, ?)",
                (run_id, flow, pid),
            )

    def flow_ref(self, run_id: str) -> str | None:
        """The flow reference remembered for ``run_id`` (see :meth:`remember_flow`)."""
        with self._lock:
            row = self._db.execute(
                "SELECT flow FROM flow_refs WHERE run_id = ?", (run_id,)
            ).fetchone()
        return None if row is None else str(row["flow"])

    def flow_pid(self, run_id: str) -> int | None:
        """The process id remembered for ``run_id`` (see :meth:`remember_flow`)."""
        with self._lock:
            row = self._db.execute(
                "SELECT pid FROM flow_refs WHERE run_id = ?", (run_id,)
            ).fetchone()
        return None if row is None or row["pid"] is None else int(row["pid"])

    def update(
        self,
        run_id: str,
        *,
        status: str,
        result: Any = None,
        error: str | None = None,
        snapshot: dict[str, Any] | None = None,
        keep_snapshot: bool = False,
    ) -> None:
        """Set a run's status (and result, error, snapshot)."""
        with self._tx() as db:
            if keep_snapshot:
                db.execute(
                    "UPDATE server_runs SET status = ?, result = ?, error = ?, updated_at = ? "
                    "WHERE run_id = ?",
                    (status, _dumps(result), error, time.time(), run_id),
                )
            else:
                db.execute(
                    "UPDATE server_runs SET status = ?, result = ?, error = ?, snapshot = ?, "
                    "updated_at = ? WHERE run_id = ?",
                    (
                        status,
                        _dumps(result),
                        error,
                        None if snapshot is None else _dumps(snapshot),
                        time.time(),
                        run_id,
                    ),
                )

    def delete(self, run_id: str) -> None:
        """Forget a run: its record, its events and the flow it was started with."""
        with self._tx() as db:
            for table in ("server_events", "flow_refs", "server_runs"):
                db.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))

    def append_event(self, run_id: str, seq: int, kind: str, body: dict[str, Any]) -> None:
        """Store one streamed event (idempotent per ``(run_id, seq)``)."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO server_events (run_id, seq, kind, body) VALUES (?, ?, ?, ?)",
                (run_id, seq, kind, _dumps(body)),
            )

    def get(self, run_id: str) -> RunRow | None:
        """The run with this id, or ``None``."""
        with self._lock:
            row = self._db.execute(
                "SELECT * FROM server_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
        return None if row is None else _row(row)

    def list(
        self, workflow: str | None = None, status: str | None = None, limit: int = 100
    ) -> builtins.list[RunRow]:
        """Runs, newest first, optionally filtered by workflow name and status."""
        query = "SELECT * FROM server_runs"
        where: builtins.list[str] = []
        args: builtins.list[Any] = []
        if workflow is not None:
            where.append("workflow = ?")
            args.append(workflow)
        if status is not None:
            where.append("status = ?")
            args.append(status)
        if where:
            query += " WHERE " + " AND ".join(where)
        query += " ORDER BY created_at DESC, run_id LIMIT ?"
        args.append(limit)
        with self._lock:
            rows = self._db.execute(query, args).fetchall()
        return [_row(r) for r in rows]

    def unfinished(self) -> builtins.list[RunRow]:
        """Runs that had not ended when the store was last written (oldest first)."""
        marks = ", ".join("?" for _ in FINISHED)
        with self._lock:
            rows = self._db.execute(
                f"SELECT * FROM server_runs WHERE status NOT IN ({marks}) ORDER BY created_at",
                tuple(FINISHED),
            ).fetchall()
        return [_row(r) for r in rows]

    def events(self, run_id: str, after: int = 0) -> builtins.list[StoredEvent]:
        """The run's stored events with ``seq > after``, in order."""
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, kind, body FROM server_events WHERE run_id = ? AND seq > ? "
                "ORDER BY seq",
                (run_id, after),
            ).fetchall()
        return [StoredEvent(r["seq"], r["kind"], json.loads(r["body"])) for r in rows]


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _row(row: sqlite3.Row) -> RunRow:
    return RunRow(
        run_id=row["run_id"],
        workflow=row["workflow"],
        status=row["status"],
        start=json.loads(row["start"]),
        result=None if row["result"] is None else json.loads(row["result"]),
        error=row["error"],
        snapshot=None if row["snapshot"] is None else json.loads(row["snapshot"]),
        traceparent=row["traceparent"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


__all__ = ["FINISHED", "RunRow", "RunStore", "StoredEvent"]
