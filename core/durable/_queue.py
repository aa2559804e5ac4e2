"""The run queue in the run store: runs recorded ``queued``, claimed under limits.

A run started under limits (:class:`RunLimits`) is recorded with status ``queued`` and one row
of ``run_queue`` (its workflow, its key, its priority, when it was queued); nothing runs. A
process that may run more runs *claims* queued runs: in one transaction it counts what the
limits count, picks the queued runs that fit (highest priority first, then oldest), marks them
``running`` (held by the claimer) and notes when each left the queue (``started_at``, what the
rate limit counts). On PostgreSQL the transaction takes an advisory lock per workflow, so two
replicas never both count the same free slot, and reads the candidates ``FOR UPDATE SKIP
LOCKED`` (a queued run being cancelled meanwhile is skipped, not waited for); SQLite's
``BEGIN IMMEDIATE`` makes every claim wait for the one before it, the same semantics.

What the limits count comes from the store, so they hold across processes and replicas:

* ``concurrency``: the workflow's runs that are ``running`` or ``waiting`` (a waiting run keeps
  its slot: an answer lets it go on without queuing again);
* ``key_concurrency``: the same, among the runs queued with the same key (a tenant, a user);
* ``rate``: the runs that left the queue during the last ``per`` seconds;
* ``max_queued``: the runs still queued, checked in the transaction that records a new one
  (:class:`QueueFullError`, and nothing is recorded, when it is full).

``max_running`` is one process's own limit: the dispatcher (:mod:`._dispatch`) counts the
runs it runs and asks for no more than the difference.

:class:`SqlQueue` implements the queue for the SQL stores (SQLite, PostgreSQL) on the dialect
hooks of :class:`~batonflow.core.durable._sql_store.SqlRunStore`;
:class:`~batonflow.core.durable._memory_queue.MemoryQueue` for the in-memory store.
"""

from __future__ import annotations

import builtins
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from ..errors import QueueFullError
from ._rechecks import NOT_COMMITTED, Recheck, run_recorded
from ._records import RunRecord, check_status, run_exists_error
from ._sql_schema import RUN_COLUMNS, run_row


def _count(value: int | None, name: str, *, zero: bool = False) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero else 1):
        least = 0 if zero else 1
        raise ValueError(
            f"RunLimits {name}={value!r} is not a count; pass a whole number of at least "
            f"{least}, or None for no limit."
        )
    return value


#: The least ``Retry-After`` a full queue estimates (seconds): a refused start waits that long.
RETRY_FLOOR = 1.0
#: The most ``Retry-After`` a full queue estimates (seconds), however slow its rate limit.
RETRY_CAP = 60.0


