"""One SQL run store for every database: the statements, records and checks written once.

:class:`SqlRunStore` implements the :class:`~batonflow.core.durable._store.CheckpointStore` protocol on
four tables (``checkpoint_runs``, ``checkpoints``, ``run_events``, ``run_inbox``) in SQL that
SQLite and PostgreSQL both speak (``ON CONFLICT``, ``RETURNING``); the event logs and inboxes
are written by :mod:`._sql_events`, the journaled calls by :mod:`._sql_journal`. A *dialect*
subclass adds what differs between databases:

* its parameter style, given to :meth:`Statements.build` (``?`` for sqlite3, ``%s`` for
  psycopg), and the expression that reads a checkpoint's ``state`` out of its JSON;
* how a connection is held and a transaction run (:meth:`SqlRunStore._write`,
  :meth:`SqlRunStore._query`), and how the driver's errors become ``CheckpointError``
  subclasses (full, read-only, locked, corrupt);
* the exceptions its driver raises for a unique-key violation (``unique_violation``);
* optional hooks: fencing a run's writes (:meth:`SqlRunStore._fence`), the columns of a new
  run (:meth:`SqlRunStore._run_args`, PostgreSQL's lease), how a status is written, what
  happens after an inbox post or a log entry (PostgreSQL's ``NOTIFY``), and the durable
  step's one-statement writes (a recorded run's checkpoint, a plain stream event), which a
  dialect may send straight to its connection.

The SQLite dialect is :mod:`batonflow.core.durable._sqlite_store`; PostgreSQL's is
``batonflow.postgres.store`` (core may not import its driver). Written here rather than taken
from SQLAlchemy: core depends on the stdlib only, the statements are few, and the durable
step's hot path has to stay one prepared statement on a held connection.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Callable, Collection
from typing import Any, ClassVar, Self, TypeVar

from ..errors import CheckpointError, RunBusyError, StoreCorruptError
from . import _sql_events, _sql_journal
from ._holds import describe, holder_alive
from ._queue import SqlQueue
from ._rechecks import Recheck, checkpoint_stored, run_recorded, status_written
from ._records import (
    ENDED,
    Checkpoint,
    RunFilter,
    RunRecord,
    apply_changes,
    check_checkpoint_id,
    check_status,
    checkpoint_taken_error,
    final_of,
    made_id_parts,
    no_checkpoint_error,
    run_exists_error,
    state_values,
    with_state_values,
)
from ._schedules import SqlSchedules
from ._sql_budget import SqlBudgets
from ._sql_schema import ENDED_SQL, RUN_COLUMNS, Statements, checkpoint_row, run_row

T = TypeVar("T")

#: How many runs' children :meth:`SqlRunStore.children_of` reads in one query (its list of
#: parameters stays well under SQLite's and PostgreSQL's limits).
CHILDREN_AT_ONCE = 1000


#: A driver's connection (``sqlite3.Connection``, ``psycopg.Connection``): only ``execute``
#: returning a cursor with ``fetchone``/``fetchall`` is used.
Conn = Any


class SqlRunStore(SqlBudgets, SqlSchedules, SqlQueue):
    """Runs, checkpoints, event logs and inboxes in SQL tables; a dialect says how to connect.

    Subclasses set :attr:`sql` and :attr:`unique_violation`, call ``super().__init__(where)``,
    and implement :meth:`_write` and :meth:`_query`; see the module docstring.

    Args:
        where: The store's place as messages name it (a quoted path, a URL without password).
    """

    #: The statements in the dialect's parameter style.
    sql: ClassVar[Statements]
    #: What the driver raises when a unique key is violated.
    unique_violation: ClassVar[tuple[type[BaseException], ...]]

    def __init__(self, where: str) -> None:
        self._where = where
        # Runs known to have a record, so a checkpoint skips recording them; an entry goes
        # when the run ends (nothing is kept per finished run).
        self._recorded: set[str] = set()
        #: This store's holder name (see ``core/_holds.py``) where runs are held by process
        #: (SQLite); ``None`` where something else decides (PostgreSQL's replica leases).
        self._holder: str | None = None
        #: The runs this store holds for a run of this process.
        self._held: set[str] = set()

    # -- the dialect --------------------------------------------------------------------------

    def _write(
        self,
        action: str,
        fn: Callable[[Conn], T],
        *,
        transaction: bool = True,
        idempotent: bool = False,
        recheck: Recheck[T] | None = None,
    ) -> T:
        """Run ``fn`` on a connection, in one transaction unless ``transaction=False`` (``fn``
        is then one statement, atomic by itself); driver errors become store errors naming
        ``action``.

        Every write says how it is made again after a lost answer (see ``core/_rechecks.py``):
        ``idempotent`` (running ``fn`` twice is the same as once), or a ``recheck``.
        """
        raise NotImplementedError

    def _query(self, sql: str, args: tuple[Any, ...]) -> builtins.list[tuple[Any, ...]]:
        """The rows of one read; driver errors become store errors."""
        raise NotImplementedError

    def _closed_error(self, cause: BaseException | None = None) -> CheckpointError:
        """The error of a call on a store that was closed."""
        detail = "" if cause is None else f" ({cause})"
        return CheckpointError(
            f"The checkpoint store {self._where} is closed{detail}; create a new "
            f"{type(self).__name__}."
        )

    def _fence(self, conn: Conn, run_id: str) -> None:
        """Refuse (raise) a write into ``run_id`` this process may not make; by default none."""

    def _posted(self, conn: Conn, run_id: str, seq: int) -> None:
        """Called in the transaction that committed inbox entry ``seq``; by default nothing."""

    def _appended(self, conn: Conn, run_id: str, seq: int) -> None:
        """Called in a transaction that appended log entry ``seq``; by default nothing.

        The hot path (:meth:`append_event` of a plain event) does not call it: a dialect that
        announces entries overrides that method whole.
        """

    def _run_args(self, record: RunRecord) -> tuple[Any, ...]:
        """The parameters of :attr:`Statements.insert_run` for ``record``."""
        return run_row(record)

    def _update_status(
        self,
        conn: Conn,
        run_id: str,
        status: str,
        result: str | None,
        error: str | None,
        stamp: float,
    ) -> None:
        """Write a run's new status, ``updated_at`` ``stamp`` (inside the transaction of
        :meth:`finish_run`, after :meth:`_fence`); nothing changes when the run has ended
        already."""
        conn.execute(self.sql.set_status, (status, result, error, stamp, status, status, run_id))

    def _put_recorded(self, checkpoint: Checkpoint, row: tuple[Any, ...]) -> None:
        """Insert the checkpoint of a run whose record exists (one statement)."""

        def insert(conn: Conn) -> None:
            try:
                conn.execute(self.sql.insert_checkpoint, row)
            except self.unique_violation as exc:
                raise checkpoint_taken_error(checkpoint) from exc

        self._write(
            "write a checkpoint",
            insert,
            transaction=False,
            recheck=checkpoint_stored(self.sql, checkpoint),
        )

    # -- runs ---------------------------------------------------------------------------------

    def create_run(self, record: RunRecord) -> None:
        """Record a new run (before any of its steps runs).

        A retry after a lost answer that finds the row it committed (this very record) is
        not a conflict.

        A record with an ``idempotency_key`` is refused when a run holds that key: the
        unique index decides between two stores racing on one key (the second waits for the
        first's transaction and is refused once it commits).

        Raises:
            RunConflictError: A run with that id, or with its idempotency key, exists.
            StoreFullError: The disk is full; nothing was written.
        """
        check_status(record.status)
        args = self._run_args(record)

        def insert(conn: Conn) -> None:
            try:
                conn.execute(self.sql.insert_run, args)
            except self.unique_violation as exc:
                raise run_exists_error(record.run_id, self._where, record.idempotency_key) from exc

        # One statement, atomic by itself: no transaction around it (one round trip, not three).
        self._write(
            "record a new run", insert, transaction=False, recheck=run_recorded(self.sql, record)
        )
        self._recorded.add(record.run_id)
        if self._holder is not None:
            self._held.add(record.run_id)

    def set_status(
        self, run_id: str, status: str, *, result: str | None = None, error: str | None = None
    ) -> None:
        """Set a run's status, result and error."""
        self.finish_run(run_id, status, result=result, error=error)

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
        progress (resumed at the next start) or an ended run whose log ends. A run that has
        ended already (completed, failed, cancelled) is left as it is: a late write changes
        neither its status nor its log.
        """
        check_status(status)
        if status in ENDED:
            self._recorded.discard(run_id)
        if status not in ("running", "waiting"):
            self._held.discard(run_id)

        stamp = time.time()

        def finish(conn: Conn) -> None:
            self._fence(conn, run_id)
            if end is not None:
                row = conn.execute(self.sql.append_end, (run_id, end, run_id, run_id)).fetchone()
                if row is not None:
                    self._appended(conn, run_id, int(row[0]))
            self._update_status(conn, run_id, status, result, error, stamp)

        self._write(
            "set a run's status" if end is None else "record how a run ended",
            finish,
            recheck=status_written(self.sql, run_id, status, result, error, stamp),
        )

    def acquire(self, run_id: str) -> None:
        """Make this process the one that continues ``run_id`` (a resume), before any step runs.

        Where runs are held by process (SQLite), a run held by another live process is refused;
        one whose process died (``kill -9``) is taken. A run that had stopped (interrupted,
        failed, cancelled) becomes ``running`` again; a completed run is left as it is.

        Raises:
            RunBusyError: Another live process (or this store, for another handler) runs it.
            LeaseLostError: (PostgreSQL replicas) another replica holds the run.
        """

        def take(conn: Conn) -> None:
            self._fence(conn, run_id)
            row = conn.execute(self.sql.holder, (run_id,)).fetchone()
            if row is None or row[0] == "completed":
                return
            if self._holder is not None:
                owner = row[1]
                if run_id in self._held or (
                    owner is not None and owner != self._holder and holder_alive(owner)
                ):
                    raise self._busy(run_id, owner)
                conn.execute(self.sql.set_holder, (self._holder, run_id))
            conn.execute(self.sql.reopen, (time.time(), run_id))

        self._write("take a run to resume it", take, idempotent=True)
        if self._holder is not None:
            self._held.add(run_id)

    def let_go(self, run_id: str) -> None:
        """Stop holding ``run_id`` for this process (it stopped running it here)."""
        if self._holder is None:
            return
        self._held.discard(run_id)
        holder = self._holder
        self._write(
            "let go of a run",
            lambda conn: conn.execute(self.sql.let_go, (run_id, holder)),
            idempotent=True,
        )

    def _busy(self, run_id: str, owner: str | None) -> RunBusyError:
        who = "this process already" if run_id in self._held else describe(owner or "")
        return RunBusyError(
            f"Run {run_id!r} in {self._where} is being run by {who}; resuming it here too would "
            "run its steps twice. Wait for that run to end (or stop that process), then resume "
            "it again."
        )

    def runs(
        self,
        *,
        workflow_name: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> builtins.list[RunRecord]:
        """Runs, oldest first, optionally by workflow name and status (the newest ``limit``).

        Raises:
            ValueError: A negative ``limit``.
        """
        wanted = RunFilter(workflow_name, status, limit)
        param = self.sql.param
        sql = f"SELECT {RUN_COLUMNS} FROM checkpoint_runs"
        equals = wanted.equals()
        args: builtins.list[Any] = [value for _, value in equals]
        if equals:
            sql += " WHERE " + " AND ".join(f"{column} = {param}" for column, _ in equals)
        if wanted.limit is not None:
            sql = f"SELECT * FROM ({sql} ORDER BY created_at DESC, run_id DESC LIMIT {param}) AS r"
            args.append(wanted.limit)
        rows = self._query(sql + " ORDER BY created_at, run_id", tuple(args))
        return [RunRecord(*row) for row in rows]

    def run(self, run_id: str) -> RunRecord | None:
        """The record of one run, or ``None``."""
        rows = self._query(self.sql.select_run, (run_id,))
        return RunRecord(*rows[0]) if rows else None

    def run_for_key(self, key: str) -> RunRecord | None:
        """The record of the run idempotency key ``key`` started, or ``None``."""
        rows = self._query(self.sql.run_for_key, (key,))
        return RunRecord(*rows[0]) if rows else None

    def children(self, run_id: str) -> builtins.list[RunRecord]:
        """The runs forked from ``run_id``, oldest first."""
        return [RunRecord(*row) for row in self._query(self.sql.children, (run_id,))]

    def children_of(self, run_ids: Collection[str]) -> builtins.list[RunRecord]:
        """The runs forked from, or started as child runs by, any of ``run_ids``, oldest
        first: one query for up to :data:`CHILDREN_AT_ONCE` runs (a query per that many)."""
        ids = list(dict.fromkeys(run_ids))
        found: builtins.list[RunRecord] = []
        for start in range(0, len(ids), CHILDREN_AT_ONCE):
            some = ids[start : start + CHILDREN_AT_ONCE]
            marks = ", ".join([self.sql.param] * len(some))
            sql = f"SELECT {RUN_COLUMNS} FROM checkpoint_runs WHERE parent_run_id IN ({marks})"
            found.extend(RunRecord(*row) for row in self._query(sql, tuple(some)))
        return sorted(found, key=lambda r: (r.created_at, r.run_id))

    def delete(self, run_id: str) -> None:
        """Forget a run with its checkpoints, event log and inbox (its key is free again)."""

        def delete(conn: Conn) -> None:
            for statement in self.sql.delete:
                conn.execute(statement, (run_id,))

        self._write("delete a run", delete, idempotent=True)
        self._recorded.discard(run_id)

    def ended_runs(
        self,
        before: float,
        *,
        workflow_name: str | None = None,
        exclude: Collection[str] = (),
        limit: int = 100,
    ) -> builtins.list[str]:
        """Ids of ended runs last changed before ``before``, oldest first (see the protocol)."""
        param = self.sql.param
        sql = f"SELECT run_id FROM checkpoint_runs WHERE {ENDED_SQL} AND updated_at < {param}"
        args: builtins.list[Any] = [before]
        if workflow_name is not None:
            sql += f" AND workflow_name = {param}"
            args.append(workflow_name)
        if exclude:
            sql += f" AND workflow_name NOT IN ({', '.join([param] * len(exclude))})"
            args.extend(exclude)
        sql += f" ORDER BY updated_at, run_id LIMIT {param}"
        args.append(limit)
        return [str(row[0]) for row in self._query(sql, tuple(args))]

    # -- checkpoints --------------------------------------------------------------------------

    def put(self, checkpoint: Checkpoint) -> None:
        """Store a checkpoint (and the state keys it changed) atomically.

        A run that was not recorded with :meth:`create_run` is recorded as ``running``.

        Raises:
            CheckpointError: A checkpoint with the same id or ``(run_id, seq)`` exists, its id
                is the made id of another checkpoint (see ``check_checkpoint_id``), or the
                context cannot be written as JSON.
            StoreFullError: The disk is full; nothing was written.
        """
        check_checkpoint_id(checkpoint)
        row = checkpoint_row(checkpoint)
        if checkpoint.run_id in self._recorded:
            self._put_recorded(checkpoint, row)
            return

        def insert(conn: Conn) -> None:
            self._fence(conn, checkpoint.run_id)
            # A run checkpointed without create_run (a bare store user): record it.
            now = time.time()
            conn.execute(
                self.sql.record_implicit,
                (checkpoint.run_id, checkpoint.workflow_name, now, now),
            )
            try:
                conn.execute(self.sql.insert_checkpoint, row)
            except self.unique_violation as exc:
                raise checkpoint_taken_error(checkpoint) from exc

        self._write("write a checkpoint", insert, recheck=checkpoint_stored(self.sql, checkpoint))
        self._recorded.add(checkpoint.run_id)

    def list(self, run_id: str) -> builtins.list[Checkpoint]:
        """The run's checkpoints, oldest first."""
        rows = self._query(self.sql.list_checkpoints, (run_id,))
        state: dict[str, str] = {}
        # The state is rebuilt as the rows go by: one pass, not one query per row.
        return [self._checkpoint(row, state) for row in rows]

    def latest(self, run_id: str) -> Checkpoint | None:
        """The run's most recent checkpoint, or ``None``."""
        rows = self._query(self.sql.latest_checkpoint, (run_id,))
        return self._checkpoint(rows[0]) if rows else None

    def get(self, checkpoint_id: str) -> Checkpoint:
        """One checkpoint by id.

        Raises:
            CheckpointError: No checkpoint has that id.
        """
        made = made_id_parts(checkpoint_id)
        rows: builtins.list[tuple[Any, ...]] = []
        if made is not None:
            rows = self._query(self.sql.get_made_checkpoint, (*made, checkpoint_id))
        if not rows:
            rows = self._query(self.sql.get_checkpoint, (checkpoint_id,))
        if not rows:
            raise no_checkpoint_error(checkpoint_id, self._where)
        return self._checkpoint(rows[0])

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
                    apply_changes(running, state_values(state))
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
                final_event=final_of(final, ctx_data),
                inbox_seq=int(inbox_seq or 0),
            )
        except (TypeError, ValueError, RecursionError) as exc:
            raise StoreCorruptError(
                f"Checkpoint {cid!r} of run {run_id!r} in {self._where} is corrupt ({exc}); "
                "delete the run (store.delete(run_id)) and start it again."
            ) from exc

    def _state_at(self, run_id: str, seq: int) -> dict[str, str]:
        """The untyped state as of checkpoint ``seq``: its last whole state plus changes."""
        base = self._query(self.sql.last_whole_state, (run_id, seq))[0][0]
        state: dict[str, str] = {}
        for (changes,) in self._query(self.sql.state_changes, (run_id, base, seq)):
            apply_changes(state, state_values(json.loads(changes or "{}")))
        return state

    # -- event log and inbox: _sql_events.py ------------------------------------------------

    append_event = _sql_events.append_event
    events = _sql_events.events
    post_event = _sql_events.post_event
    inbox = _sql_events.inbox

    # -- journaled calls: _sql_journal.py ----------------------------------------------------

    journal_get = _sql_journal.journal_get
    journal_put = _sql_journal.journal_put
    journal = _sql_journal.journal

    # -- the rest -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the store's connections (the store cannot be used afterwards)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["SqlRunStore"]
