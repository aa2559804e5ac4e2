"""The SQLite checkpoint store: one file, WAL mode, safe across threads and processes.

Tables (all in one file, next to other components' tables such as the server's):

* ``schema_version(component, version)``: one row per component; ours is ``checkpoints``.
* ``checkpoint_runs``: one row per run (workflow, status, result or error, timestamps).
* ``checkpoints``: one row per checkpoint, ``ctx_data`` as JSON text, unique ``(run_id, seq)``.

One connection per store, used under a lock (``check_same_thread=False``), in autocommit mode
with explicit ``BEGIN IMMEDIATE`` transactions, so concurrent writers in other processes wait on
``busy_timeout`` instead of failing. ``synchronous=NORMAL`` in WAL mode: a commit survives a
crash of the process (what ``kill -9`` tests); only a power loss may drop the last commits.
"""

from __future__ import annotations

import builtins
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from .errors import CheckpointError

SCHEMA_VERSION = 1
COMPONENT = "checkpoints"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoint_runs (
    run_id TEXT PRIMARY KEY,
    workflow_name TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    result TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS checkpoint_runs_by_status ON checkpoint_runs (status, workflow_name);
CREATE TABLE IF NOT EXISTS checkpoints (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    workflow_name TEXT NOT NULL,
    step_name TEXT,
    input_event_type TEXT,
    output_event_types TEXT NOT NULL,
    created_at REAL NOT NULL,
    ctx_data TEXT NOT NULL,
    final_event TEXT,
    UNIQUE (run_id, seq)
);
"""

_CHECKPOINT_COLUMNS = (
    "id, run_id, seq, workflow_name, step_name, input_event_type, output_event_types, "
    "created_at, ctx_data, final_event"
)
_INSERT_CHECKPOINT = f"INSERT INTO checkpoints ({_CHECKPOINT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)"
_UPSERT_RUN = (
    "INSERT INTO checkpoint_runs (run_id, workflow_name, status, created_at, updated_at) "
    "VALUES (?, ?, 'running', ?, ?) "
    "ON CONFLICT(run_id) DO UPDATE SET updated_at = excluded.updated_at, status = 'running', "
    "result = NULL, error = NULL"
)
_RUN_COLUMNS = "run_id, workflow_name, status, created_at, updated_at, result, error"


class SqliteCheckpointStore:
    """Checkpoints in one SQLite file (the durable default).

    Safe for concurrent runs in one process (one connection, used under a lock) and for several
    processes sharing the file (WAL mode, ``busy_timeout``).

    Args:
        path: The database file; its folder is created. Default ``.batonflow/runs.db``.
        busy_timeout: Seconds a writer waits for another process's transaction.

    Raises:
        CheckpointError: The file is not a SQLite database, or holds a checkpoint schema of
            another version.
    """

    def __init__(
        self, path: str | os.PathLike[str] = ".batonflow/runs.db", *, busy_timeout: float = 10.0
    ) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        # Runs this store marked "running"; later checkpoints skip the run-row upsert.
        self._running: set[str] = set()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=busy_timeout
            )
        except (OSError, sqlite3.Error) as exc:
            raise CheckpointError(
                f"Cannot open the checkpoint database {os.fspath(self.path)!r} ({exc}); pass a "
                "writable path to SqliteCheckpointStore(path=...)."
            ) from exc
        try:
            self._setup_retrying(busy_timeout)
        except CheckpointError:
            self._conn.close()
            raise
        except sqlite3.Error as exc:
            self._conn.close()
            if _is_locked(exc):
                raise CheckpointError(
                    f"{os.fspath(self.path)!r} stayed locked by another process for "
                    f"{busy_timeout:g} s; let it finish, or pass a larger busy_timeout=."
                ) from exc
            raise CheckpointError(
                f"{os.fspath(self.path)!r} is not a usable checkpoint database ({exc}); it is "
                "corrupt or not SQLite: move it away or pass another path."
            ) from exc

    def _setup_retrying(self, busy_timeout: float) -> None:
        # Switching a new file into WAL mode takes an exclusive lock, and SQLite does not wait
        # on the busy handler for it: processes opening one fresh file at the same moment can
        # get "database is locked". Retry the (idempotent) set-up until busy_timeout passes.
        deadline = time.monotonic() + busy_timeout
        delay = 0.002
        while True:
            try:
                self._setup(busy_timeout)
                return
            except sqlite3.OperationalError as exc:
                if not _is_locked(exc) or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def _setup(self, busy_timeout: float) -> None:
        conn = self._conn
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL").fetchone()
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version "
                "(component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
            )
            columns = {row[1] for row in conn.execute("PRAGMA table_info(schema_version)")}
            if not {"component", "version"} <= columns:
                raise CheckpointError(
                    f"{os.fspath(self.path)!r} has a schema_version table that is not "
                    "batonflow's; use another file for checkpoints."
                )
            row = conn.execute(
                "SELECT version FROM schema_version WHERE component = ?", (COMPONENT,)
            ).fetchone()
            if row is None:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_version (component, version) VALUES (?, ?)",
                    (COMPONENT, SCHEMA_VERSION),
                )
            elif row[0] != SCHEMA_VERSION:
                age = "an older" if row[0] < SCHEMA_VERSION else "a newer"
                raise CheckpointError(
                    f"{os.fspath(self.path)!r} holds checkpoints of {age} batonflow (schema "
                    f"version {row[0]}, this one reads {SCHEMA_VERSION}); finish those runs with "
                    "the version that wrote them, or move the file away."
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    # -- writes -------------------------------------------------------------------------------

    def put(self, checkpoint: Any) -> None:
        """Store a checkpoint and mark its run as running.

        Raises:
            CheckpointError: A checkpoint with the same id or ``(run_id, seq)`` exists, or the
                context cannot be written as JSON.
        """
        try:
            ctx_json = json.dumps(checkpoint.ctx_data, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            raise CheckpointError(
                f"Checkpoint {checkpoint.id} of run {checkpoint.run_id} has ctx_data that is not "
                f"JSON ({exc}); build it with ctx.to_dict()."
            ) from exc
        row = (
            checkpoint.id,
            checkpoint.run_id,
            checkpoint.seq,
            checkpoint.workflow_name,
            checkpoint.step_name,
            checkpoint.input_event_type,
            json.dumps(list(checkpoint.output_event_types)),
            checkpoint.created_at,
            ctx_json,
            checkpoint.final_event,
        )
        now = time.time()
        with self._lock:
            conn = self._conn
            try:
                if checkpoint.run_id in self._running:
                    # The run row exists: one INSERT, its own (autocommit) transaction.
                    conn.execute(_INSERT_CHECKPOINT, row)
                    return
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute(_INSERT_CHECKPOINT, row)
                    conn.execute(
                        _UPSERT_RUN, (checkpoint.run_id, checkpoint.workflow_name, now, now)
                    )
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                self._running.add(checkpoint.run_id)
            except sqlite3.IntegrityError as exc:
                raise CheckpointError(
                    f"Run {checkpoint.run_id} already has checkpoint {checkpoint.id} or seq "
                    f"{checkpoint.seq} ({exc}); is another process resuming the same run?"
                ) from exc

    def finish_run(
        self, run_id: str, status: str, *, result: str | None = None, error: str | None = None
    ) -> None:
        """Record how a run ended (``completed``, ``failed``, ``cancelled``, ``timed_out``)."""
        with self._lock:
            self._running.discard(run_id)
            self._conn.execute(
                "UPDATE checkpoint_runs SET status = ?, result = ?, error = ?, updated_at = ? "
                "WHERE run_id = ?",
                (status, result, error, time.time(), run_id),
            )

    def delete(self, run_id: str) -> None:
        """Forget a run and all its checkpoints."""
        with self._lock:
            conn = self._conn
            self._running.discard(run_id)
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("DELETE FROM checkpoints WHERE run_id = ?", (run_id,))
                conn.execute("DELETE FROM checkpoint_runs WHERE run_id = ?", (run_id,))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    # -- reads --------------------------------------------------------------------------------

    def list(self, run_id: str) -> builtins.list[Any]:
        """The run's checkpoints, oldest first."""
        rows = self._query(
            f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE run_id = ? ORDER BY seq",
            (run_id,),
        )
        return [self._checkpoint(r) for r in rows]

    def latest(self, run_id: str) -> Any | None:
        """The run's most recent checkpoint, or ``None``."""
        rows = self._query(
            f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE run_id = ? "
            "ORDER BY seq DESC LIMIT 1",
            (run_id,),
        )
        return self._checkpoint(rows[0]) if rows else None

    def get(self, checkpoint_id: str) -> Any:
        """One checkpoint by id.

        Raises:
            CheckpointError: No checkpoint has that id.
        """
        rows = self._query(
            f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE id = ?", (checkpoint_id,)
        )
        if not rows:
            raise CheckpointError(
                f"No checkpoint {checkpoint_id!r} in {os.fspath(self.path)!r}; list a run's "
                "checkpoints with store.list(run_id)."
            )
        return self._checkpoint(rows[0])

    def runs(
        self, *, workflow_name: str | None = None, status: str | None = None
    ) -> builtins.list[Any]:
        """Runs with checkpoints, oldest first, optionally by workflow name and status."""
        from .checkpoints import RunRecord

        sql = f"SELECT {_RUN_COLUMNS} FROM checkpoint_runs WHERE 1=1"
        args: builtins.list[Any] = []
        if workflow_name is not None:
            sql += " AND workflow_name = ?"
            args.append(workflow_name)
        if status is not None:
            sql += " AND status = ?"
            args.append(status)
        rows = self._query(sql + " ORDER BY created_at, run_id", tuple(args))
        return [RunRecord(*row) for row in rows]

    def run(self, run_id: str) -> Any | None:
        """The record of one run, or ``None``."""
        from .checkpoints import RunRecord

        rows = self._query(
            f"SELECT {_RUN_COLUMNS} FROM checkpoint_runs WHERE run_id = ?", (run_id,)
        )
        return RunRecord(*rows[0]) if rows else None

    def close(self) -> None:
        """Close the connection (the store cannot be used afterwards)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SqliteCheckpointStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteCheckpointStore({os.fspath(self.path)!r})"

    # -- internals ----------------------------------------------------------------------------

    def _query(self, sql: str, args: tuple[Any, ...]) -> builtins.list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._conn.execute(sql, args).fetchall()
            except sqlite3.ProgrammingError as exc:
                raise CheckpointError(
                    f"The checkpoint store {os.fspath(self.path)!r} is closed ({exc}); create "
                    "a new SqliteCheckpointStore."
                ) from exc

    def _checkpoint(self, row: tuple[Any, ...]) -> Any:
        from .checkpoints import Checkpoint

        cid, run_id, seq, workflow_name, step, input_type, outputs, created, ctx, final = row
        try:
            ctx_data = json.loads(ctx)
            output_types = tuple(json.loads(outputs))
            if not isinstance(ctx_data, dict):
                raise ValueError("ctx_data is not a JSON object")
            return Checkpoint(
                id=cid,
                run_id=run_id,
                workflow_name=workflow_name,
                step_name=step,
                input_event_type=input_type,
                output_event_types=output_types,
                created_at=float(created),
                ctx_data=ctx_data,
                seq=int(seq),
                final_event=final,
            )
        except (TypeError, ValueError) as exc:
            raise CheckpointError(
                f"Checkpoint {cid!r} of run {run_id!r} in {os.fspath(self.path)!r} is corrupt "
                f"({exc}); delete the run (store.delete(run_id)) and start it again."
            ) from exc


def _is_locked(exc: sqlite3.Error) -> bool:
    """Whether SQLite refused because another connection holds a lock (SQLITE_BUSY)."""
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)