@dataclass(frozen=True, slots=True)
class RunLimits:
    """The limits runs of one workflow start under; with any of them, runs are queued first.

    Args:
        max_running: At most this many runs at once in this process (a server replica's own
            ``--max-running``).
        concurrency: At most this many runs of the workflow running (or waiting for an
            answer) at once in the whole store: across every process and replica.
        key_field: The start field whose value is a run's key (a tenant, a user); the server
            can take it from a header instead (``key_header``).
        key_header: The HTTP header whose value is a run's key (``batonflow serve`` only).
        key_concurrency: At most this many runs with the same key running at once.
        rate: At most this many runs leave the queue per ``per`` seconds (store-wide).
        per: The rate limit's period in seconds.
        max_queued: At most this many runs of the workflow queued; a start beyond it is
            refused (:class:`~batonflow.core.errors.QueueFullError`) and nothing is recorded.
        retry_after: The seconds a refused start is told to wait before trying again
            (``None``: estimated, see :meth:`admission_wait`).
    """

    max_running: int | None = None
    concurrency: int | None = None
    key_field: str | None = None
    key_header: str | None = None
    key_concurrency: int | None = None
    rate: int | None = None
    per: float = 60.0
    max_queued: int | None = None
    retry_after: float | None = None

    def __post_init__(self) -> None:
        _count(self.max_running, "max_running")
        _count(self.concurrency, "concurrency")
        _count(self.key_concurrency, "key_concurrency")
        _count(self.rate, "rate")
        _count(self.max_queued, "max_queued", zero=True)
        if self.key_concurrency is not None and not (self.key_field or self.key_header):
            raise ValueError(
                "RunLimits key_concurrency needs the key it counts by: pass key_field='tenant' "
                "(a start field) or key_header='X-Tenant' (a request header)."
            )
        if not self.per > 0 or not (self.retry_after is None or self.retry_after > 0):
            raise ValueError(
                f"RunLimits per={self.per!r} and retry_after={self.retry_after!r} must be "
                "positive seconds, e.g. per=60.0, retry_after=1.0 (or retry_after=None to "
                "estimate it)."
            )

    def admission_wait(self) -> float:
        """The seconds a start refused by a full queue is told to wait (``Retry-After``).

        ``retry_after`` when set; else, under a rate limit, the time the rate takes to let
        one run out of the queue (``per / rate``: a place frees then), kept between
        :data:`RETRY_FLOOR` and :data:`RETRY_CAP`; else :data:`RETRY_FLOOR`.
        """
        if self.retry_after is not None:
            return self.retry_after
        if self.rate is None:
            return RETRY_FLOOR
        return min(RETRY_CAP, max(RETRY_FLOOR, self.per / self.rate))

    @property
    def counts_store(self) -> bool:
        """Whether a claim counts runs in the store (a store-wide limit is set); else only
        ``max_running`` bounds it, and the queue's row locks are enough."""
        return any(v is not None for v in (self.concurrency, self.rate, self.key_concurrency))

    @property
    def queues(self) -> bool:
        """Whether runs wait in the queue (any limit is set)."""
        return any(
            v is not None
            for v in (
                self.max_running,
                self.concurrency,
                self.key_concurrency,
                self.rate,
                self.max_queued,
            )
        )

    def key_of(
        self, fields: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> str | None:
        """A run's key from its start ``fields`` (or request ``headers``), as text."""
        if self.key_header is not None and headers is not None:
            value = headers.get(self.key_header.lower(), headers.get(self.key_header))
            if value is not None:
                return str(value)
        if self.key_field is not None and fields.get(self.key_field) is not None:
            return str(fields[self.key_field])
        return None


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """Where a queued run waits: its key and priority (higher runs first)."""

    key: str | None = None
    priority: int = 0


@dataclass(frozen=True, slots=True)
class QueuePlace:
    """A queued run's place: its ``position`` (1: next) and the limit it waits on.

    ``waiting_on`` is ``"concurrency"``, ``"key_concurrency"``, ``"rate"``, ``"max_running"``
    (every replica's own limit is reached, as far as the store can tell: runs are free of the
    store-wide limits), or ``"position"`` (runs ahead of it take the free slots).
    """

    position: int
    waiting_on: str


@runtime_checkable
class QueueStore(Protocol):
    """A run store that also keeps the run queue."""

    def enqueue(self, record: RunRecord, entry: QueueEntry, max_queued: int | None) -> None:
        """Record ``record`` as ``queued``; :class:`QueueFullError` (nothing recorded) when
        ``max_queued`` runs of its workflow are queued already."""
        ...

    def claim_queued(self, workflow: str, limits: RunLimits, want: int) -> builtins.list[RunRecord]:
        """Take up to ``want`` queued runs of ``workflow`` that fit ``limits``, marked
        ``running`` and held by this store; the records as claimed."""
        ...

    def queue_place(self, run_id: str, limits: RunLimits | None) -> QueuePlace | None:
        """Where a queued run waits (``None`` when it is not queued)."""
        ...

    def cancel_queued(self, run_id: str, error: str, end: str | None = None) -> bool:
        """Cancel ``run_id`` if it is still queued; whether it was."""
        ...


#: The table (``REAL`` is the dialect's double type) and its indexes.
QUEUE_TABLE = (
    "run_id TEXT PRIMARY KEY",
    "workflow_name TEXT NOT NULL",
    "queue_key TEXT",
    "priority INTEGER NOT NULL",
    "enqueued_at REAL NOT NULL",
    # When the run left the queue (NULL while it waits): what the rate limit counts.
    "started_at REAL",
)


def queue_statements(real: str = "REAL") -> tuple[str, ...]:
    """``CREATE ... IF NOT EXISTS`` for ``run_queue`` and its indexes."""
    columns = ", ".join(c.replace(" REAL", f" {real}", 1) for c in QUEUE_TABLE)
    return (
        f"CREATE TABLE IF NOT EXISTS run_queue ({columns})",
        "CREATE INDEX IF NOT EXISTS run_queue_waiting "
        "ON run_queue (workflow_name, priority, enqueued_at) WHERE started_at IS NULL",
        "CREATE INDEX IF NOT EXISTS run_queue_started ON run_queue (workflow_name, started_at)",
    )


_LIVE = "('running', 'waiting')"
_SQL = {
    "running": f"SELECT COUNT(*) FROM checkpoint_runs WHERE workflow_name = ? AND status IN {_LIVE}",
    "keys": "SELECT q.queue_key, COUNT(*) FROM run_queue q JOIN checkpoint_runs r "
    "ON r.run_id = q.run_id WHERE q.workflow_name = ? AND q.queue_key IS NOT NULL "
    f"AND q.started_at IS NOT NULL AND r.status IN {_LIVE} GROUP BY q.queue_key",
    "recent": "SELECT COUNT(*) FROM run_queue WHERE workflow_name = ? AND started_at >= ?",
    "queued": "SELECT COUNT(*) FROM run_queue q JOIN checkpoint_runs r ON r.run_id = q.run_id "
    "WHERE q.workflow_name = ? AND q.started_at IS NULL AND r.status = 'queued'",
    "candidates": "SELECT q.run_id, q.queue_key FROM run_queue q JOIN checkpoint_runs r "
    "ON r.run_id = q.run_id WHERE q.workflow_name = ? AND q.started_at IS NULL "
    "AND r.status = 'queued' ORDER BY q.priority DESC, q.enqueued_at, q.run_id LIMIT ? OFFSET ?",
    "insert": "INSERT INTO run_queue (run_id, workflow_name, queue_key, priority, enqueued_at) "
    "VALUES (?, ?, ?, ?, ?)",
    "started": "UPDATE run_queue SET started_at = ? WHERE run_id = ?",
    "running_now": "UPDATE checkpoint_runs SET status = 'running', updated_at = ?, "
    f"lease_owner = ? WHERE run_id = ? AND status = 'queued' RETURNING {RUN_COLUMNS}",
    "entry": "SELECT q.workflow_name, q.queue_key, q.priority, q.enqueued_at, r.status "
    "FROM run_queue q JOIN checkpoint_runs r ON r.run_id = q.run_id WHERE q.run_id = ?",
    "ahead": "SELECT COUNT(*) FROM run_queue q JOIN checkpoint_runs r ON r.run_id = q.run_id "
    "WHERE q.workflow_name = ? AND q.started_at IS NULL AND r.status = 'queued' "
    "AND (q.priority > ? OR (q.priority = ? AND (q.enqueued_at < ? "
    "OR (q.enqueued_at = ? AND q.run_id < ?))))",
}
#: How many candidates a claim reads at a time (more when keys at their limit are skipped).
_PAGE = 100


class Counts:
    """What a claim counts, then updates as it picks runs."""

    def __init__(self, running: int, keys: dict[str, int], recent: int) -> None:
        self.running = running
        self.keys = keys
        self.recent = recent

    def room(self, limits: RunLimits, want: int) -> int:
        """How many runs may leave the queue now (before keys are looked at)."""
        room = want
        if limits.concurrency is not None:
            room = min(room, limits.concurrency - self.running)
        if limits.rate is not None:
            room = min(room, limits.rate - self.recent)
        return max(0, room)

    def fits(self, limits: RunLimits, key: str | None) -> bool:
        """Whether a run with ``key`` fits the key limit."""
        if limits.key_concurrency is None or key is None:
            return True
        return self.keys.get(key, 0) < limits.key_concurrency

    def take(self, key: str | None) -> None:
        """Count a run picked."""
        self.running += 1
        self.recent += 1
        if key is not None:
            self.keys[key] = self.keys.get(key, 0) + 1

    def blocking(self, limits: RunLimits, key: str | None) -> str:
        """The limit a queued run with ``key`` waits on now (see :class:`QueuePlace`)."""
        if limits.concurrency is not None and self.running >= limits.concurrency:
            return "concurrency"
        if limits.rate is not None and self.recent >= limits.rate:
            return "rate"
        if not self.fits(limits, key):
            return "key_concurrency"
        return "max_running" if limits.max_running is not None else "position"


class SqlQueue:
    """:class:`QueueStore` on the SQL store's dialect hooks (``_write``, ``_query``)."""

    sql: ClassVar[Any]
    unique_violation: ClassVar[tuple[type[BaseException], ...]]
    _write: Callable[..., Any]
    _query: Callable[[str, tuple[Any, ...]], builtins.list[tuple[Any, ...]]]
    _holder: str | None
    _held: set[str]
    _appended: Callable[[Any, str, int], None]
    _where: str
    _recorded: set[str]
    #: What ends the candidates' SELECT (PostgreSQL: `` FOR UPDATE SKIP LOCKED``).
    skip_locked: ClassVar[str] = ""

    def _q(self, name: str) -> str:
        return _SQL[name].replace("?", self.sql.param)

    def _lock_queue(self, conn: Any, workflow: str) -> None:
        """Serialize claims and admissions of ``workflow`` (SQLite: the transaction does)."""

    def _hold_claimed(self, conn: Any, run_ids: builtins.list[str], claim: str) -> None:
        """Make the claimed runs this store's to run, beyond their holder name (SQLite's,
        written as they are claimed): PostgreSQL leases them, marked with ``claim``."""

    def _queued_args(self, record: RunRecord) -> tuple[Any, ...]:
        """The parameters of ``insert_run`` for a queued run: held by nobody (the store that
        queues it may never run it). SQLite's: the record and no holder."""
        return (*run_row(record), None)

    def _claim_recheck(self, claim: str) -> Recheck[builtins.list[RunRecord]]:
        """How a claim whose answer was lost finds the runs it took (SQLite loses none)."""
        return Recheck(("queue-claim", claim), lambda conn: NOT_COMMITTED)

    def _counts(self, conn: Any, workflow: str, limits: RunLimits) -> Counts:
        running = 0
        if limits.concurrency is not None:
            running = int(conn.execute(self._q("running"), (workflow,)).fetchone()[0])
        keys: dict[str, int] = {}
        if limits.key_concurrency is not None:
            keys = {str(k): int(n) for k, n in conn.execute(self._q("keys"), (workflow,))}
        recent = 0
        if limits.rate is not None:
            since = time.time() - limits.per
            recent = int(conn.execute(self._q("recent"), (workflow, since)).fetchone()[0])
        return Counts(running, keys, recent)

    def enqueue(self, record: RunRecord, entry: QueueEntry, max_queued: int | None) -> None:
        """Record ``record`` (status ``queued``) and its place in the queue, in one transaction.

        Raises:
            QueueFullError: ``max_queued`` runs of the workflow are queued; nothing recorded.
            RunConflictError: A run with that id, or with its idempotency key, exists.
        """
        check_status(record.status)
        args = self._queued_args(record)
        workflow = record.workflow_name

        def insert(conn: Any) -> None:
            if max_queued is not None:
                self._lock_queue(conn, workflow)
            try:
                conn.execute(self.sql.insert_run, args)
            except self.unique_violation as exc:
                raise run_exists_error(record.run_id, self._where, record.idempotency_key) from exc
            if max_queued is not None:
                queued = int(conn.execute(self._q("queued"), (workflow,)).fetchone()[0])
                if queued >= max_queued:
                    raise QueueFullError(workflow, max_queued, None)
            conn.execute(
                self._q("insert"),
                (record.run_id, workflow, entry.key, entry.priority, record.created_at),
            )

        self._write("queue a run", insert, recheck=run_recorded(self.sql, record))
        self._recorded.add(record.run_id)

    def claim_queued(self, workflow: str, limits: RunLimits, want: int) -> builtins.list[RunRecord]:
        """Take up to ``want`` queued runs of ``workflow`` that fit ``limits`` (see the module
        doc); they are ``running`` and this store's when this returns."""
        if want <= 0:
            return []

        def claim(conn: Any) -> builtins.list[RunRecord]:
            self._lock_queue(conn, workflow)
            counts = self._counts(conn, workflow, limits)
            room = counts.room(limits, want)
            picked: builtins.list[str] = []
            offset = 0
            while len(picked) < room:
                page = conn.execute(
                    self._q("candidates") + self.skip_locked, (workflow, _PAGE, offset)
                ).fetchall()
                for run_id, key in page:
                    if len(picked) >= room:
                        break
                    if counts.fits(limits, key):
                        counts.take(key)
                        picked.append(str(run_id))
                if len(page) < _PAGE or limits.key_concurrency is None:
                    break
                offset += _PAGE
            now = time.time()
            records = []
            for run_id in picked:
                conn.execute(self._q("started"), (now, run_id))
                row = conn.execute(self._q("running_now"), (now, self._holder, run_id)).fetchone()
                if row is not None:
                    records.append(RunRecord(*row))
            if records:
                self._hold_claimed(conn, [r.run_id for r in records], claim_id)
            return records

        claim_id = uuid.uuid4().hex
        records: builtins.list[RunRecord] = self._write(
            "claim queued runs", claim, recheck=self._claim_recheck(claim_id)
        )
        if self._holder is not None:
            self._held.update(r.run_id for r in records)
        return records

    def cancel_queued(self, run_id: str, error: str, end: str | None = None) -> bool:
        """Cancel ``run_id`` if it is still queued (it never starts); whether it was. With
        ``end`` (JSON text), its event log gets that last entry in the same transaction."""
        cancel_sql = self.sql.param.join(
            (
                "UPDATE checkpoint_runs SET status = 'cancelled', error = ",
                ", updated_at = ",
                " WHERE run_id = ",
                " AND status = 'queued'",
            )
        )

        def cancel(conn: Any) -> bool:
            row = conn.execute(self.sql.lock_run, (run_id,)).fetchone()
            if row is None or row[0] != "queued":
                return False
            if end is not None:
                seq = conn.execute(self.sql.append_end, (run_id, end, run_id, run_id)).fetchone()
                if seq is not None:
                    self._appended(conn, run_id, int(seq[0]))
            conn.execute(cancel_sql, (error, time.time(), run_id))
            return True

        done = bool(self._write("cancel a queued run", cancel, idempotent=True))
        self._recorded.discard(run_id)
        return done

    def queue_place(self, run_id: str, limits: RunLimits | None) -> QueuePlace | None:
        """Where a queued run waits: its position and the limit it waits on."""

        def read(conn: Any) -> QueuePlace | None:
            row = conn.execute(self._q("entry"), (run_id,)).fetchone()
            if row is None or row[4] != "queued":
                return None
            workflow, key, priority, at = row[0], row[1], int(row[2]), float(row[3])
            ahead = conn.execute(
                self._q("ahead"), (workflow, priority, priority, at, at, run_id)
            ).fetchone()[0]
            reason = "position"
            if limits is not None:
                reason = self._counts(conn, workflow, limits).blocking(limits, key)
            return QueuePlace(int(ahead) + 1, reason)

        result: QueuePlace | None = self._write("read a queued run's place", read, idempotent=True)
        return result


__all__ = [
    "QUEUE_TABLE",
    "QueueEntry",
    "QueuePlace",
    "QueueStore",
    "RunLimits",
    "SqlQueue",
    "queue_statements",
]
