"""Schedules in the run store: what starts runs at cron times, and the firings that did.

A schedule (:class:`ScheduleRecord`) names a workflow, a cron expression, the start fields of
each run and what to do with firings missed while no server ran (``skip`` or ``once``). The
store keeps it as text: parsing the cron expression and firing are the server's business
(``batonflow.apps.schedules``); core stays on the standard library.

A *firing* is one scheduled time of one schedule. Its key is ``(schedule, fire_at)``, unique
in the table, so replicas that race to fire the same time insert it once: :meth:`claim_firing`
tells each whether it won, and only the winner starts the run, then links it
(:meth:`link_firing`). The firings are how a run links back to its schedule.

:class:`SqlSchedules` implements :class:`ScheduleStore` for the SQL stores (SQLite and
PostgreSQL, on the dialect hooks of :class:`~batonflow.core.durable._sql_store.SqlRunStore`);
:class:`MemorySchedules` for the in-memory store.
"""

from __future__ import annotations

import builtins
import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, TypeVar, runtime_checkable

T = TypeVar("T")

#: What a schedule does with the firings it missed while no server ran: ``skip`` them (the
#: next firing comes on time), or start ``once`` for the latest of them.
MISSED_POLICIES = ("skip", "once")
Missed = Literal["skip", "once"]


class ScheduleExistsError(ValueError):
    """A schedule of that name is stored already."""


@dataclass(frozen=True, slots=True)
class ScheduleRecord:
    """One stored schedule.

    Attributes:
        name: Its name, unique in the store.
        workflow: The served workflow each firing starts.
        cron: The cron expression (UTC), as given.
        fields: The start event's fields of every run it starts.
        missed: What to do with firings missed while no server ran (:data:`MISSED_POLICIES`).
        created_at: When it was added (seconds since the epoch); no firing is due before.
    """

    name: str
    workflow: str
    cron: str
    fields: dict[str, Any]
    missed: str = "skip"
    created_at: float = 0.0


@dataclass(frozen=True, slots=True)
class Firing:
    """One scheduled time of one schedule, and the run it started (``None`` until linked)."""

    schedule: str
    fire_at: int
    run_id: str | None


@runtime_checkable
class ScheduleStore(Protocol):
    """A run store that also keeps schedules and their firings."""

    def add_schedule(self, record: ScheduleRecord) -> None:
        """Store ``record``; raises :class:`ScheduleExistsError` if its name is taken."""
        ...

    def schedules(self) -> builtins.list[ScheduleRecord]:
        """Every schedule, by name."""
        ...

    def remove_schedule(self, name: str) -> bool:
        """Forget schedule ``name`` (its firings stay, so runs keep their link); whether it
        was stored."""
        ...

    def claim_firing(self, name: str, fire_at: int, claimant: str) -> bool:
        """Record the firing of ``name`` at ``fire_at`` for ``claimant``; whether this claimant
        holds it (once recorded, a firing stays its first claimant's)."""
        ...

    def link_firing(self, name: str, fire_at: int, run_id: str) -> None:
        """Record the run a firing started."""
        ...

    def firing(self, name: str, fire_at: int) -> Firing | None:
        """The firing of ``name`` at ``fire_at``, if one was claimed."""
        ...

    def firings(
        self, *, schedule: str | None = None, run_ids: Iterable[str] | None = None
    ) -> builtins.list[Firing]:
        """Firings, oldest first: of one schedule, or those that started ``run_ids``."""
        ...


#: The tables, column by column (``REAL`` is the dialect's double type), with their keys.
SCHEDULE_TABLES: dict[str, tuple[str, ...]] = {
    "schedules": (
        "name TEXT PRIMARY KEY",
        "workflow_name TEXT NOT NULL",
        "cron TEXT NOT NULL",
        "fields TEXT NOT NULL",
        "missed TEXT NOT NULL",
        "created_at REAL NOT NULL",
    ),
    # One row per (schedule, time): the key replicas race on.
    "schedule_firings": (
        "schedule TEXT NOT NULL",
        "fire_at BIGINT NOT NULL",
        "claimant TEXT NOT NULL",
        "run_id TEXT",
        "created_at REAL NOT NULL",
        "PRIMARY KEY (schedule, fire_at)",
    ),
}


