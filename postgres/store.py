"""The PostgreSQL run store: the SQLite store's records on a server that many processes share.

The records, statements and checks are :class:`~batonflow.core.durable._sql_store.SqlRunStore`'s, as
for SQLite, and each write can also be made off the event loop (:mod:`batonflow.postgres._offloop`);
this module is the PostgreSQL dialect (the pool, transactions, psycopg's errors as
store errors: :mod:`batonflow.postgres._errors`) plus what only a shared server has: leases,
fencing, ``NOTIFY``, schema migrations under an advisory lock (their SQL is in
:mod:`batonflow.postgres._sql`), and riding out an outage (:mod:`batonflow.postgres._outage`).

Tables (in the database's ``public`` schema, or the one ``search_path`` names):

* ``batonflow_schema(component, version)``: our schema version, migrated by version under an
  advisory lock so replicas starting together do not race.
* ``checkpoint_runs``: one row per run, with ``lease_owner``/``lease_until`` for replicas.
* ``checkpoints``, ``run_events``, ``run_inbox``: as in the SQLite store (a checkpoint's
  ``ctx_data`` may hold only the state keys its step changed, ``state_mode`` 1, some of
  them as edits of their previous text, ``state_mode`` 2).

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

A write whose connection broke after its statement was sent (the server was killed or
restarted before it answered) may have committed. Every write is made again safely: it is
idempotent, or the store first looks for what it leaves behind when it committed (see
:mod:`batonflow.core.durable._rechecks`; a claim or a release of leases marks the runs it changed with
its own id, ``lease_change``, schema version 5). So no write is made twice, and none is
refused as done by someone else when it was this store's own.
"""

from __future__ import annotations

import builtins
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

import psycopg
from batonflow.core.durable._rechecks import (
    NOT_COMMITTED,
    Recheck,
    checkpoint_stored,
    event_appended,
    status_written,
)
from batonflow.core.durable._records import (
    ENDED,
    Checkpoint,
    RunRecord,
    check_status,
    checkpoint_taken_error,
)
from batonflow.core.durable._text import text_problem, unstorable_error
from batonflow.core.errors import CheckpointError, LeaseLostError, StoreCorruptError
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from ._errors import (
    TextCursor,
    lease_lost,
    no_free_slot,
    no_slot_advice,
    reason,
    redacted,
    store_error,
)
from ._leasing import LeaseMethods
from ._notes import Announcer
from ._offloop import OffLoopStore, Writers
from ._outage import Calls, Outage, OutagePolicy, pool_options
from ._queue import PgQueueMethods
from ._sql import (
    ANNOUNCE,
    APPEND_FENCED,
    COMPONENT,
    EVENTS_CHANNEL,
    FENCE,
    FINISH,
    INBOX_CHANNEL,
    MIGRATIONS,
    PUT_FENCED,
    RELEASE_CHANNEL,
    SCHEMA_TABLE,
    SCHEMA_VERSION,
    SET_VERSION,
    SETUP_LOCK,
    SQL,
)

T = TypeVar("T")


