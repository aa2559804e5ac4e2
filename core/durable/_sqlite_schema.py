"""The SQLite run store's schema: the migrations from versions 1 and 2, and SQLite's errors.

Kept apart from :mod:`batonflow.core.durable._sqlite_store` (the store's operations) so each stays one
concept: this module knows what the file looks like and how to tell SQLite's errors apart.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ..errors import (
    CheckpointError,
    StoreCorruptError,
    StoreFullError,
    StoreLockedError,
    StoreReadOnlyError,
)
from ._queue import queue_statements
from ._schedules import schedule_statements
from ._sql_schema import (
    CHECKPOINT_COLUMNS,
    KEY_INDEX,
    PARENT_INDEX,
    TABLES,
    create_statements,
    create_table,
)

#: The columns of each table in the version-1 file; version 2 added the others.
_V1_COLUMNS = {"checkpoint_runs": 7, "checkpoints": 10}
#: A checkpoint row, as the migration writes one for a version-1 server's waiting snapshot.
_INSERT_MIGRATED = (
    f"INSERT INTO checkpoints ({CHECKPOINT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
)


def create_private(path: Path) -> None:
    """Create the database file readable by its owner only (SQLite would use the umask)."""
    if path.exists() or os.fspath(path) == ":memory:":
        return
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def migrate(conn: sqlite3.Connection) -> None:
    """Bring a fresh file, or one of versions 1 to 9, to version 10 (inside the set-up
    transaction)."""
    # A fresh file gets the tables whole; a version-1 file keeps its two tables, which get
    # the columns version 2 added (in the same order, so both files read alike).
    for statement in create_statements():
        conn.execute(statement)
    _add_version_2(conn)
    # Version 3: checkpoints without the primary key on id (one index less per insert).
    if any(row[3] == "pk" for row in conn.execute("PRAGMA index_list(checkpoints)")):
        _rebuild_checkpoints(conn)
    # Version 4: the idempotency key's and the parent's columns came with _add_version_2 (it
    # adds every column a run's table lacks); their indexes come once the columns are there.
    conn.execute(KEY_INDEX)
    conn.execute(PARENT_INDEX)
    # Version 5: the schedules and their firings (core/durable/_schedules.py).
    for statement in schedule_statements():
        conn.execute(statement)
    # Version 6: checkpoint_runs.workflow_version, added by _add_version_2 as every column a
    # run's table lacks (a run recorded before it has none: its check reads its checkpoint).
    # Version 7: the run queue (core/durable/_queue.py).
    for statement in queue_statements():
        conn.execute(statement)
    # Version 8: run_budgets and run_usage came with create_statements above.
    # Version 9: a child run's parent step and a run's parent kind (columns _add_version_2
    # adds as it added version 4's).
    # Version 10: no new table or column. Checkpoints may hold state edits (state_mode 2,
    # core/durable/_state_extensions.py), which a batonflow reading up to version 9 would read
    # as whole values: the version makes it refuse the file instead.


def _rebuild_checkpoints(conn: sqlite3.Connection) -> None:
    """Copy the checkpoints into a table of version 3: SQLite cannot drop a primary key.

    Every row keeps its id: the random ids of version 2 (and version 1's) are not of the
    ``"<run_id>:<seq>"`` form, so the index of such ids holds them and ``get`` finds them.
    """
    conn.execute("DROP TABLE IF EXISTS checkpoints_v3")
    conn.execute(create_table("checkpoints", name="checkpoints_v3"))
    conn.execute(
        f"INSERT INTO checkpoints_v3 ({CHECKPOINT_COLUMNS}) "
        f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints ORDER BY run_id, seq"
    )
    conn.execute("DROP TABLE checkpoints")  # with its indexes
    conn.execute("ALTER TABLE checkpoints_v3 RENAME TO checkpoints")
    for statement in create_statements():  # the indexes of the new table
        conn.execute(statement)


def _add_version_2(conn: sqlite3.Connection) -> None:
    """Version 2: the new columns of version 1's tables, its statuses and server tables."""
    for table, first in _V1_COLUMNS.items():
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        for name, kind in TABLES[table][first:]:
            if name not in have:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
    # Version 1 had a "timed_out" status: version 2 says "failed" (the error names the timeout).
    conn.execute("UPDATE checkpoint_runs SET status = 'failed' WHERE status = 'timed_out'")
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "server_runs" in tables and {"run_id", "workflow", "status", "start"} <= {
        row[1] for row in conn.execute("PRAGMA table_info(server_runs)")
    }:
        _import_server_tables(conn, tables)


def _import_server_tables(conn: sqlite3.Connection, tables: set[str]) -> None:
    """Move the version-1 server's own run records into the one store, then drop them."""
    conn.execute(
        "INSERT OR IGNORE INTO checkpoint_runs (run_id, workflow_name, status, created_at, "
        "updated_at) SELECT run_id, workflow, status, created_at, updated_at FROM server_runs"
    )
    conn.execute(
        "UPDATE checkpoint_runs SET owner = 'server', "
        "input = (SELECT start FROM server_runs s WHERE s.run_id = checkpoint_runs.run_id), "
        "traceparent = (SELECT traceparent FROM server_runs s "
        "WHERE s.run_id = checkpoint_runs.run_id), "
        "status = (SELECT CASE s.status WHEN 'timed_out' THEN 'failed' ELSE s.status END "
        "FROM server_runs s WHERE s.run_id = checkpoint_runs.run_id), "
        "result = COALESCE(result, (SELECT CASE WHEN s.result IS NULL THEN NULL ELSE s.result END "
        "FROM server_runs s WHERE s.run_id = checkpoint_runs.run_id)), "
        "error = COALESCE(error, (SELECT error FROM server_runs s "
        "WHERE s.run_id = checkpoint_runs.run_id)) "
        "WHERE run_id IN (SELECT run_id FROM server_runs)"
    )
    # A waiting run's snapshot becomes its latest checkpoint, so it is resumed from there.
    for run_id, workflow, snapshot, created in conn.execute(
        "SELECT run_id, workflow, snapshot, updated_at FROM server_runs "
        "WHERE snapshot IS NOT NULL AND status = 'waiting'"
    ).fetchall():
        (seq,) = conn.execute(
            "SELECT COALESCE(MAX(seq), -1) + 1 FROM checkpoints WHERE run_id = ?", (run_id,)
        ).fetchone()
        conn.execute(
            _INSERT_MIGRATED,
            (
                f"{run_id}-migrated",
                run_id,
                seq,
                workflow,
                None,
                None,
                "[]",
                created,
                snapshot,
                None,
                0,
                None,
            ),
        )
    if "server_events" in tables:
        conn.execute(
            "INSERT OR IGNORE INTO run_events (run_id, seq, kind, body) "
            "SELECT run_id, seq, kind, body FROM server_events"
        )
        conn.execute("DROP TABLE server_events")
    if "flow_refs" in tables:
        pid = "pid" in {row[1] for row in conn.execute("PRAGMA table_info(flow_refs)")}
        conn.execute(
            "UPDATE checkpoint_runs SET flow_ref = (SELECT flow FROM flow_refs f "
            "WHERE f.run_id = checkpoint_runs.run_id)"
            + (
                ", pid = (SELECT pid FROM flow_refs f WHERE f.run_id = checkpoint_runs.run_id)"
                if pid
                else ""
            )
            + ", owner = COALESCE(owner, 'cli') WHERE run_id IN (SELECT run_id FROM flow_refs)"
        )
        conn.execute("DROP TABLE flow_refs")
    conn.execute("DROP TABLE server_runs")


def _errorname(exc: BaseException) -> str:
    return str(getattr(exc, "sqlite_errorname", "") or "")


def _size_limit_reached(path: Path) -> int | None:
    """The file-size limit (``RLIMIT_FSIZE``) the database or its WAL has reached, if any.

    A write past that limit fails as on a full disk (``EFBIG``), though the disk has space.
    """
    try:
        import resource  # Unix only: an optional module, absent on Windows
    except ImportError:  # pragma: no cover - Windows
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if soft == resource.RLIM_INFINITY:
        return None
    for file in (path, path.with_name(path.name + "-wal")):
        try:
            # A write of a page (and a WAL frame's header) past the limit is refused.
            if file.stat().st_size + 4096 + 24 > soft:
                return int(soft)
        except OSError:
            continue
    return None


def is_locked(exc: sqlite3.Error) -> bool:
    """Whether SQLite refused because another connection holds a lock (SQLITE_BUSY)."""
    return isinstance(exc, sqlite3.OperationalError) and (
        "locked" in str(exc) or _errorname(exc).startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))
    )