def schedule_statements(real: str = "REAL") -> tuple[str, ...]:
    """``CREATE ... IF NOT EXISTS`` for the schedule tables and the index of runs' links."""
    tables = tuple(
        f"CREATE TABLE IF NOT EXISTS {table} ("
        + ", ".join(c.replace(" REAL", f" {real}", 1) for c in columns)
        + ")"
        for table, columns in SCHEDULE_TABLES.items()
    )
    return (
        *tables,
        "CREATE INDEX IF NOT EXISTS schedule_firings_by_run ON schedule_firings (run_id)",
    )


_SELECT = "SELECT name, workflow_name, cron, fields, missed, created_at FROM schedules"


def _record(row: tuple[Any, ...]) -> ScheduleRecord:
    name, workflow, cron, fields, missed, created = row
    return ScheduleRecord(name, workflow, cron, json.loads(fields), missed, float(created))


def exists_error(name: str) -> ScheduleExistsError:
    """The error of adding a schedule whose name is taken."""
    return ScheduleExistsError(
        f"A schedule named {name!r} exists already; remove it first "
        f"(batonflow schedule remove {name}) or pick another name."
    )


class SqlSchedules:
    """:class:`ScheduleStore` on the SQL store's dialect hooks (``_write``, ``_query``)."""

    sql: ClassVar[Any]
    unique_violation: ClassVar[tuple[type[BaseException], ...]]
    _write: Callable[..., Any]
    _query: Callable[[str, tuple[Any, ...]], builtins.list[tuple[Any, ...]]]

    def _p(self, sql: str) -> str:
        return sql.replace("?", self.sql.param)

    def add_schedule(self, record: ScheduleRecord) -> None:
        """Store ``record``.

        Raises:
            ScheduleExistsError: A schedule of that name is stored already.
        """
        row = (
            record.name,
            record.workflow,
            record.cron,
            json.dumps(record.fields),
            record.missed,
            record.created_at,
        )
        insert = self._p(
            "INSERT INTO schedules (name, workflow_name, cron, fields, missed, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING"
        )
        select = self._p(_SELECT + " WHERE name = ?")

        # Made again after a lost answer, it finds its own row (the same creation time): the
        # stored row decides, as in claim_firing.
        def add(conn: Any) -> bool:
            conn.execute(insert, row)
            found = conn.execute(select, (record.name,)).fetchone()
            return found is not None and _record(found) == record

        if not self._write("add a schedule", add, idempotent=True):
            raise exists_error(record.name)

    def schedules(self) -> builtins.list[ScheduleRecord]:
        """Every schedule, by name."""
        return [_record(row) for row in self._query(_SELECT + " ORDER BY name", ())]

    def remove_schedule(self, name: str) -> bool:
        """Forget schedule ``name``; whether it was stored (its firings stay)."""
        sql = self._p("DELETE FROM schedules WHERE name = ? RETURNING name")
        return bool(
            self._write(
                "remove a schedule",
                lambda conn: conn.execute(sql, (name,)).fetchone() is not None,
                idempotent=True,
            )
        )

    def claim_firing(self, name: str, fire_at: int, claimant: str) -> bool:
        """Insert the firing once; whether ``claimant`` holds it (see :class:`ScheduleStore`).

        Made again after a lost answer, it reads the same row: the claimant decides, so a
        replica that won is never told it lost.
        """
        insert = self._p(
            "INSERT INTO schedule_firings (schedule, fire_at, claimant, created_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (schedule, fire_at) DO NOTHING"
        )
        select = self._p("SELECT claimant FROM schedule_firings WHERE schedule = ? AND fire_at = ?")

        def claim(conn: Any) -> bool:
            conn.execute(insert, (name, fire_at, claimant, time.time()))
            row = conn.execute(select, (name, fire_at)).fetchone()
            return row is not None and row[0] == claimant

        return bool(self._write("record a schedule's firing", claim, idempotent=True))

    def link_firing(self, name: str, fire_at: int, run_id: str) -> None:
        """Record the run a firing started."""
        sql = self._p("UPDATE schedule_firings SET run_id = ? WHERE schedule = ? AND fire_at = ?")
        self._write(
            "link a run to its schedule",
            lambda conn: conn.execute(sql, (run_id, name, fire_at)),
            idempotent=True,
        )

    def firing(self, name: str, fire_at: int) -> Firing | None:
        """The firing of ``name`` at ``fire_at``, if one was claimed."""
        sql = self._p(
            "SELECT schedule, fire_at, run_id FROM schedule_firings "
            "WHERE schedule = ? AND fire_at = ?"
        )
        rows = self._query(sql, (name, fire_at))
        return Firing(rows[0][0], int(rows[0][1]), rows[0][2]) if rows else None

    def firings(
        self, *, schedule: str | None = None, run_ids: Iterable[str] | None = None
    ) -> builtins.list[Firing]:
        """Firings, oldest first: of one schedule, or those that started ``run_ids``."""
        sql = "SELECT schedule, fire_at, run_id FROM schedule_firings"
        args: builtins.list[Any] = []
        where = []
        if schedule is not None:
            where.append("schedule = ?")
            args.append(schedule)
        if run_ids is not None:
            ids = builtins.list(run_ids)
            if not ids:
                return []
            where.append(f"run_id IN ({', '.join('?' * len(ids))})")
            args.extend(ids)
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = self._query(self._p(sql + " ORDER BY fire_at, schedule"), tuple(args))
        return [Firing(s, int(at), run) for s, at, run in rows]


