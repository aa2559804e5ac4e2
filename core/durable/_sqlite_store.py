"""The SQLite run store: runs, checkpoints, event log and inbox in one file.

The records, statements and checks are :class:`~batonflow.core.durable._sql_store.SqlRunStore`'s; this
module is the SQLite dialect: the file, its schema version, the connection, transactions, and
SQLite's errors as store errors.

Tables (a file can hold other components' tables too):

* ``schema_version(component, version)``: one row per component; ours is ``checkpoints``.
* ``checkpoint_runs``: one row per run (workflow, status, start event, result or error, who
  runs it, what it waits for).
* ``checkpoints``: one row per checkpoint, ``ctx_data`` as JSON text, unique ``(run_id, seq)``
  (and unique ``id``: an id not of the form ``"<run_id>:<seq>"`` is in an index of its own).
  A checkpoint's ``ctx_data`` may hold only the untyped state keys its step changed
  (``state_mode`` 1; 0 for a whole state; 2 when a key that grew is stored as the edit of its
  previous text), so it writes what changed, not what the run holds; reading it back applies
  the changes since the last whole state.
* ``run_events``: the append-only event log, ``(run_id, seq)`` given once per event.
* ``run_inbox``: events sent to a run, unique ``(run_id, key)`` so one question takes one
  answer.

Versions: 1 (the first release: runs and checkpoints only, plus the server's own
``server_runs``/``server_events``/``flow_refs`` tables), 2 and 3 are migrated in place to 4, in
one transaction; the server's records move into the one store. Version 4 added the runs'
``idempotency_key``, unique where given, and a forked run's parent. Version 3 has no primary key on
``checkpoints.id``: the ids the checkpointer makes (``"<run_id>:<seq>"``) are found through the
``(run_id, seq)`` index, and only other ids are indexed, so a checkpoint's insert writes two
b-trees, not three.

One connection per store, used under a lock (``check_same_thread=False``), in autocommit mode
with explicit ``BEGIN IMMEDIATE`` transactions, so concurrent writers in other processes wait on
``busy_timeout`` instead of failing. ``synchronous=NORMAL`` in WAL mode: a commit survives a
crash of the process (what ``kill -9`` tests); only a power loss may drop the last commits.
SQLite errors come out as :class:`CheckpointError` subclasses that say whether the disk is full,
the file read-only, locked, or corrupt.
"""

from __future__ import annotations

import builtins
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from ..errors import CheckpointError, StoreCorruptError, StoreLockedError
from ._holds import forget_holder, new_holder
from ._rechecks import Recheck
from ._records import Checkpoint, RunRecord, checkpoint_taken_error
from ._sql_schema import RUN_COLUMNS, RUN_FIELDS, Statements
from ._sql_store import SqlRunStore
from ._sqlite_schema import create_private, is_locked, migrate, opening_error, store_error

SCHEMA_VERSION = 10
COMPONENT = "checkpoints"
T = TypeVar("T")

_SQL = replace(
    Statements.build("?", state_json="json_extract(ctx_data, '$.state')"),
    # A new run is held by the process that starts it (see core/_holds.py).
    insert_run=f"INSERT INTO checkpoint_runs ({RUN_COLUMNS}, lease_owner) "
    f"VALUES ({', '.join(['?'] * (RUN_FIELDS + 1))})",
)
_INSERT_CHECKPOINT = _SQL.insert_checkpoint
_APPEND_EVENT = _SQL.append_event


class SqliteCheckpointStore(SqlRunStore):
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

    sql = _SQL
    unique_violation = (sqlite3.IntegrityError,)

    def __init__(
        self, path: str | os.PathLike[str] = ".batonflow/runs.db", *, busy_timeout: float = 10.0
    ) -> None:
        self.path = Path(path)
        super().__init__(repr(os.fspath(self.path)))
        self._holder = new_holder()
        self._lock = threading.Lock()
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
                    f"version {version}, this one opens versions 1 to {SCHEMA_VERSION}); finish "
                    "those runs with the version that wrote them, or move the file away."
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
        self,
        action: str,
        fn: Callable[[sqlite3.Connection], T],
        *,
        transaction: bool = True,
        idempotent: bool = False,
        recheck: Recheck[T] | None = None,
    ) -> T:
        """Run ``fn`` in one transaction under the lock; SQLite errors become store errors.

        ``idempotent`` and ``recheck`` are not needed: a local file loses no answers.
        """
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
                raise self._closed_error(exc) from exc
            except sqlite3.Error as exc:
                raise store_error(self.path, exc, "read") from exc

    def _run_args(self, record: RunRecord) -> tuple[Any, ...]:
        return (*super()._run_args(record), self._holder)

    # The durable step's writes, one statement each (atomic by itself: no BEGIN/COMMIT), go
    # straight to the connection: no closure, no _write call on the hot path.

    def _put_recorded(self, checkpoint: Checkpoint, row: tuple[Any, ...]) -> None:
        with self._lock:
            try:
                self._conn.execute(_INSERT_CHECKPOINT, row)
            except sqlite3.IntegrityError as exc:
                raise checkpoint_taken_error(checkpoint) from exc
            except sqlite3.Error as exc:
                raise store_error(self.path, exc, "write a checkpoint") from exc

    def append_event(self, run_id: str, kind: str, body: str, *, waiting: bool = False) -> int:
        """As :meth:`SqlRunStore.append_event`; a plain event is one statement, no transaction.

        Raises:
            StoreFullError: The disk is full; nothing was written.
        """
        if waiting:
            return super().append_event(run_id, kind, body, waiting=True)
        with self._lock:
            try:
                (seq,) = self._conn.execute(_APPEND_EVENT, (run_id, kind, body, run_id)).fetchone()
            except sqlite3.Error as exc:
                raise store_error(self.path, exc, "record a stream event") from exc
        return int(seq)

    # -- the rest -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (the store cannot be used afterwards); the runs it held are
        free for other stores."""
        if self._holder is not None:
            forget_holder(self._holder)
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"SqliteCheckpointStore({os.fspath(self.path)!r})"


__all__ = ["COMPONENT", "SCHEMA_VERSION", "SqliteCheckpointStore"]