def store_error(path: Path, exc: BaseException, action: str) -> CheckpointError:
    """The :class:`CheckpointError` subclass that tells what went wrong with the file."""
    where = os.fspath(path)
    name = _errorname(exc)
    text = str(exc)
    if name == "SQLITE_FULL" or "full" in text or name.startswith("SQLITE_IOERR_WRITE"):
        limit = _size_limit_reached(path)
        if limit is not None:
            return StoreFullError(
                f"Could not {action}: {where!r} reached this process's file-size limit "
                f"({limit:,} bytes, ulimit -f) ({text}); nothing was written and what was "
                "committed before is intact. Raise the limit, then resume the run."
            )
        return StoreFullError(
            f"Could not {action}: the disk holding {where!r} is full ({text}); nothing was "
            "written and what was committed before is intact. Free space, then resume the run."
        )
    if name.startswith("SQLITE_READONLY") or "readonly" in text or name == "SQLITE_PERM":
        return StoreReadOnlyError(
            f"Could not {action}: {where!r} is read-only ({text}); make the file and its "
            "folder writable, or pass another path."
        )
    if is_locked(exc):  # type: ignore[arg-type]
        return StoreLockedError(
            f"Could not {action}: {where!r} stayed locked by another process ({text}); let it "
            "finish, or pass a larger busy_timeout=."
        )
    if (
        name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
        or "malformed" in text
        or ("not a database" in text)
    ):
        return StoreCorruptError(
            f"Could not {action}: {where!r} is corrupt or not a SQLite database ({text}); "
            "move it away or pass another path."
        )
    if name.startswith("SQLITE_IOERR") or name == "SQLITE_CANTOPEN":
        return StoreFullError(
            f"Could not {action}: writing {where!r} failed ({text}); the disk may be full or "
            "failing. Free space or fix the disk, then resume the run."
        )
    return CheckpointError(
        f"Could not {action} in {where!r} ({type(exc).__name__}: {text}); check the file, or "
        "pass another path."
    )


def opening_error(path: Path, exc: BaseException) -> CheckpointError:
    if isinstance(exc, PermissionError) or (
        isinstance(exc, OSError) and exc.errno in (13, 30)  # EACCES, EROFS
    ):
        return StoreReadOnlyError(
            f"Cannot open the checkpoint database {os.fspath(path)!r} ({exc}); it is not "
            "writable: pass a writable path to SqliteCheckpointStore(path=...)."
        )
    if isinstance(exc, OSError) and exc.errno == 28:  # ENOSPC
        return StoreFullError(
            f"Cannot create the checkpoint database {os.fspath(path)!r}: the disk is full "
            f"({exc}); free space, or pass another path."
        )
    if isinstance(exc, sqlite3.Error):
        return store_error(path, exc, "open")
    return CheckpointError(
        f"Cannot open the checkpoint database {os.fspath(path)!r} ({exc}); pass a writable "
        "path to SqliteCheckpointStore(path=...)."
    )


__all__ = ["create_private", "is_locked", "migrate", "opening_error", "store_error"]
