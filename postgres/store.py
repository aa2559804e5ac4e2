"""The PostgreSQL run store: the SQLite store's records on a server that many processes share.

Tables (in the database's ``public`` schema, or the one ``search_path`` names):

* ``batonflow_schema(component, version)``: our schema version, migrated by version under an
  advisory lock so replicas starting together do not race.
* ``checkpoint_runs``: one row per run, with ``lease_owner``/``lease_until`` for replicas.
* ``checkpoints``, ``run_events``, ``run_inbox``: as in the SQLite store (a checkpoint's
  ``ctx_data`` may hold only the state keys its step changed, ``state_mode`` 1).

Every write is one transaction on a pooled connection (psycopg 3 and ``psycopg_pool``: one
library for the blocking store calls the engine makes at step boundaries and for the server's
asynchronous ``LISTEN``). A write that changes a run's event log or inbox also sends a
``NOTIFY`` (delivered on commit), which :mod:`batonflow.postgres.leases` listens to.

With ``replica_id`` set (a server replica), the store *fences* its writes: a checkpoint, a
stream event or a status change of a run leased to another replica raises
:class:`LeaseLostError`, so a replica that lost a run (it stalled past its lease and another
took the run over) cannot write into it any more. A run is never advanced by two replicas.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit

import psycopg
from batonflow.core._records import (
    ACTIVE,
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
from batonflow.core.errors import (
    CheckpointError,
    LeaseLostError,
    RunConflictError,
    StoreCorruptError,
    StoreFullError,
    StoreLockedError,
    StoreReadOnlyError,
)
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

SCHEMA_VERSION = 2
COMPONENT = "checkpoints"
EVENTS_CHANNEL = "batonflow_events"
INBOX_CHANNEL = "batonflow_inbox"
T = TypeVar("T")

#: The server's clock, so leases do not depend on the replicas' clocks agreeing.
NOW = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS checkpoint_runs (
        run_id TEXT PRIMARY KEY,
        workflow_name TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        result TEXT,
        error TEXT,
        start_event TEXT,
        input TEXT,
        traceparent TEXT,
        owner TEXT,
        pid INTEGER,
        flow_ref TEXT,
        waiting_seq INTEGER,
        lease_owner TEXT,
        lease_until DOUBLE PRECISION
    )""",
    "CREATE INDEX IF NOT EXISTS checkpoint_runs_by_status "
    "ON checkpoint_runs (status, workflow_name)",
    """CREATE TABLE IF NOT EXISTS checkpoints (
        id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        workflow_name TEXT NOT NULL,
        step_name TEXT,
        input_event_type TEXT,
        output_event_types TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        ctx_data TEXT NOT NULL,
        final_event TEXT,
        inbox_seq INTEGER NOT NULL DEFAULT 0,
        state_mode INTEGER,
        UNIQUE (run_id, seq)
    )""",
    "CREATE TABLE IF NOT EXISTS run_events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, "
    "kind TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, seq))",
    "CREATE TABLE IF NOT EXISTS run_inbox (run_id TEXT NOT NULL, seq INTEGER NOT NULL, "
    "body TEXT NOT NULL, key TEXT, created_at DOUBLE PRECISION NOT NULL, "
    "PRIMARY KEY (run_id, seq), UNIQUE (run_id, key))",
)
#: What each version adds, applied in order to a database at an older version.
_MIGRATIONS: dict[int, tuple[str, ...]] = {2: _SCHEMA}

_CHECKPOINT_COLUMNS = (
    "id, run_id, seq, workflow_name, step_name, input_event_type, output_event_types, "
    "created_at, ctx_data, final_event, inbox_seq, state_mode"
)
_RUN_COLUMNS = (
    "run_id, workflow_name, status, created_at, updated_at, result, error, start_event, input, "
    "traceparent, owner, pid, flow_ref, waiting_seq"
)


