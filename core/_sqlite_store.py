"""The SQLite run store: runs, checkpoints, event log and inbox in one file.

Tables (a file can hold other components' tables too):

* ``schema_version(component, version)``: one row per component; ours is ``checkpoints``.
* ``checkpoint_runs``: one row per run (workflow, status, start event, result or error, who
  runs it, what it waits for).
* ``checkpoints``: one row per checkpoint, ``ctx_data`` as JSON text, unique ``(run_id, seq)``.
  A checkpoint's ``ctx_data`` may hold only the untyped state keys its step changed
  (``state_mode`` 1; 0 for a whole state), so it writes what changed, not what the run holds;
  reading it back applies the changes since the last whole state.
* ``run_events``: the append-only event log, ``(run_id, seq)`` given once per event.
* ``run_inbox``: events sent to a run, unique ``(run_id, key)`` so one question takes one
  answer.

Versions: 1 (the first release: runs and checkpoints only, plus the server's own
``server_runs``/``server_events``/``flow_refs`` tables) is migrated in place to 2, in one
transaction; the server's records move into the one store.

One connection per store, used under a lock (``check_same_thread=False``), in autocommit mode
with explicit ``BEGIN IMMEDIATE`` transactions, so concurrent writers in other processes wait on
``busy_timeout`` instead of failing. ``synchronous=NORMAL`` in WAL mode: a commit survives a
crash of the process (what ``kill -9`` tests); only a power loss may drop the last commits.
SQLite errors come out as :class:`CheckpointError` subclasses that say whether the disk is full,
the file read-only, locked, or corrupt.
"""

from __future__ import annotations

import builtins
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ._records import (
    ENDED,
    Checkpoint,
    InboxItem,
    RunRecord,
    StoredEvent,
    answered_error,
    check_post,
    check_status,
    state_values,
    with_state_values,
)
from ._sqlite_schema import create_private, is_locked, migrate, opening_error, store_error
from .errors import CheckpointError, RunConflictError, StoreCorruptError, StoreLockedError

SCHEMA_VERSION = 2
COMPONENT = "checkpoints"
T = TypeVar("T")

_CHECKPOINT_COLUMNS = (
    "id, run_id, seq, workflow_name, step_name, input_event_type, output_event_types, "
    "created_at, ctx_data, final_event, inbox_seq, state_mode"
)
_INSERT_CHECKPOINT = (
    f"INSERT INTO checkpoints ({_CHECKPOINT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
)
_RUN_COLUMNS = (
    "run_id, workflow_name, status, created_at, updated_at, result, error, start_event, input, "
    "traceparent, owner, pid, flow_ref, waiting_seq"
)
_INSERT_RUN = f"INSERT INTO checkpoint_runs ({_RUN_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"