class MemorySchedules:
    """:class:`ScheduleStore` in dicts, for the in-memory store (gone with the process)."""

    _lock: threading.Lock

    def _tables(self) -> tuple[dict[str, ScheduleRecord], dict[tuple[str, int], list[Any]]]:
        tables = self.__dict__.get("_schedule_tables")
        if tables is None:
            tables = self.__dict__["_schedule_tables"] = ({}, {})
        return tables  # type: ignore[no-any-return]

    def add_schedule(self, record: ScheduleRecord) -> None:
        """Store ``record``.

        Raises:
            ScheduleExistsError: A schedule of that name is stored already.
        """
        with self._lock:
            schedules, _ = self._tables()
            if record.name in schedules:
                raise exists_error(record.name)
            schedules[record.name] = record

    def schedules(self) -> builtins.list[ScheduleRecord]:
        """Every schedule, by name."""
        with self._lock:
            return sorted(self._tables()[0].values(), key=lambda s: s.name)

    def remove_schedule(self, name: str) -> bool:
        """Forget schedule ``name``; whether it was stored (its firings stay)."""
        with self._lock:
            return self._tables()[0].pop(name, None) is not None

    def claim_firing(self, name: str, fire_at: int, claimant: str) -> bool:
        """Record the firing once; whether ``claimant`` holds it."""
        with self._lock:
            row = self._tables()[1].setdefault((name, fire_at), [claimant, None])
            return bool(row[0] == claimant)

    def link_firing(self, name: str, fire_at: int, run_id: str) -> None:
        """Record the run a firing started."""
        with self._lock:
            row = self._tables()[1].get((name, fire_at))
            if row is not None:
                row[1] = run_id

    def firing(self, name: str, fire_at: int) -> Firing | None:
        """The firing of ``name`` at ``fire_at``, if one was claimed."""
        with self._lock:
            row = self._tables()[1].get((name, fire_at))
        return None if row is None else Firing(name, fire_at, row[1])

    def firings(
        self, *, schedule: str | None = None, run_ids: Iterable[str] | None = None
    ) -> builtins.list[Firing]:
        """Firings, oldest first: of one schedule, or those that started ``run_ids``."""
        wanted = None if run_ids is None else set(run_ids)
        with self._lock:
            found = [
                Firing(name, at, row[1])
                for (name, at), row in self._tables()[1].items()
                if (schedule is None or name == schedule) and (wanted is None or row[1] in wanted)
            ]
        return sorted(found, key=lambda f: (f.fire_at, f.schedule))


__all__ = [
    "MISSED_POLICIES",
    "SCHEDULE_TABLES",
    "Firing",
    "MemorySchedules",
    "Missed",
    "ScheduleExistsError",
    "ScheduleRecord",
    "ScheduleStore",
    "SqlSchedules",
    "exists_error",
    "schedule_statements",
]