class PostgresCheckpointStore(PgQueueMethods, LeaseMethods, OffLoopStore):
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

    sql = SQL
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
        super().__init__(redacted(url))
        self.url = url
        self.replica_id = replica_id
        #: What the leases this store takes hold (with the replica id): this store's alone,
        #: so another process under the same replica id is fenced off too.
        self.lease_token = uuid.uuid4().hex
        self.lease_seconds = float(lease_seconds)
        self.connect_timeout = float(connect_timeout)
        #: The seq of the last log entry this store appended to each run in progress: after
        #: a lost answer, the entry right after it is this store's (see append_event).
        self._last_seq: dict[str, int] = {}
        #: The most connections the store's pool opens.
        self.pool_size = max_size
        self._writers = Writers(max_size)  # the a... methods' threads, up to one per connection
        self._completed: OrderedDict[str, RunRecord] = OrderedDict()
        #: Announces new log entries after their commits, batched (see ``_notes``).
        self._announcer = Announcer(self._announce)
        self._pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={
                "autocommit": True,
                "connect_timeout": max(1, int(connect_timeout)),
                "cursor_factory": TextCursor,
            },
            timeout=connect_timeout,
            open=False,
            name="batonflow",
            configure=self._configure,
            **pool_options(self._outage),
        )
        self._calls = Calls(self._pool, self._outage, self._where, url, self.connect_timeout)
        try:
            # One connection first: the pool retries a refused or rejected one until the
            # timeout, and a wrong port or password should say so at once, with the reason.
            self._first_connection(max_size)
        except BaseException:
            self._pool.close()
            raise
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

    def _first_connection(self, pool_size: int) -> None:
        """Connect once, to fail at once with the reason on a wrong URL or a server that is
        down; a server without a free connection slot (other replicas hold them all, or some
        are closing) is waited for up to ``connect_timeout``, then named as such."""
        deadline = time.monotonic() + self.connect_timeout
        pause = 0.05
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=max(1, int(self.connect_timeout))).close()
                return
            except psycopg.OperationalError as exc:
                why = reason(exc, self.url)
                if not no_free_slot(exc):
                    raise CheckpointError(
                        f"Cannot connect to PostgreSQL at {self._where} ({why}); check that "
                        "the server runs and the URL (user, password, host, port, database) "
                        "is right."
                    ) from exc
                if time.monotonic() + pause > deadline:
                    raise CheckpointError(
                        f"Cannot connect to PostgreSQL at {self._where}: it had no free "
                        f"connection for {self.connect_timeout:g} s ({why}); "
                        f"{no_slot_advice(pool_size)}."
                    ) from exc
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        # A process stopped inside one of its transactions (SIGSTOP, a frozen VM) would hold
        # its run's row lock for as long as it stays stopped, and the replicas taking runs over
        # skip locked rows: the server ends such a transaction after a lease (the stalled
        # process finds its connection gone when it wakes, and its lease lost).
        timeout_ms = max(1000, int(self.lease_seconds * 1000))
        conn.execute(f"SET idle_in_transaction_session_timeout = {timeout_ms}")

    def _setup(self, conn: psycopg.Connection[Any]) -> None:
        # One replica at a time creates or migrates the schema.
        conn.execute(SETUP_LOCK)
        conn.execute(SCHEMA_TABLE)
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
        for target in sorted(v for v in MIGRATIONS if v > version):
            for statement in MIGRATIONS[target]:
                conn.execute(statement)  # type: ignore[arg-type]
        if version < SCHEMA_VERSION:
            conn.execute(SET_VERSION, (COMPONENT, SCHEMA_VERSION))

    @property
    def outage_seconds(self) -> float:
        """For how long the store rides out an unreachable server (see the class doc)."""
        return self._outage.policy.seconds

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection (autocommit) for a caller's own queries; errors as store errors.

        A transaction left idle on it for longer than a lease is ended by the server (see
        ``_configure``): keep transactions short.

        Getting the connection rides out an outage as the store's own calls do; what the
        caller runs on it is not retried.
        """
        conn = self._attempt("query the store", self._pool.getconn, idempotent=True)
        try:
            yield conn
        except CheckpointError:
            raise
        except (psycopg.Error, PoolTimeout) as exc:
            raise store_error(exc, "query the store", self._where) from exc
        finally:
            self._pool.putconn(conn)

    def _write(
        self,
        action: str,
        fn: Callable[[psycopg.Connection[Any]], T],
        *,
        transaction: bool = True,
        idempotent: bool = False,
        recheck: Recheck[T] | None = None,
    ) -> T:
        """Run ``fn`` on a pooled connection, in one transaction unless ``transaction=False``
        (``fn`` is then one statement, atomic by itself); PostgreSQL errors become store
        errors.

        An unreachable server is retried (see :meth:`_attempt`), also after a connection lost
        with no answer: ``idempotent`` writes are made again, the others make their
        ``recheck`` first (one of the two is required).
        """
        if not idempotent and recheck is None:
            raise TypeError(f"The write to {action} needs idempotent=True or a recheck.")

        def write(conn: psycopg.Connection[Any]) -> T:
            if not transaction:
                return fn(conn)
            with conn.transaction():
                return fn(conn)

        return self._attempt(action, write, idempotent=idempotent, recheck=recheck)

    def _attempt(
        self,
        action: str,
        fn: Callable[[Any], T],
        *,
        idempotent: bool,
        recheck: Recheck[T] | None = None,
    ) -> T:
        """``fn(connection)`` on a pooled connection (``fn`` is ``getconn`` itself for
        :meth:`connection`), retried while the server cannot be reached (see
        :meth:`Calls.run`)."""
        if self._pool.closed:
            raise self._closed_error()
        return self._calls.run(action, fn, idempotent=idempotent, recheck=recheck)

    def _lost(
        self, run_id: str, owner: str | None = None, status: str | None = None
    ) -> LeaseLostError:
        """The error of a write into ``run_id``, which replica ``owner`` holds (or nobody)."""
        self._last_seq.pop(run_id, None)
        if owner is None and status is None:
            row = self._query(
                "SELECT lease_owner, status FROM checkpoint_runs WHERE run_id = %s", (run_id,)
            )
            owner, status = row[0] if row else (None, None)
        return lease_lost(run_id, self.replica_id, owner, status)

    def _query(self, sql: str, args: tuple[Any, ...]) -> builtins.list[tuple[Any, ...]]:
        return self._attempt(
            "read",
            lambda conn: conn.execute(sql, args).fetchall(),  # type: ignore[arg-type]
            idempotent=True,
        )

    def _fence(self, conn: psycopg.Connection[Any], run_id: str) -> None:
        """Lock the run's row; raise :class:`LeaseLostError` unless this store holds it."""
        row = conn.execute(FENCE, (run_id,)).fetchone()
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
            self.replica_id is not None,
        )

    # -- the run queue (core/durable/_queue.py): claims one replica at a time per workflow ----

    def finish_run(
        self,
        run_id: str,
        status: str,
        *,
        result: str | None = None,
        error: str | None = None,
        end: str | None = None,
    ) -> None:
        """As :meth:`SqlRunStore.finish_run`, in one statement (:data:`FINISH`: one round
        trip where a transaction of four statements took six); a retry after a lost answer
        that finds the end it committed returns (it is not refused as a write into an ended
        run)."""
        self._writers.drain(run_id)
        check_status(status)
        ended = status in ENDED
        if ended:
            self._recorded.discard(run_id)
        stamp = time.time()
        params = {
            "run_id": run_id,
            "replica": self.replica_id,
            "token": self.lease_token,
            "has_end": end is not None,
            "end": end,
            "status": status,
            "result": result,
            "error": error,
            "stamp": stamp,
            "ended": ended,
        }

        def finish(conn: psycopg.Connection[Any]) -> None:
            owner, current, end_seq, *record = conn.execute(FINISH, params).fetchone()
            if end_seq is not None:
                self._announcer.announce(run_id, int(end_seq))
            if record[0] is None:
                if self.replica_id is not None:
                    raise self._lost(run_id, owner, current)
            elif status == "completed":
                self._written_end(RunRecord(*record))  # never changes again: arun reads it

        self._write(
            "set a run's status" if end is None else "record how a run ended",
            finish,
            transaction=False,
            recheck=status_written(self.sql, run_id, status, result, error, stamp),
        )
        if ended:
            self._last_seq.pop(run_id, None)

    def _put_recorded(self, checkpoint: Checkpoint, row: tuple[Any, ...]) -> None:
        def insert(conn: psycopg.Connection[Any]) -> tuple[int, int]:
            try:
                found = conn.execute(
                    PUT_FENCED, (checkpoint.run_id, *row, self.replica_id, self.lease_token)
                ).fetchone()
            except pg_errors.UniqueViolation as exc:
                stored = checkpoint_stored(self.sql, checkpoint).committed(conn)
                if stored is not NOT_COMMITTED:
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

    def append_event(self, run_id: str, kind: str, body: str, *, waiting: bool = False) -> int:
        """Append one entry to the run's event log and return its ``seq`` (from 1).

        Every replica streaming the run is told by ``NOTIFY batonflow_events``. After a lost
        answer, the entry is this store's if it is the run's last one, right after the last
        entry this store appended (with the same kind and body).

        Raises:
            LeaseLostError: Another replica holds the run.
            StoreFullError: The server's disk is full; nothing was written.
        """
        self._writers.drain(run_id)
        recheck = event_appended(self.sql, run_id, kind, body, waiting, self._last_seq.get(run_id))
        if not waiting:
            args = (run_id, run_id, run_id, kind, body, self.replica_id, self.lease_token)

            def one(conn: psycopg.Connection[Any]) -> int | None:
                found = conn.execute(APPEND_FENCED, args).fetchone()
                return None if found is None else int(found[0])

            seq = self._write(
                "record a stream event",
                one,
                transaction=False,
                recheck=cast(Recheck[int | None], recheck),
            )
            if seq is None:
                raise self._lost(run_id)
            self._announcer.announce(run_id, seq)  # committed: autocommit, one statement
        else:

            def append(conn: psycopg.Connection[Any]) -> int:
                self._fence(conn, run_id)
                (seq,) = conn.execute(
                    self.sql.append_event, (run_id, kind, body, run_id)
                ).fetchone()
                conn.execute(self.sql.mark_waiting, (seq, time.time(), run_id))
                self._appended(conn, run_id, int(seq))
                return int(seq)

            seq = self._write("record a stream event", append, recheck=recheck)
        self._last_seq[run_id] = seq
        return seq

    def _announce(self, payloads: builtins.list[str]) -> None:
        """One ``NOTIFY batonflow_events`` per payload, all in one transaction."""
        self._write(
            "announce new log entries",
            lambda conn: conn.execute(ANNOUNCE, (EVENTS_CHANNEL, payloads)),
            transaction=False,
            idempotent=True,  # a hint: sent twice, readers read the log once more
        )

    def _appended(self, conn: psycopg.Connection[Any], run_id: str, seq: int) -> None:
        # Every replica streaming the run wakes up on commit (the transactions of several
        # statements that call this are rare: a run's waiting mark, a queued run's start).
        conn.execute("SELECT pg_notify(%s, %s)", (EVENTS_CHANNEL, f"{run_id} {seq}"))

    def _posted(self, conn: psycopg.Connection[Any], run_id: str, seq: int) -> None:
        # The replica holding the run learns of the post on commit.
        conn.execute("SELECT pg_notify(%s, %s)", (INBOX_CHANNEL, f"{run_id} {seq}"))

    def delete(self, run_id: str) -> None:
        """Forget a run with its checkpoints, event log and inbox."""
        super().delete(run_id)
        self._last_seq.pop(run_id, None)

    # -- the rest -------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the pool's connections (the store cannot be used afterwards)."""
        self._writers.close()
        self._announcer.close()
        self._pool.close()

    def __repr__(self) -> str:
        return f"PostgresCheckpointStore({self._where!r})"


__all__ = [
    "EVENTS_CHANNEL",
    "INBOX_CHANNEL",
    "RELEASE_CHANNEL",
    "LeaseLostError",  # batonflow.core.errors' (imported from here by older code)
    "PostgresCheckpointStore",
]