class SqliteCheckpointStore:
    """Runs, checkpoints, event logs and inboxes in one SQLite file (the durable default).

    Safe for concurrent runs in one process (one connection, used under a lock) and for several
    processes sharing the file (WAL mode, ``busy_timeout``). A new file is created ``0600``
    (only its owner can read the runs' data).

    Args:
        path: The database file; its folder is created. Default ``.batonflow/runs.db``.
        busy_timeout: Seconds a writer waits for another process's transaction.

    Raises:
        StoreCorruptError: The file is not a SQLite database, or not batonflow's.
        StoreReadOnlyError: The file or its folder cannot be written.
        StoreLockedError: Another process held it locked for ``busy_timeout``.
        CheckpointError: It holds a schema of a newer batonflow.
    """

    def __init__(
        self, path: str | os.PathLike[str] = ".batonflow/runs.db", *, busy_timeout: float = 10.0
    ) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        # Runs known to have a record, so a checkpoint skips recording them; an entry goes
        # when the run ends (nothing is kept per finished run).
        self._recorded: set[str] = set()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            create_private(self.path)
            self._conn = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=busy_timeout
            )
        except (OSError, sqlite3.Error) as exc:
            raise opening_error(self.path, exc) from exc
        try:
            self._setup_retrying(busy_timeout)
        except CheckpointError:
            self._conn.close()
            raise
        except sqlite3.Error as exc:
            self._conn.close()
            if is_locked(exc):
                raise StoreLockedError(
                    f"{os.fspath(self.path)!r} stayed locked by another process for "
                    f"{busy_timeout:g} s; let it finish, or pass a larger busy_timeout=."
                ) from exc
            raise store_error(self.path, exc, "open") from exc

    # -- set-up and migrations ----------------------------------------------------------------

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
                if not is_locked(exc) or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def _setup(self, busy_timeout: float) -> None:
        conn = self._conn
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL").fetchone()
        conn.execute("PRAGMA synchronous = NORMAL")
        with self._transaction(conn):
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version "
                "(component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
            )
            columns = {row[1] for row in conn.execute("PRAGMA table_info(schema_version)")}
            if not {"component", "version"} <= columns:
                raise StoreCorruptError(
                    f"{os.fspath(self.path)!r} has a schema_version table that is not "
                    "batonflow's; use another file for checkpoints."
                )
            row = conn.execute(
                "SELECT version FROM schema_version WHERE component = ?", (COMPONENT,)
            ).fetchone()
            version = 0 if row is None else int(row[0])
            if row is not None and version < 1:
                raise CheckpointError(
                    f"{os.fspath(self.path)!r} holds checkpoints of an older batonflow (schema "
                    f"version {version}, this one migrates 1 to {SCHEMA_VERSION}); finish those "
                    "runs with the version that wrote them, or move the file away."
                )
            if version > SCHEMA_VERSION:
                raise CheckpointError(
                    f"{os.fspath(self.path)!r} holds checkpoints of a newer batonflow (schema "
                    f"version {version}, this one reads up to {SCHEMA_VERSION}); use that "
                    "version, or move the file away."
                )
            if version < SCHEMA_VERSION:
                migrate(conn)
                conn.execute(
                    "INSERT OR REPLACE INTO schema_version (component, version) VALUES (?, ?)",
                    (COMPONENT, SCHEMA_VERSION),
                )

    @staticmethod
    @contextmanager
    def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            # SQLite may have rolled back already (a full disk does): rolling back again
            # would raise "cannot rollback - no transaction is active" over the real error.
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _write(
        self, action: str, fn: Callable[[sqlite3.Connection], T], *, transaction: bool = True
    ) -> T:
        """Run ``fn`` in one transaction under the lock; SQLite errors become store errors."""
        with self._lock:
            conn = self._conn
            try:
                if not transaction:
                    return fn(conn)
                with self._transaction(conn):
                    return fn(conn)
            except CheckpointError:
                raise
            except sqlite3.Error as exc:
                raise store_error(self.path, exc, action) from exc

    def _query(self, sql: str, args: tuple[Any, ...]) -> builtins.list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._conn.execute(sql, args).fetchall()
            except sqlite3.ProgrammingError as exc:
                raise CheckpointError(
                    f"The checkpoint store {os.fspath(self.path)!r} is closed ({exc}); create "
                    "a new SqliteCheckpointStore."
                ) from exc
            except sqlite3.Error as exc:
                raise store_error(self.path, exc, "read") from exc

    # -- runs ---------------------------------------------------------------------------------

    def create_run(self, record: RunRecord) -> None:
        """Record a new run (before any of its steps runs).

        Raises:
            RunConflictError: A run with that id exists.
            StoreFullError: The disk is full; nothing was written.
        """
        check_status(record.status)
        row = (
            record.run_id,
            record.workflow_name,
            record.status,
            record.created_at,
            record.updated_at,
            record.result,
            record.error,
            record.start_event,
            record.input,
            record.traceparent,
            record.owner,
            record.pid,
            record.flow_ref,
            record.waiting_seq,
        )

        def insert(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(_INSERT_RUN, row)
            except sqlite3.IntegrityError as exc:
                raise RunConflictError(
                    f"Run {record.run_id!r} exists already in {os.fspath(self.path)!r}; "
                    "start it with a new run_id, or resume it."
                ) from exc

        self._write("record a new run", insert)
        self._recorded.add(record.run_id)

    def set_status(
        self, run_id: str, status: str, *, result: str | None = None, error: str | None = None
    ) -> None:
        """Set a run's status, result and error."""
        check_status(status)
        if status in ENDED:
            self._recorded.discard(run_id)
        self._write(
            "set a run's status",
            lambda conn: conn.execute(
                "UPDATE checkpoint_runs SET status = ?, result = ?, error = ?, updated_at = ?, "
                "waiting_seq = CASE WHEN ? = 'waiting' THEN waiting_seq END WHERE run_id = ?",
                (status, result, error, time.time(), status, run_id),
            ),
        )

    def finish_run(
        self,
        run_id: str,
        status: str,
        *,
        result: str | None = None,
        error: str | None = None,
        end: str | None = None,
    ) -> None:
        """Record how a run ended; with ``end``, also its last log entry, in one transaction.

        Both commit together: a process killed at any moment leaves either a run still in
        progress (resumed at the next start) or an ended run whose log ends.
        """
        if end is None:
            self.set_status(run_id, status, result=result, error=error)
            return
        check_status(status)
        if status in ENDED:
            self._recorded.discard(run_id)

        def finish(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO run_events (run_id, seq, kind, body) SELECT ?, "
                "COALESCE(MAX(seq), 0) + 1, 'end', ? FROM run_events WHERE run_id = ?",
                (run_id, end, run_id),
            )
            conn.execute(
                "UPDATE checkpoint_runs SET status = ?, result = ?, error = ?, updated_at = ?, "
                "waiting_seq = CASE WHEN ? = 'waiting' THEN waiting_seq END WHERE run_id = ?",
                (status, result, error, time.time(), status, run_id),
            )

        self._write("record how a run ended", finish, transaction=True)

    def runs(
        self,
        *,
        workflow_name: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> builtins.list[RunRecord]:
        """Runs, oldest first, optionally by workflow name and status (the newest ``limit``)."""
        sql = f"SELECT {_RUN_COLUMNS} FROM checkpoint_runs WHERE 1=1"
        args: builtins.list[Any] = []
        if workflow_name is not None:
            sql += " AND workflow_name = ?"
            args.append(workflow_name)
        if status is not None:
            sql += " AND status = ?"
            args.append(status)
        if limit is not None:
            sql = f"SELECT * FROM ({sql} ORDER BY created_at DESC, run_id DESC LIMIT ?)"
            args.append(int(limit))
        rows = self._query(sql + " ORDER BY created_at, run_id", tuple(args))
        return [RunRecord(*row) for row in rows]

    def run(self, run_id: str) -> RunRecord | None:
        """The record of one run, or ``None``."""
        rows = self._query(
            f"SELECT {_RUN_COLUMNS} FROM checkpoint_runs WHERE run_id = ?", (run_id,)
        )
        return RunRecord(*rows[0]) if rows else None

    def delete(self, run_id: str) -> None:
        """Forget a run with its checkpoints, event log and inbox."""

        def delete(conn: sqlite3.Connection) -> None:
            for table in ("checkpoints", "run_events", "run_inbox"):
                conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM checkpoint_runs WHERE run_id = ?", (run_id,))

        self._write("delete a run", delete)

    # -- checkpoints --------------------------------------------------------------------------

    def put(self, checkpoint: Checkpoint) -> None:
        """Store a checkpoint (and the state keys it changed) in one transaction.

        A run that was not recorded with :meth:`create_run` is recorded as ``running``.

        Raises:
            CheckpointError: A checkpoint with the same id or ``(run_id, seq)`` exists, or the
                context cannot be written as JSON.
            StoreFullError: The disk is full; nothing was written.
        """
        try:
            ctx_json = json.dumps(checkpoint.ctx_data, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError) as exc:
            raise CheckpointError(
                f"Checkpoint {checkpoint.id} of run {checkpoint.run_id} has ctx_data that is not "
                f"JSON ({exc}); build it with ctx.to_dict()."
            ) from exc
        mode = None if checkpoint.state_changes is None else int(checkpoint.state_changes)
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
            checkpoint.inbox_seq,
            mode,
        )

        def insert(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(_INSERT_CHECKPOINT, row)
            except sqlite3.IntegrityError as exc:
                raise CheckpointError(
                    f"Run {checkpoint.run_id} already has checkpoint {checkpoint.id} or seq "
                    f"{checkpoint.seq} ({exc}); is another process resuming the same run?"
                ) from exc
            if checkpoint.run_id not in self._recorded:
                # A run checkpointed without create_run (a bare store user): record it.
                now = time.time()
                conn.execute(
                    "INSERT INTO checkpoint_runs (run_id, workflow_name, status, created_at, "
                    "updated_at) VALUES (?, ?, 'running', ?, ?) ON CONFLICT(run_id) DO NOTHING",
                    (checkpoint.run_id, checkpoint.workflow_name, now, now),
                )

        if checkpoint.run_id in self._recorded:
            # The run's record exists: one INSERT is atomic by itself (no BEGIN/COMMIT).
            self._write("write a checkpoint", insert, transaction=False)
            return
        self._write("write a checkpoint", insert)
        self._recorded.add(checkpoint.run_id)

    def list(self, run_id: str) -> builtins.list[Checkpoint]:
        """The run's checkpoints, oldest first."""
        rows = self._query(
            f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE run_id = ? ORDER BY seq",
            (run_id,),
        )
        found: builtins.list[Checkpoint] = []
        state: dict[str, str] = {}
        for row in rows:  # the state rebuilt as it goes: one pass, not one query per row
            found.append(self._checkpoint(row, state))
        return found

    def latest(self, run_id: str) -> Checkpoint | None:
        """The run's most recent checkpoint, or ``None``."""
        rows = self._query(
            f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE run_id = ? "
            "ORDER BY seq DESC LIMIT 1",
            (run_id,),
        )
        return self._checkpoint(rows[0]) if rows else None

    def get(self, checkpoint_id: str) -> Checkpoint:
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

    # -- event log ----------------------------------------------------------------------------

    def append_event(self, run_id: str, kind: str, body: str, *, waiting: bool = False) -> int:
        """Append one entry to the run's event log and return its ``seq`` (from 1).

        Args:
            run_id: The run.
            kind: ``"event"`` or ``"end"``.
            body: The entry as JSON text.
            waiting: The event asks for input: the run becomes ``waiting`` for it, atomically.

        Raises:
            StoreFullError: The disk is full; nothing was written.
        """

        def append(conn: sqlite3.Connection) -> int:
            # One statement takes the next seq and writes the entry: atomic on its own.
            (seq,) = conn.execute(
                "INSERT INTO run_events (run_id, seq, kind, body) SELECT ?, "
                "COALESCE(MAX(seq), 0) + 1, ?, ? FROM run_events WHERE run_id = ? RETURNING seq",
                (run_id, kind, body, run_id),
            ).fetchone()
            if waiting:
                conn.execute(
                    "UPDATE checkpoint_runs SET status = 'waiting', waiting_seq = ?, "
                    "updated_at = ? WHERE run_id = ? AND status IN ('running', 'waiting')",
                    (seq, time.time(), run_id),
                )
            return int(seq)

        return self._write("record a stream event", append, transaction=waiting)

    def events(
        self, run_id: str, after: int = 0, limit: int | None = None
    ) -> builtins.list[StoredEvent]:
        """The run's log entries with ``seq > after``, in order (at most ``limit``)."""
        sql = "SELECT seq, kind, body FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq"
        args: tuple[Any, ...] = (run_id, after)
        if limit is not None:
            sql += " LIMIT ?"
            args = (*args, int(limit))
        return [StoredEvent(int(s), str(k), str(b)) for s, k, b in self._query(sql, args)]

    # -- inbox --------------------------------------------------------------------------------

    def post_event(self, run_id: str, body: str, *, answer: bool = False) -> int:
        """Commit an event sent to a run into its inbox; return its inbox ``seq``.

        Args:
            run_id: The run.
            body: The event, serialized.
            answer: It answers the question the run waits for: accepted only while the run is
                ``waiting`` and only once per question (the run becomes ``running``).

        Raises:
            RunConflictError: The run is unknown or has ended, or (``answer``) it waits for
                nothing or its question was answered already.
            StoreFullError: The disk is full; nothing was written.
        """

        def post(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                "SELECT status, waiting_seq FROM checkpoint_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            key = check_post(run_id, None if row is None else (row[0], row[1]), answer)
            (seq,) = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM run_inbox WHERE run_id = ?", (run_id,)
            ).fetchone()
            try:
                conn.execute(
                    "INSERT INTO run_inbox (run_id, seq, body, key, created_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (run_id, seq, body, key, time.time()),
                )
            except sqlite3.IntegrityError as exc:
                raise answered_error(run_id) from exc
            if key is not None:
                conn.execute(
                    "UPDATE checkpoint_runs SET status = 'running', updated_at = ? "
                    "WHERE run_id = ?",
                    (time.time(), run_id),
                )
            return int(seq)

        return self._write("commit an event to the run's inbox", post)

    def inbox(self, run_id: str, after: int = 0) -> builtins.list[InboxItem]:
        """The run's inbox events with ``seq > after``, in order."""
        rows = self._query(
            "SELECT seq, body, key FROM run_inbox WHERE run_id = ? AND seq > ? ORDER BY seq",
            (run_id, after),
        )
        return [InboxItem(int(s), str(b), k) for s, b, k in rows]

    # -- the rest -----------------------------------------------------------------------------

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

    def _checkpoint(
        self, row: tuple[Any, ...], running: dict[str, str] | None = None
    ) -> Checkpoint:
        """A row as a Checkpoint with its whole state; ``running`` carries the state of the
        run's previous row when rows are read in order."""
        cid, run_id, seq, workflow_name, step, input_type, outputs, created, ctx, final = row[:10]
        inbox_seq, mode = row[10], row[11]
        try:
            ctx_data = json.loads(ctx)
            output_types = tuple(json.loads(outputs))
            if not isinstance(ctx_data, dict):
                raise ValueError("ctx_data is not a JSON object")
            if mode is not None:
                state = dict(ctx_data.get("state") or {})
                if running is None:
                    values = self._state_at(run_id, int(seq))
                else:
                    if mode == 0:
                        running.clear()
                    for key, value in state_values(state).items():
                        if value is None:
                            running.pop(key, None)
                        else:
                            running[str(key)] = str(value)
                    values = dict(running)
                ctx_data["state"] = with_state_values(state, values)
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
                inbox_seq=int(inbox_seq or 0),
            )
        except (TypeError, ValueError, RecursionError) as exc:
            raise StoreCorruptError(
                f"Checkpoint {cid!r} of run {run_id!r} in {os.fspath(self.path)!r} is corrupt "
                f"({exc}); delete the run (store.delete(run_id)) and start it again."
            ) from exc

    def _state_at(self, run_id: str, seq: int) -> dict[str, str]:
        """The untyped state as of checkpoint ``seq``: its last whole state plus changes."""
        base = self._query(
            "SELECT COALESCE(MAX(seq), 0) FROM checkpoints WHERE run_id = ? AND seq <= ? "
            "AND state_mode = 0",
            (run_id, seq),
        )[0][0]
        rows = self._query(
            "SELECT json_extract(ctx_data, '$.state') FROM checkpoints "
            "WHERE run_id = ? AND seq >= ? AND seq <= ? AND state_mode IS NOT NULL ORDER BY seq",
            (run_id, base, seq),
        )
        state: dict[str, str] = {}
        for (changes,) in rows:
            for key, value in state_values(json.loads(changes or "{}")).items():
                if value is None:
                    state.pop(key, None)
                else:
                    state[str(key)] = str(value)
        return state


__all__ = ["COMPONENT", "SCHEMA_VERSION", "SqliteCheckpointStore"]
