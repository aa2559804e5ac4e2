"""The PostgreSQL run store: the SQLite store's records on a server that many processes share.

The records, statements and checks are :class:`~batonflow.core._sql_store.SqlRunStore`'s, as
for SQLite; this module is the PostgreSQL dialect (the pool, transactions, psycopg's errors as
store errors) plus what only a shared server has: leases, fencing, ``NOTIFY``, and schema
migrations under an advisory lock.

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
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, TypeVar
from urllib.parse import urlsplit

import psycopg
from batonflow.core._records import ACTIVE, ENDED, Checkpoint, RunRecord, checkpoint_taken_error
from batonflow.core._sql_schema import (
    CHECKPOINT_COLUMNS,
    RUN_COLUMNS,
    Statements,
    create_statements,
)
from batonflow.core._sql_store import SqlRunStore
from batonflow.core.errors import (
    CheckpointError,
    LeaseLostError,
    StoreCorruptError,
    StoreFullError,
    StoreLockedError,
    StoreReadOnlyError,
)
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from ._outage import Failure, Outage, OutagePolicy, classify, pool_options

SCHEMA_VERSION = 3
COMPONENT = "checkpoints"
EVENTS_CHANNEL = "batonflow_events"
INBOX_CHANNEL = "batonflow_inbox"
T = TypeVar("T")

#: The server's clock, so leases do not depend on the replicas' clocks agreeing.
NOW = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"

#: Version 2 is the first PostgreSQL schema: the tables of core's SQL store, as they are
#: (those of the current version: a new database gets them whole, and the later migrations
#: find nothing left to do).
_SCHEMA = create_statements(real="DOUBLE PRECISION")
#: What each version adds, applied in order to a database at an older version.
_MIGRATIONS: dict[int, tuple[str, ...]] = {
    2: _SCHEMA,
    # No primary key on checkpoints.id: only ids not of the "<run_id>:<seq>" form the
    # checkpointer makes are indexed (the index of _SCHEMA), the others are found by run and seq.
    3: ("ALTER TABLE checkpoints DROP CONSTRAINT IF EXISTS checkpoints_pkey", *_SCHEMA),
}

_SQL = replace(
    Statements.build("%s", state_json="(ctx_data::json -> 'state')::text", lock_row=" FOR UPDATE"),
    # A replica's new run is leased to it from the start.
    insert_run=f"INSERT INTO checkpoint_runs ({RUN_COLUMNS}, lease_owner, lease_until) "
    f"VALUES ({', '.join(['%s'] * 14)}, %s, CASE WHEN %s THEN {NOW} + %s END)",
)
#: A status change; an ended run's lease is released.
_SET_STATUS = (
    "UPDATE checkpoint_runs SET status = %s, result = %s, error = %s, updated_at = %s, "
    "waiting_seq = CASE WHEN %s = 'waiting' THEN waiting_seq END, "
    "lease_owner = CASE WHEN %s THEN NULL ELSE lease_owner END, "
    "lease_until = CASE WHEN %s THEN NULL ELSE lease_until END WHERE run_id = %s"
)
#: The checkpoint of a recorded run in one round trip: the run's row is locked for the
#: statement (so a replica taking the run over waits for it) and the insert happens only while
#: no other replica holds the run. Returns (rows of the run, rows inserted).
_PUT_FENCED = (
    "WITH run AS (SELECT lease_owner FROM checkpoint_runs WHERE run_id = %s FOR UPDATE), "
    f"ins AS (INSERT INTO checkpoints ({CHECKPOINT_COLUMNS}) "
    f"SELECT {', '.join(['%s'] * 12)} WHERE NOT EXISTS "
    "(SELECT 1 FROM run WHERE %s::text IS NOT NULL AND lease_owner IS NOT NULL "
    "AND lease_owner <> %s) RETURNING 1) "
    "SELECT (SELECT count(*) FROM run), (SELECT count(*) FROM ins)"
)
#: A stream event in one round trip, fenced as :data:`_PUT_FENCED`, with its NOTIFY.
_APPEND_FENCED = (
    "WITH run AS (SELECT lease_owner FROM checkpoint_runs WHERE run_id = %s FOR UPDATE), "
    "ins AS (INSERT INTO run_events (run_id, seq, kind, body) "
    "SELECT %s, COALESCE((SELECT MAX(seq) FROM run_events WHERE run_id = %s), 0) + 1, %s, %s "
    "WHERE NOT EXISTS (SELECT 1 FROM run WHERE %s::text IS NOT NULL "
    "AND lease_owner IS NOT NULL AND lease_owner <> %s) RETURNING seq) "
    "SELECT seq, pg_notify(%s, %s || ' ' || seq) FROM ins"
)


class PostgresCheckpointStore(SqlRunStore):
    """Runs, checkpoints, event logs and inboxes in a PostgreSQL database.

    Args:
        url: A ``postgresql://user:password@host:port/database`` URL (libpq's forms work).
        replica_id: This process's name among the servers sharing the database. When set,
            runs it creates are leased to it and its writes are fenced (see the module doc).
        lease_seconds: How long a lease lasts without a heartbeat (:meth:`renew_leases`).
        min_size: Connections the pool keeps open.
        max_size: Connections the pool opens at most.
        connect_timeout: Seconds to wait for a connection before failing.
        outage_seconds: For how long the store rides out a server it cannot reach (a
            restart, a failover, a network failure): calls fail meanwhile with
            :class:`~batonflow.core.errors.StoreUnreachableError` whose ``retry_after`` says
            when to try again, and runs wait at their step boundary instead of failing. After
            that long the error says the server is gone and runs are interrupted. Default 60.

    Raises:
        CheckpointError: The server cannot be reached, or refused the connection.
        StoreCorruptError: The database holds a batonflow schema of a newer version.
    """

    sql = _SQL
    unique_violation = (pg_errors.UniqueViolation,)

    def __init__(
        self,
        url: str,
        *,
        replica_id: str | None = None,
        lease_seconds: float = 15.0,
        min_size: int = 1,
        max_size: int = 8,
        connect_timeout: float = 10.0,
        outage_seconds: float = 60.0,
    ) -> None:
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds={lease_seconds!r} must be positive, e.g. 15.")
        self._outage = Outage(OutagePolicy(seconds=float(outage_seconds)))
        super().__init__(_redacted(url))
        self.url = url
        self.replica_id = replica_id
        self.lease_seconds = float(lease_seconds)
        self.connect_timeout = float(connect_timeout)
        self._pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True, "connect_timeout": max(1, int(connect_timeout))},
            timeout=connect_timeout,
            open=False,
            name="batonflow",
            **pool_options(self._outage),
        )
        try:
            # One connection first: the pool retries a refused or rejected one until the
            # timeout, and a wrong port or password should say so at once, with the reason.
            psycopg.connect(url, connect_timeout=max(1, int(connect_timeout))).close()
        except psycopg.OperationalError as exc:
            self._pool.close()
            raise CheckpointError(
                f"Cannot connect to PostgreSQL at {self._where} ({_reason(exc, url)}); check "
                "that the server runs and the URL (user, password, host, port, database) is "
                "right."
            ) from exc
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
            self._write("set up the schema", self._setup, idempotent=True)
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

    @property
    def outage_seconds(self) -> float:
        """For how long the store rides out an unreachable server (see the class doc)."""
        return self._outage.policy.seconds

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection (autocommit) for a caller's own queries; errors as store errors.

        Getting the connection rides out an outage as the store's own calls do; what the
        caller runs on it is not retried.
        """
        conn = self._attempt("query the store", self._pool.getconn, idempotent=True)
        try:
            yield conn
        except CheckpointError:
            raise
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._error(exc, "query the store") from exc
        finally:
            self._pool.putconn(conn)

    def _write(
        self,
        action: str,
        fn: Callable[[psycopg.Connection[Any]], T],
        *,
        transaction: bool = True,
        idempotent: bool = False,
    ) -> T:
        """Run ``fn`` on a pooled connection, in one transaction unless ``transaction=False``
        (``fn`` is then one statement, atomic by itself); PostgreSQL errors become store
        errors.

        An unreachable server is retried (see :meth:`_attempt`); a connection lost with no
        answer after the statement was sent only when ``idempotent`` (running ``fn`` twice
        is the same as once).
        """

        def write(conn: psycopg.Connection[Any]) -> T:
            if not transaction:
                return fn(conn)
            with conn.transaction():
                return fn(conn)

        return self._attempt(action, write, idempotent=idempotent)

    def _attempt(
        self,
        action: str,
        fn: Callable[[Any], T],
        *,
        idempotent: bool,
    ) -> T:
        """``fn(connection)`` on a pooled connection (``fn`` is ``getconn`` itself for
        :meth:`connection`), retried while the server cannot be reached.

        The retries block this thread for at most ``OutagePolicy.blocking`` (the engine and
        the server call the store on the event loop: see :mod:`batonflow.postgres._outage`);
        then :class:`StoreUnreachableError` tells the caller when to try again.
        """
        if self._pool.closed:
            raise self._closed_error()
        outage = self._outage
        deadline = time.monotonic() + outage.policy.blocking
        busy_until = time.monotonic() + self.connect_timeout
        while True:
            if not outage.may_try():
                raise outage.error(action, self._where)
            sent = False
            # A healthy pool hands a connection out at once; an empty one waits for what is
            # left of the blocking time.
            wait = max(deadline - time.monotonic(), 0.05)
            try:
                if fn is self._pool.getconn:
                    result = fn(wait)
                else:
                    with self._pool.connection(timeout=wait) as conn:
                        sent = True
                        result = fn(conn)
            except CheckpointError:
                outage.up()  # the server answered (a conflict, a lost lease)
                raise
            except (psycopg.Error, PoolTimeout) as exc:
                failure = classify(exc, sent=sent, cut_off=outage.pool_cut_off())
                now = time.monotonic()
                if failure is Failure.OTHER:
                    if isinstance(exc, PoolTimeout) and now < busy_until:
                        continue  # every connection is busy: wait as long as the pool would
                    raise self._error(exc, action) from exc
                pause = outage.down()
                if failure is Failure.UNANSWERED and not idempotent:
                    raise self._error(exc, action, maybe_written=True) from exc
                if now + pause > deadline or outage.retry_after() is None:
                    raise outage.error(action, self._where, _reason(exc, self.url)) from exc
                time.sleep(pause)
                continue
            outage.up()
            return result

    def _lost(self, run_id: str, owner: str | None = None) -> LeaseLostError:
        """The error of a write into ``run_id``, which replica ``owner`` holds."""
        if owner is None:
            owner = self.lease_of(run_id)[0]
        return LeaseLostError(
            f"Run {run_id!r} is held by replica {owner!r}, not by {self.replica_id!r}; it goes "
            "on there. Stop running it here."
        )

    def _query(self, sql: str, args: tuple[Any, ...]) -> builtins.list[tuple[Any, ...]]:
        return self._attempt(
            "read",
            lambda conn: conn.execute(sql, args).fetchall(),  # type: ignore[arg-type]
            idempotent=True,
        )

    def _fence(self, conn: psycopg.Connection[Any], run_id: str) -> None:
        """Lock the run's row; raise :class:`LeaseLostError` if another replica holds it."""
        row = conn.execute(
            "SELECT lease_owner FROM checkpoint_runs WHERE run_id = %s FOR UPDATE", (run_id,)
        ).fetchone()
        if (
            self.replica_id is not None
            and row is not None
            and row[0] not in (None, self.replica_id)
        ):
            raise self._lost(run_id, row[0])

    # -- the writes that differ from SQLite's: leased, fenced, announced -------------------------

    def _run_args(self, record: RunRecord) -> tuple[Any, ...]:
        return (
            *super()._run_args(record),
            self.replica_id,
            self.replica_id is not None,
            self.lease_seconds,
        )

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
            _SET_STATUS, (status, result, error, time.time(), status, ended, ended, run_id)
        )

    def _put_recorded(self, checkpoint: Checkpoint, row: tuple[Any, ...]) -> None:
        def insert(conn: psycopg.Connection[Any]) -> tuple[int, int]:
            try:
                found = conn.execute(
                    _PUT_FENCED, (checkpoint.run_id, *row, self.replica_id, self.replica_id)
                ).fetchone()
            except pg_errors.UniqueViolation as exc:
                if self._stored(conn, checkpoint):
                    return (1, 1)  # a retry found its own commit, whose answer was lost
                raise checkpoint_taken_error(checkpoint) from exc
            return (int(found[0]), int(found[1])) if found else (0, 0)

        # Keyed by (run_id, seq): a second try after a lost answer finds its own checkpoint.
        runs, inserted = self._write(
            "write a checkpoint", insert, transaction=False, idempotent=True
        )
        if not inserted:
            if runs:
                raise self._lost(checkpoint.run_id)
            self._recorded.discard(checkpoint.run_id)  # deleted meanwhile: record it again
            self.put(checkpoint)

    def _stored(self, conn: psycopg.Connection[Any], checkpoint: Checkpoint) -> bool:
        """Whether the run's checkpoint at ``checkpoint.seq`` is this very one (same id and
        creation time)."""
        row = conn.execute(
            "SELECT id, created_at FROM checkpoints WHERE run_id = %s AND seq = %s",
            (checkpoint.run_id, checkpoint.seq),
        ).fetchone()
        return row is not None and row[0] == checkpoint.id and row[1] == checkpoint.created_at

    def append_event(self, run_id: str, kind: str, body: str, *, waiting: bool = False) -> int:
        """Append one entry to the run's event log and return its ``seq`` (from 1).

        Every replica streaming the run is told by ``NOTIFY batonflow_events``.

        Raises:
            LeaseLostError: Another replica holds the run.
            StoreFullError: The server's disk is full; nothing was written.
        """
        if not waiting:
            args = (run_id, run_id, run_id, kind, body, self.replica_id, self.replica_id)

            def one(conn: psycopg.Connection[Any]) -> int | None:
                found = conn.execute(_APPEND_FENCED, (*args, EVENTS_CHANNEL, run_id)).fetchone()
                return None if found is None else int(found[0])

            seq = self._write("record a stream event", one, transaction=False)
            if seq is None:
                raise self._lost(run_id)
            return seq

        def append(conn: psycopg.Connection[Any]) -> int:
            self._fence(conn, run_id)
            (seq,) = conn.execute(self.sql.append_event, (run_id, kind, body, run_id)).fetchone()
            conn.execute(self.sql.mark_waiting, (seq, time.time(), run_id))
            self._appended(conn, run_id, int(seq))
            return int(seq)

        return self._write("record a stream event", append)

    def _appended(self, conn: psycopg.Connection[Any], run_id: str, seq: int) -> None:
        # Every replica streaming the run wakes up on commit.
        conn.execute("SELECT pg_notify(%s, %s)", (EVENTS_CHANNEL, f"{run_id} {seq}"))

    def _posted(self, conn: psycopg.Connection[Any], run_id: str, seq: int) -> None:
        # The replica holding the run learns of the post on commit.
        conn.execute("SELECT pg_notify(%s, %s)", (INBOX_CHANNEL, f"{run_id} {seq}"))

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
            idempotent=True,
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
                f"RETURNING {RUN_COLUMNS}",
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
            idempotent=True,
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

    def __repr__(self) -> str:
        return f"PostgresCheckpointStore({self._where!r})"

    def _error(
        self, exc: BaseException, action: str, *, maybe_written: bool = False
    ) -> CheckpointError:
        """The :class:`CheckpointError` subclass that tells what went wrong on the server."""
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = self._where
        if maybe_written:
            # Not retried: a second try could write it twice.
            return CheckpointError(
                f"Could not {action}: the connection to the PostgreSQL server at {where} was "
                f"lost before it answered ({text}), so the write may or may not have been "
                "committed; read the run back (GET /runs/{id}) before doing it again."
            )
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


def _reason(exc: Exception, url: str) -> str:
    """libpq's reason for a failed connection, on one line and without the password."""
    # libpq puts a hint on a line of its own ("Connection refused\n\tIs the server running
    # ...?"): its lines become sentences of one line.
    lines = [" ".join(line.split()) for line in str(exc).splitlines()]
    text = ". ".join(line.rstrip(".") for line in lines if line)
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    return text.replace(password, "***") if password else text


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