class PostgresCheckpointStore:
    """Runs, checkpoints, event logs and inboxes in a PostgreSQL database.

    Args:
        url: A ``postgresql://user:password@host:port/database`` URL (libpq's forms work).
        replica_id: This process's name among the servers sharing the database. When set,
            runs it creates are leased to it and its writes are fenced (see the module doc).
        lease_seconds: How long a lease lasts without a heartbeat (:meth:`renew_leases`).
        min_size: Connections the pool keeps open.
        max_size: Connections the pool opens at most.
        connect_timeout: Seconds to wait for a connection before failing.

    Raises:
        CheckpointError: The server cannot be reached, or refused the connection.
        StoreCorruptError: The database holds a batonflow schema of a newer version.
    """

    def __init__(
        self,
        url: str,
        *,
        replica_id: str | None = None,
        lease_seconds: float = 15.0,
        min_size: int = 1,
        max_size: int = 8,
        connect_timeout: float = 10.0,
    ) -> None:
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds={lease_seconds!r} must be positive, e.g. 15.")
        self.url = url
        self.replica_id = replica_id
        self.lease_seconds = float(lease_seconds)
        self._where = _redacted(url)
        self._recorded: set[str] = set()
        self._pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True, "connect_timeout": max(1, int(connect_timeout))},
            timeout=connect_timeout,
            open=False,
            name="batonflow",
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except PoolTimeout as exc:
            self._pool.close()
            raise CheckpointError(
                f"Cannot connect to PostgreSQL at {self._where} within {connect_timeout:g} s; "
                "check that the server runs and the URL (user, password, host, port, "
                "database) is right."
            ) from exc
        try:
            self._write("set up the schema", self._setup)
        except BaseException:
            self._pool.close()
            raise

    # -- set-up ---------------------------------------------------------------------------------

    def _setup(self, conn: psycopg.Connection[Any]) -> None:
        # One replica at a time creates or migrates the schema.
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('batonflow.schema'))")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS batonflow_schema "
            "(component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
        )
        row = conn.execute(
            "SELECT version FROM batonflow_schema WHERE component = %s", (COMPONENT,)
        ).fetchone()
        version = 0 if row is None else int(row[0])
        if version > SCHEMA_VERSION:
            raise StoreCorruptError(
                f"The database at {self._where} holds runs of a newer batonflow (schema "
                f"version {version}, this one reads up to {SCHEMA_VERSION}); use that version, "
                "or another database."
            )
        for target in sorted(v for v in _MIGRATIONS if v > version):
            for statement in _MIGRATIONS[target]:
                conn.execute(statement)  # type: ignore[arg-type]
        if version < SCHEMA_VERSION:
            conn.execute(
                "INSERT INTO batonflow_schema (component, version) VALUES (%s, %s) "
                "ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version",
                (COMPONENT, SCHEMA_VERSION),
            )

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection (autocommit) for a caller's own queries; errors as store errors."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except CheckpointError:
            raise
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._error(exc, "query the store") from exc

    def _write(self, action: str, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Run ``fn`` in one transaction; PostgreSQL errors become store errors."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                return fn(conn)
        except CheckpointError:
            raise
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._error(exc, action) from exc

    def _execute(self, action: str, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Run ``fn`` (one statement, atomic by itself) outside a transaction block."""
        try:
            with self._pool.connection() as conn:
                return fn(conn)
        except CheckpointError:
            raise
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._error(exc, action) from exc

    def _lost(self, run_id: str) -> LeaseLostError:
        owner = self.lease_of(run_id)[0]
        return LeaseLostError(
            f"Run {run_id!r} is held by replica {owner!r}, not by {self.replica_id!r}; it goes "
            "on there. Stop running it here."
        )

    def _query(self, sql: str, args: tuple[Any, ...]) -> builtins.list[tuple[Any, ...]]:
        if self._pool.closed:
            raise CheckpointError(
                f"The checkpoint store at {self._where} is closed; create a new "
                "PostgresCheckpointStore."
            )
        try:
            with self._pool.connection() as conn:
                return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._error(exc, "read") from exc

    def _fence(self, conn: psycopg.Connection[Any], run_id: str) -> tuple[Any, ...] | None:
        """Lock the run's row; raise :class:`LeaseLostError` if another replica holds it."""
        row = conn.execute(
            f"SELECT status, waiting_seq, lease_owner, lease_until > {NOW} "
            "FROM checkpoint_runs WHERE run_id = %s FOR UPDATE",
            (run_id,),
        ).fetchone()
        if (
            row is not None
            and self.replica_id is not None
            and row[2] is not None
            and row[2] != self.replica_id
        ):
            raise LeaseLostError(
                f"Run {run_id!r} is held by replica {row[2]!r}, not by {self.replica_id!r}; "
                "it goes on there. Stop running it here."
            )
        return row

    # -- runs -----------------------------------------------------------------------------------

    def create_run(self, record: RunRecord) -> None:
        """Record a new run (before any of its steps runs); leased to this replica if it has one.

        Raises:
            RunConflictError: A run with that id exists.
            StoreFullError: The server's disk is full; nothing was written.
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
            self.replica_id,
            self.replica_id is not None,
            self.lease_seconds,
        )

        def insert(conn: psycopg.Connection[Any]) -> None:
            try:
                conn.execute(
                    f"INSERT INTO checkpoint_runs ({_RUN_COLUMNS}, lease_owner, lease_until) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
                    f"CASE WHEN %s THEN {NOW} + %s END)",
                    row,
                )
            except pg_errors.UniqueViolation as exc:
                raise RunConflictError(
                    f"Run {record.run_id!r} exists already in {self._where}; start it with a "
                    "new run_id, or resume it."
                ) from exc

        self._write("record a new run", insert)
        self._recorded.add(record.run_id)

    def set_status(
        self, run_id: str, status: str, *, result: str | None = None, error: str | None = None
    ) -> None:
        """Set a run's status, result and error; an ended run's lease is released."""
        check_status(status)
        if status in ENDED:
            self._recorded.discard(run_id)

        def update(conn: psycopg.Connection[Any]) -> None:
            self._fence(conn, run_id)
            self._update_status(conn, run_id, status, result, error)

        self._write("set a run's status", update)

    def _update_status(
        self,
        conn: psycopg.Connection[Any],
        run_id: str,
        status: str,
        result: str | None,
        error: str | None,
    ) -> None:
        ended = status in ENDED
        conn.execute(
            "UPDATE checkpoint_runs SET status = %s, result = %s, error = %s, "
            "updated_at = %s, waiting_seq = CASE WHEN %s = 'waiting' THEN waiting_seq END, "
            "lease_owner = CASE WHEN %s THEN NULL ELSE lease_owner END, "
            "lease_until = CASE WHEN %s THEN NULL ELSE lease_until END WHERE run_id = %s",
            (status, result, error, time.time(), status, ended, ended, run_id),
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

        The status, the released lease and the ``end`` entry commit together, so a replica
        killed at any moment leaves either a run still in progress (taken over and resumed)
        or an ended run whose log ends: never an ended run that readers wait on forever.
        """
        check_status(status)
        if status in ENDED:
            self._recorded.discard(run_id)

        def finish(conn: psycopg.Connection[Any]) -> None:
            self._fence(conn, run_id)
            if end is not None:
                (seq,) = conn.execute(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM run_events WHERE run_id = %s",
                    (run_id,),
                ).fetchone() or (1,)
                conn.execute(
                    "INSERT INTO run_events (run_id, seq, kind, body) VALUES (%s, %s, 'end', %s)",
                    (run_id, seq, end),
                )
                conn.execute("SELECT pg_notify(%s, %s)", (EVENTS_CHANNEL, f"{run_id} {seq}"))
            self._update_status(conn, run_id, status, result, error)

        self._write("record how a run ended", finish)

    def runs(
        self,
        *,
        workflow_name: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> builtins.list[RunRecord]:
        """Runs, oldest first, optionally by workflow name and status (the newest ``limit``)."""
        sql = f"SELECT {_RUN_COLUMNS} FROM checkpoint_runs WHERE TRUE"
        args: builtins.list[Any] = []
        if workflow_name is not None:
            sql += " AND workflow_name = %s"
            args.append(workflow_name)
        if status is not None:
            sql += " AND status = %s"
            args.append(status)
        if limit is not None:
            sql = f"SELECT * FROM ({sql} ORDER BY created_at DESC, run_id DESC LIMIT %s) AS r"
            args.append(int(limit))
        rows = self._query(sql + " ORDER BY created_at, run_id", tuple(args))
        return [RunRecord(*row) for row in rows]

    def run(self, run_id: str) -> RunRecord | None:
        """The record of one run, or ``None``."""
        rows = self._query(
            f"SELECT {_RUN_COLUMNS} FROM checkpoint_runs WHERE run_id = %s", (run_id,)
        )
        return RunRecord(*rows[0]) if rows else None

    def delete(self, run_id: str) -> None:
        """Forget a run with its checkpoints, event log and inbox."""

        def delete(conn: psycopg.Connection[Any]) -> None:
            for table in ("checkpoints", "run_events", "run_inbox"):
                conn.execute(f"DELETE FROM {table} WHERE run_id = %s", (run_id,))  # type: ignore[arg-type]
            conn.execute("DELETE FROM checkpoint_runs WHERE run_id = %s", (run_id,))

        self._write("delete a run", delete)
        self._recorded.discard(run_id)

    # -- checkpoints ----------------------------------------------------------------------------

    def put(self, checkpoint: Checkpoint) -> None:
        """Store a checkpoint (and the state keys it changed) in one transaction.

        Raises:
            CheckpointError: The checkpoint's id or ``(run_id, seq)`` exists, or its context
                is not JSON.
            LeaseLostError: Another replica holds the run.
            StoreFullError: The server's disk is full; nothing was written.
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

        if checkpoint.run_id in self._recorded:
            # The usual case, one round trip: the run's row is locked for the statement (so a
            # replica taking the run over waits for it) and the insert happens only while no
            # other replica holds the run.
            self._insert_fenced(checkpoint, row)
            return

        def insert(conn: psycopg.Connection[Any]) -> None:
            found = self._fence(conn, checkpoint.run_id)
            if found is None:
                # A run checkpointed without create_run (a bare store user): record it.
                now = time.time()
                conn.execute(
                    "INSERT INTO checkpoint_runs (run_id, workflow_name, status, created_at, "
                    "updated_at) VALUES (%s, %s, 'running', %s, %s) "
                    "ON CONFLICT (run_id) DO NOTHING",
                    (checkpoint.run_id, checkpoint.workflow_name, now, now),
                )
            try:
                conn.execute(
                    f"INSERT INTO checkpoints ({_CHECKPOINT_COLUMNS}) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    row,
                )
            except pg_errors.UniqueViolation as exc:
                raise _taken(checkpoint) from exc

        self._write("write a checkpoint", insert)
        self._recorded.add(checkpoint.run_id)

    def _insert_fenced(self, checkpoint: Checkpoint, row: tuple[Any, ...]) -> None:
        def insert(conn: psycopg.Connection[Any]) -> tuple[int, int]:
            try:
                found = conn.execute(
                    "WITH run AS (SELECT lease_owner FROM checkpoint_runs WHERE run_id = %s "
                    f"FOR UPDATE), ins AS (INSERT INTO checkpoints ({_CHECKPOINT_COLUMNS}) "
                    "SELECT %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s WHERE NOT EXISTS "
                    "(SELECT 1 FROM run WHERE %s::text IS NOT NULL AND lease_owner IS NOT NULL "
                    "AND lease_owner <> %s) RETURNING 1) "
                    "SELECT (SELECT count(*) FROM run), (SELECT count(*) FROM ins)",
                    (checkpoint.run_id, *row, self.replica_id, self.replica_id),
                ).fetchone()
            except pg_errors.UniqueViolation as exc:
                raise _taken(checkpoint) from exc
            return (int(found[0]), int(found[1])) if found else (0, 0)

        runs, inserted = self._execute("write a checkpoint", insert)
        if not inserted:
            if runs:
                raise self._lost(checkpoint.run_id)
            self._recorded.discard(checkpoint.run_id)  # deleted meanwhile: record it again
            self.put(checkpoint)

    def list(self, run_id: str) -> builtins.list[Checkpoint]:
        """The run's checkpoints, oldest first."""
        rows = self._query(
            f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE run_id = %s ORDER BY seq",
            (run_id,),
        )
        state: dict[str, str] = {}
        # The state is rebuilt as the rows go by: one pass, not one query per row.
        return [self._checkpoint(r, state) for r in rows]

    def latest(self, run_id: str) -> Checkpoint | None:
        """The run's most recent checkpoint, or ``None``."""
        rows = self._query(
            f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE run_id = %s "
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
            f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE id = %s", (checkpoint_id,)
        )
        if not rows:
            raise CheckpointError(
                f"No checkpoint {checkpoint_id!r} in {self._where}; list a run's checkpoints "
                "with store.list(run_id)."
            )
        return self._checkpoint(rows[0])

    # -- event log ------------------------------------------------------------------------------

    def append_event(self, run_id: str, kind: str, body: str, *, waiting: bool = False) -> int:
        """Append one entry to the run's event log and return its ``seq`` (from 1).

        Every replica streaming the run is told by ``NOTIFY batonflow_events``.

        Raises:
            LeaseLostError: Another replica holds the run.
            StoreFullError: The server's disk is full; nothing was written.
        """

        if not waiting:
            # One round trip: lock the run's row for the statement, take the next seq, write
            # the entry only while no other replica holds the run, and NOTIFY on commit.
            def one(conn: psycopg.Connection[Any]) -> int | None:
                found = conn.execute(
                    "WITH run AS (SELECT lease_owner FROM checkpoint_runs WHERE run_id = %s "
                    "FOR UPDATE), ins AS (INSERT INTO run_events (run_id, seq, kind, body) "
                    "SELECT %s, COALESCE((SELECT MAX(seq) FROM run_events WHERE run_id = %s), 0) "
                    "+ 1, %s, %s WHERE NOT EXISTS (SELECT 1 FROM run WHERE %s::text IS NOT NULL "
                    "AND lease_owner IS NOT NULL AND lease_owner <> %s) RETURNING seq) "
                    "SELECT seq, pg_notify(%s, %s || ' ' || seq) FROM ins",
                    (
                        run_id,
                        run_id,
                        run_id,
                        kind,
                        body,
                        self.replica_id,
                        self.replica_id,
                        EVENTS_CHANNEL,
                        run_id,
                    ),
                ).fetchone()
                return None if found is None else int(found[0])

            seq = self._execute("record a stream event", one)
            if seq is None:
                raise self._lost(run_id)
            return seq

        def append(conn: psycopg.Connection[Any]) -> int:
            self._fence(conn, run_id)
            (seq,) = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM run_events WHERE run_id = %s", (run_id,)
            ).fetchone() or (1,)
            conn.execute(
                "INSERT INTO run_events (run_id, seq, kind, body) VALUES (%s, %s, %s, %s)",
                (run_id, seq, kind, body),
            )
            if waiting:
                conn.execute(
                    "UPDATE checkpoint_runs SET status = 'waiting', waiting_seq = %s, "
                    "updated_at = %s WHERE run_id = %s AND status IN ('running', 'waiting')",
                    (seq, time.time(), run_id),
                )
            conn.execute("SELECT pg_notify(%s, %s)", (EVENTS_CHANNEL, f"{run_id} {seq}"))
            return int(seq)

        return self._write("record a stream event", append)

    def events(
        self, run_id: str, after: int = 0, limit: int | None = None
    ) -> builtins.list[StoredEvent]:
        """The run's log entries with ``seq > after``, in order (at most ``limit``)."""
        sql = "SELECT seq, kind, body FROM run_events WHERE run_id = %s AND seq > %s ORDER BY seq"
        args: tuple[Any, ...] = (run_id, after)
        if limit is not None:
            sql += " LIMIT %s"
            args = (*args, int(limit))
        return [StoredEvent(int(s), str(k), str(b)) for s, k, b in self._query(sql, args)]

    # -- inbox ----------------------------------------------------------------------------------

    def post_event(self, run_id: str, body: str, *, answer: bool = False) -> int:
        """Commit an event sent to a run into its inbox; return its inbox ``seq``.

        Any replica may post; the one holding the run learns of it by ``NOTIFY
        batonflow_inbox``. With ``answer=True`` exactly one answer per question is accepted,
        whichever replica the answers reach.

        Raises:
            RunConflictError: The run is unknown or ended, or (``answer``) it waits for nothing
                or its question was answered already.
            StoreFullError: The server's disk is full; nothing was written.
        """

        def post(conn: psycopg.Connection[Any]) -> int:
            row = conn.execute(
                "SELECT status, waiting_seq FROM checkpoint_runs WHERE run_id = %s FOR UPDATE",
                (run_id,),
            ).fetchone()
            key = check_post(run_id, None if row is None else (row[0], row[1]), answer)
            (seq,) = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM run_inbox WHERE run_id = %s", (run_id,)
            ).fetchone() or (1,)
            try:
                with conn.transaction():  # a savepoint: the unique key decides the winner
                    conn.execute(
                        "INSERT INTO run_inbox (run_id, seq, body, key, created_at) "
                        "VALUES (%s, %s, %s, %s, %s)",
                        (run_id, seq, body, key, time.time()),
                    )
            except pg_errors.UniqueViolation as exc:
                raise answered_error(run_id) from exc
            if key is not None:
                conn.execute(
                    "UPDATE checkpoint_runs SET status = 'running', updated_at = %s "
                    "WHERE run_id = %s",
                    (time.time(), run_id),
                )
            conn.execute("SELECT pg_notify(%s, %s)", (INBOX_CHANNEL, f"{run_id} {seq}"))
            return int(seq)

        return self._write("commit an event to the run's inbox", post)

    def inbox(self, run_id: str, after: int = 0) -> builtins.list[InboxItem]:
        """The run's inbox events with ``seq > after``, in order."""
        rows = self._query(
            "SELECT seq, body, key FROM run_inbox WHERE run_id = %s AND seq > %s ORDER BY seq",
            (run_id, after),
        )
        return [InboxItem(int(s), str(b), k) for s, b, k in rows]

    # -- leases (several replicas) --------------------------------------------------------------

    def _replica(self) -> str:
        if self.replica_id is None:
            raise CheckpointError(
                "Leases need a replica id; create the store with "
                "PostgresCheckpointStore(url, replica_id='name-of-this-server')."
            )
        return self.replica_id

    def renew_leases(self) -> builtins.list[str]:
        """Extend the leases this replica holds; return the ids of the runs it still holds."""
        me = self._replica()
        rows = self._write(
            "renew leases",
            lambda conn: conn.execute(
                f"UPDATE checkpoint_runs SET lease_until = {NOW} + %s "
                "WHERE lease_owner = %s RETURNING run_id",
                (self.lease_seconds, me),
            ).fetchall(),
        )
        return [str(r[0]) for r in rows]

    def claim_expired(
        self,
        *,
        owner: str | None = "server",
        workflows: Iterable[str] | None = None,
        limit: int = 50,
    ) -> builtins.list[RunRecord]:
        """Take over runs whose holder's lease expired (a dead replica's), at most ``limit``.

        Only runs in progress (``running``, ``waiting``, ``interrupted``) started by ``owner``
        are taken, and only of the named ``workflows`` when given (the ones this replica can
        run). Replicas racing for the same run never both get it (``FOR UPDATE SKIP LOCKED``
        and a conditional update): each expired run goes to exactly one of them.
        """
        names = None if workflows is None else sorted(workflows)
        me = self._replica()
        statuses = [*sorted(ACTIVE), "interrupted"]
        rows = self._write(
            "claim expired runs",
            lambda conn: conn.execute(
                f"UPDATE checkpoint_runs SET lease_owner = %s, lease_until = {NOW} + %s "
                "WHERE run_id IN (SELECT run_id FROM checkpoint_runs "
                "WHERE status = ANY(%s) AND (%s::text IS NULL OR owner = %s) "
                "AND (%s::text[] IS NULL OR workflow_name = ANY(%s)) "
                f"AND lease_owner IS NOT NULL AND lease_owner <> %s AND lease_until < {NOW} "
                "ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED) "
                f"RETURNING {_RUN_COLUMNS}",
                (me, self.lease_seconds, statuses, owner, owner, names, names, me, limit),
            ).fetchall(),
        )
        return [RunRecord(*row) for row in rows]

    def claim(self, run_id: str) -> bool:
        """Lease one run to this replica if nobody else holds a live lease on it."""
        me = self._replica()
        rows = self._write(
            "claim a run",
            lambda conn: conn.execute(
                f"UPDATE checkpoint_runs SET lease_owner = %s, lease_until = {NOW} + %s "
                "WHERE run_id = %s AND (lease_owner IS NULL OR lease_owner = %s "
                f"OR lease_until < {NOW}) RETURNING run_id",
                (me, self.lease_seconds, run_id, me),
            ).fetchall(),
        )
        return bool(rows)

    def release(self, run_id: str) -> None:
        """Give up this replica's lease on a run (another replica may take it at once)."""
        me = self._replica()
        self._write(
            "release a lease",
            lambda conn: conn.execute(
                "UPDATE checkpoint_runs SET lease_owner = NULL, lease_until = NULL "
                "WHERE run_id = %s AND lease_owner = %s",
                (run_id, me),
            ),
        )

    def lease_of(self, run_id: str) -> tuple[str | None, float | None]:
        """Who holds the run, and for how many more seconds (negative: expired)."""
        rows = self._query(
            f"SELECT lease_owner, lease_until - {NOW} FROM checkpoint_runs WHERE run_id = %s",
            (run_id,),
        )
        if not rows:
            return None, None
        owner, left = rows[0]
        return owner, None if left is None else float(left)

    # -- the rest -------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the pool's connections (the store cannot be used afterwards)."""
        self._pool.close()

    def __enter__(self) -> PostgresCheckpointStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresCheckpointStore({self._where!r})"

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
                    _apply(running, state_values(state))
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
                f"Checkpoint {cid!r} of run {run_id!r} in {self._where} is corrupt ({exc}); "
                "delete the run (store.delete(run_id)) and start it again."
            ) from exc

    def _state_at(self, run_id: str, seq: int) -> dict[str, str]:
        """The untyped state as of checkpoint ``seq``: its last whole state plus changes."""
        base = self._query(
            "SELECT COALESCE(MAX(seq), 0) FROM checkpoints WHERE run_id = %s AND seq <= %s "
            "AND state_mode = 0",
            (run_id, seq),
        )[0][0]
        rows = self._query(
            "SELECT (ctx_data::json -> 'state')::text FROM checkpoints "
            "WHERE run_id = %s AND seq >= %s AND seq <= %s AND state_mode IS NOT NULL "
            "ORDER BY seq",
            (run_id, base, seq),
        )
        state: dict[str, str] = {}
        for (changes,) in rows:
            _apply(state, state_values(json.loads(changes or "{}")))
        return state

    def _error(self, exc: BaseException, action: str) -> CheckpointError:
        """The :class:`CheckpointError` subclass that tells what went wrong on the server."""
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = self._where
        if isinstance(exc, pg_errors.DiskFull | pg_errors.OutOfMemory):
            return StoreFullError(
                f"Could not {action}: the PostgreSQL server at {where} is out of space "
                f"({text}); nothing was written and what was committed before is intact. "
                "Free space on the server, then resume the run."
            )
        if isinstance(exc, pg_errors.ReadOnlySqlTransaction | pg_errors.InsufficientPrivilege):
            return StoreReadOnlyError(
                f"Could not {action}: the database at {where} cannot be written ({text}); "
                "connect to the primary server with a user that may write."
            )
        if isinstance(exc, pg_errors.LockNotAvailable | pg_errors.DeadlockDetected | PoolTimeout):
            return StoreLockedError(
                f"Could not {action}: the database at {where} was busy ({text}); retry, or "
                "give the pool more connections (max_size=)."
            )
        if isinstance(exc, pg_errors.DataCorrupted | pg_errors.IndexCorrupted):
            return StoreCorruptError(
                f"Could not {action}: the database at {where} reports corrupt data ({text}); "
                "restore it from a backup."
            )
        if isinstance(exc, psycopg.OperationalError):
            return CheckpointError(
                f"Could not {action}: the PostgreSQL server at {where} cannot be reached "
                f"({text}); check that it runs and the URL is right."
            )
        return CheckpointError(
            f"Could not {action} in {where} ({type(exc).__name__}: {text}); check the "
            "database, or pass another URL."
        )


def _taken(checkpoint: Checkpoint) -> CheckpointError:
    return CheckpointError(
        f"Run {checkpoint.run_id} already has checkpoint {checkpoint.id} or seq "
        f"{checkpoint.seq}; is another process resuming the same run?"
    )


def _apply(state: dict[str, str], changes: Any) -> None:
    """Apply one checkpoint's state changes (``None`` deletes a key) to ``state``."""
    for key, value in dict(changes or {}).items():
        if value is None:
            state.pop(key, None)
        else:
            state[str(key)] = str(value)


def _redacted(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "the configured PostgreSQL URL"
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


__all__ = ["LeaseLostError", "PostgresCheckpointStore"]  # LeaseLostError: batonflow.core.errors
