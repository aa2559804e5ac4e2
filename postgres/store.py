"""The PostgreSQL run store: the SQLite store's records on a server that many processes share.

The records, statements and checks are :class:`~batonflow.core.durable._sql_store.SqlRunStore`'s, as
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
stream event, a waiting mark or a status change (with the run's ``end``) is made only while
*this store* holds the run's lease, decided in the write's own ``WHERE``; otherwise it raises
:class:`LeaseLostError`. Whoever holds the lease now does not matter: another replica, another
process under the same replica id (a restart that reused the name while this one was stalled),
or nobody, because the run ended or its lease was released. Each store has its own
``lease_token`` (schema version 4), written with the lease, so a process that lost a run (it
stalled past its lease and another took the run over) cannot write into it any more. A run is
never advanced by two replicas, and an ended run never changes again.
"""

from __future__ import annotations

import builtins
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, TypeVar
from urllib.parse import urlsplit

import psycopg
from batonflow.core.durable._records import (
    ACTIVE,
    ENDED,
    Checkpoint,
    RunRecord,
    checkpoint_taken_error,
)
from batonflow.core.durable._sql_schema import (
    CHECKPOINT_COLUMNS,
    ENDED_SQL,
    RUN_COLUMNS,
    Statements,
    create_statements,
)
from batonflow.core.durable._sql_store import SqlRunStore
from batonflow.core.durable._text import first_text_problem, text_problem, unstorable_error
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

SCHEMA_VERSION = 4
COMPONENT = "checkpoints"
EVENTS_CHANNEL = "batonflow_events"
INBOX_CHANNEL = "batonflow_inbox"
#: Announces that a replica stopping cleanly released its runs (payload: its replica id).
RELEASE_CHANNEL = "batonflow_release"
T = TypeVar("T")

#: The server's clock, so leases do not depend on the replicas' clocks agreeing.
NOW = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"

#: A lease that ran out, and not because the database itself was down: after a restart every
#: holder has one lease length (the claimer's, the parameter) to renew before its leases count
#: as expired. Nobody could renew while the server was away, so without this the first replica
#: whose heartbeat comes after a restart longer than the lease would take every other live
#: replica's runs over, and their steps in flight would run twice.
_EXPIRED = (
    f"GREATEST(lease_until, EXTRACT(EPOCH FROM pg_postmaster_start_time())::double precision "
    f"+ %s) < {NOW}"
)

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
    # The lease's holder is a store (a process), not only a replica name: see the module doc.
    4: ("ALTER TABLE checkpoint_runs ADD COLUMN IF NOT EXISTS lease_token TEXT",),
}
#: True in a write's WHERE while the run's lease is held by the store whose token is the
#: second parameter, or while the first parameter (the replica id) is NULL: no fencing.
_HELD = "(%s::text IS NULL OR lease_token IS NOT DISTINCT FROM %s)"

_SQL = replace(
    Statements.build("%s", state_json="(ctx_data::json -> 'state')::text", lock_row=" FOR UPDATE"),
    # A replica's new run is leased to it (to this store's token) from the start.
    insert_run=f"INSERT INTO checkpoint_runs ({RUN_COLUMNS}, lease_owner, lease_token, "
    f"lease_until) VALUES ({', '.join(['%s'] * 14)}, %s, %s, CASE WHEN %s THEN {NOW} + %s END)",
)
#: A status change, made only while this store holds the run and it has not ended; an ended
#: run's lease is released.
_SET_STATUS = (
    "UPDATE checkpoint_runs SET status = %s, result = %s, error = %s, updated_at = %s, "
    "waiting_seq = CASE WHEN %s = 'waiting' THEN waiting_seq END, "
    "lease_owner = CASE WHEN %s THEN NULL ELSE lease_owner END, "
    "lease_token = CASE WHEN %s THEN NULL ELSE lease_token END, "
    "lease_until = CASE WHEN %s THEN NULL ELSE lease_until END "
    f"WHERE run_id = %s AND NOT {ENDED_SQL} AND {_HELD}"
)
#: The checkpoint of a recorded run in one round trip: the run's row is locked for the
#: statement (so a replica taking the run over waits for it) and the insert happens only while
#: this store holds the run. Returns (rows of the run, rows inserted).
_PUT_FENCED = (
    "WITH run AS (SELECT lease_token FROM checkpoint_runs WHERE run_id = %s FOR UPDATE), "
    f"ins AS (INSERT INTO checkpoints ({CHECKPOINT_COLUMNS}) "
    f"SELECT {', '.join(['%s'] * 12)} WHERE NOT EXISTS "
    f"(SELECT 1 FROM run WHERE NOT {_HELD}) RETURNING 1) "
    "SELECT (SELECT count(*) FROM run), (SELECT count(*) FROM ins)"
)
#: A stream event in one round trip, fenced as :data:`_PUT_FENCED`, with its NOTIFY.
_APPEND_FENCED = (
    "WITH run AS (SELECT lease_token FROM checkpoint_runs WHERE run_id = %s FOR UPDATE), "
    "ins AS (INSERT INTO run_events (run_id, seq, kind, body) "
    "SELECT %s, COALESCE((SELECT MAX(seq) FROM run_events WHERE run_id = %s), 0) + 1, %s, %s "
    f"WHERE NOT EXISTS (SELECT 1 FROM run WHERE NOT {_HELD}) RETURNING seq) "
    "SELECT seq, pg_notify(%s, %s || ' ' || seq) FROM ins"
)


class _Cursor(psycopg.Cursor[Any]):
    """psycopg's cursor, but text PostgreSQL cannot hold is named in an UnstorableTextError.

    The driver refuses a NUL character with a ``DataError`` and a lone surrogate with a
    ``UnicodeEncodeError`` (not even a ``psycopg.Error``), neither saying which value it was.
    Only a failed statement's parameters are looked at: a statement that works costs nothing.
    """

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        try:
            return super().execute(query, params, **kwargs)
        except (psycopg.DataError, UnicodeEncodeError) as exc:
            found = first_text_problem(params)
            if found is None:
                raise
            raise unstorable_error(*found, where="PostgreSQL") from exc


class PostgresCheckpointStore(SqlRunStore):
    """Runs, checkpoints, event logs and inboxes in a PostgreSQL database.

    Text PostgreSQL cannot hold (a NUL character, a lone surrogate) in an id, a name, a
    filter or a body is refused with :class:`~batonflow.core.errors.UnstorableTextError`
    (also a ``ValueError``), naming the text, by every method.

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
        UnstorableTextError: ``replica_id`` holds a NUL character or a lone surrogate.
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
        problem = None if replica_id is None else text_problem(replica_id)
        if replica_id is not None and problem is not None:
            raise unstorable_error(replica_id, problem, "PostgreSQL")
        self._outage = Outage(OutagePolicy(seconds=float(outage_seconds)))
        super().__init__(_redacted(url))
        self.url = url
        self.replica_id = replica_id
        #: What the leases this store takes hold (with the replica id): this store's alone,
        #: so another process under the same replica id is fenced off too.
        self.lease_token = uuid.uuid4().hex
        self.lease_seconds = float(lease_seconds)
        self.connect_timeout = float(connect_timeout)
        self._pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={
                "autocommit": True,
                "connect_timeout": max(1, int(connect_timeout)),
                "cursor_factory": _Cursor,
            },
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

    def _lost(
        self, run_id: str, owner: str | None = None, status: str | None = None
    ) -> LeaseLostError:
        """The error of a write into ``run_id``, which replica ``owner`` holds (or nobody)."""
        if owner is None and status is None:
            row = self._query(
                "SELECT lease_owner, status FROM checkpoint_runs WHERE run_id = %s", (run_id,)
            )
            owner, status = row[0] if row else (None, None)
        if owner is None:
            now = f"it {status}" if status in ENDED else "its lease was released"
            return LeaseLostError(
                f"Run {run_id!r} is no longer held by replica {self.replica_id!r} ({now}); "
                "nothing more is written into it from here. Stop running it here."
            )
        if owner == self.replica_id:
            return LeaseLostError(
                f"Run {run_id!r} is held by another process of replica {owner!r} (one that "
                "started under the same name while this one was stalled); it goes on there. "
                "Stop running it here."
            )
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
        """Lock the run's row; raise :class:`LeaseLostError` unless this store holds it."""
        row = conn.execute(
            "SELECT lease_owner, lease_token, status FROM checkpoint_runs "
            "WHERE run_id = %s FOR UPDATE",
            (run_id,),
        ).fetchone()
        if self.replica_id is not None and row is not None and row[1] != self.lease_token:
            raise self._lost(run_id, row[0], row[2])

    # -- the writes that differ from SQLite's: leased, fenced, announced -------------------------

    def _run_args(self, record: RunRecord) -> tuple[Any, ...]:
        return (
            *super()._run_args(record),
            self.replica_id,
            None if self.replica_id is None else self.lease_token,
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
        args = (status, result, error, time.time(), status, ended, ended, ended, run_id)
        found = conn.execute(
            _SET_STATUS + " RETURNING 1", (*args, self.replica_id, self.lease_token)
        ).fetchone()
        if found is None and self.replica_id is not None:
            raise self._lost(run_id)  # the run ended (or was taken) since _fence looked

    def _put_recorded(self, checkpoint: Checkpoint, row: tuple[Any, ...]) -> None:
        def insert(conn: psycopg.Connection[Any]) -> tuple[int, int]:
            try:
                found = conn.execute(
                    _PUT_FENCED, (checkpoint.run_id, *row, self.replica_id, self.lease_token)
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
            args = (run_id, run_id, run_id, kind, body, self.replica_id, self.lease_token)

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
        """Extend the leases this store holds; return the ids of the runs it still holds."""
        self._replica()
        rows = self._write(
            "renew leases",
            lambda conn: conn.execute(
                f"UPDATE checkpoint_runs SET lease_until = {NOW} + %s "
                "WHERE lease_token = %s RETURNING run_id",
                (self.lease_seconds, self.lease_token),
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
        """Take over runs nobody runs any more, at most ``limit``.

        Those are the runs whose holder's lease expired (a dead or stalled replica's) and
        the runs in progress whose holder released them (a replica that stopped cleanly).
        Only runs started by ``owner`` are taken: ``running``, ``waiting``, and
        ``interrupted`` ones whose lease expired (a run left ``interrupted`` without a lease
        is resumed by a person, not taken); and only of the named ``workflows`` when given
        (the ones this replica can run). Replicas racing for the same run never both get it
        (``FOR UPDATE SKIP LOCKED`` and a conditional update): each run goes to exactly one.
        """
        names = None if workflows is None else sorted(workflows)
        me = self._replica()
        active = sorted(ACTIVE)
        statuses = [*active, "interrupted"]
        rows = self._write(
            "claim expired runs",
            lambda conn: conn.execute(
                "UPDATE checkpoint_runs SET lease_owner = %s, lease_token = %s, "
                f"lease_until = {NOW} + %s "
                "WHERE run_id IN (SELECT run_id FROM checkpoint_runs "
                "WHERE status = ANY(%s) AND (%s::text IS NULL OR owner = %s) "
                "AND (%s::text[] IS NULL OR workflow_name = ANY(%s)) "
                "AND ((lease_owner IS NOT NULL AND lease_token IS DISTINCT FROM %s "
                f"AND {_EXPIRED}) OR (lease_owner IS NULL AND status = ANY(%s))) "
                "ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED) "
                f"AND NOT {ENDED_SQL} RETURNING {RUN_COLUMNS}",
                (
                    *(me, self.lease_token, self.lease_seconds, statuses, owner, owner),
                    *(names, names, self.lease_token, self.lease_seconds, active, limit),
                ),
            ).fetchall(),
        )
        return [RunRecord(*row) for row in rows]

    def claim(self, run_id: str) -> bool:
        """Lease one run in progress to this store if nobody else holds a live lease on it.

        A lease under this replica id (a previous process of this replica, restarted) is
        taken, and that process is fenced off from the run. An ended run is never claimed.
        """
        me = self._replica()
        rows = self._write(
            "claim a run",
            lambda conn: conn.execute(
                "UPDATE checkpoint_runs SET lease_owner = %s, lease_token = %s, "
                f"lease_until = {NOW} + %s WHERE run_id = %s AND NOT {ENDED_SQL} "
                f"AND (lease_owner IS NULL OR lease_owner = %s OR lease_until < {NOW}) "
                "RETURNING run_id",
                (me, self.lease_token, self.lease_seconds, run_id, me),
            ).fetchall(),
            idempotent=True,
        )
        return bool(rows)

    def release(self, run_id: str) -> None:
        """Give up this replica's lease on a run (another replica may take it at once)."""
        self.release_all([run_id])

    def release_all(self, run_ids: Iterable[str]) -> builtins.list[str]:
        """Give up this replica's leases on ``run_ids`` and tell the other replicas.

        For a clean stop, once this replica no longer runs them: the runs stay as recorded
        (``running``, ``waiting``) and ``NOTIFY batonflow_release`` makes the replicas that
        listen take them over at once (:meth:`claim_expired`).

        Returns:
            The ids of the runs released (those this replica still held).
        """
        me = self._replica()
        ids = sorted(set(run_ids))

        def release(conn: psycopg.Connection[Any]) -> builtins.list[str]:
            rows = conn.execute(
                "UPDATE checkpoint_runs SET lease_owner = NULL, lease_token = NULL, "
                "lease_until = NULL WHERE run_id = ANY(%s) AND lease_owner = %s "
                "AND lease_token = %s RETURNING run_id",
                (ids, me, self.lease_token),
            ).fetchall()
            if rows:
                conn.execute("SELECT pg_notify(%s, %s)", (RELEASE_CHANNEL, self.lease_token))
            return [str(r[0]) for r in rows]

        return self._write("release leases", release) if ids else []

    def inbox_heads(self) -> dict[str, int]:
        """The last inbox ``seq`` of each run this replica holds, for runs with inbox entries.

        One query for all the runs: a replica compares it with what it delivered, so an
        entry whose ``NOTIFY`` was lost (the ``LISTEN`` connection dropped) is still found.
        """
        rows = self._query(
            "SELECT r.run_id, max(i.seq) FROM checkpoint_runs r "
            "JOIN run_inbox i ON i.run_id = r.run_id "
            "WHERE r.lease_owner = %s AND r.lease_token = %s GROUP BY r.run_id",
            (self._replica(), self.lease_token),
        )
        return {str(run_id): int(seq) for run_id, seq in rows}

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
