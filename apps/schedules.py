"""Schedules: runs started at cron times (UTC), exactly once across replicas.

:func:`check_schedule` turns what a user sent (``POST /schedules``, ``batonflow schedule add``)
into a :class:`~batonflow.core.durable._schedules.ScheduleRecord` or a clear error: the cron
expression is read by croniter (five fields, ``minute hour day month weekday``, or six with
seconds last), the workflow must be served here, the fields must build its start event.

:class:`Scheduler` is the server's loop. It sleeps until the next firing time of the stored
schedules (or ``poll`` seconds, to see schedules another replica or process added), then, for
each schedule, takes the latest cron time that is due and claims it in the store: the firing's
key ``(schedule, time)`` is unique, so of the replicas racing for it exactly one wins and starts
the run, which is linked to its firing. What happens to times missed while no server ran is the
schedule's ``missed`` policy:

* ``skip``: a time that passed before this scheduler started is not fired; the next time is.
* ``once``: the latest time that was missed is fired once (the others are not), then the
  schedule goes on as usual.

A time is fired once. The replica that claims it first starts its run, with the firing as the
start's idempotency key (``schedule:NAME@TIME``, see :mod:`batonflow.core.durable._idempotency`);
a replica that finds the time claimed by another but no run linked to it yet starts it too, with
the same key. So a claimant that died (or stalled) between its claim and its start does not lose
the firing, and two replicas starting it get one run: the store keeps one run per key.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import inspect
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from batonflow.core.durable._schedules import (
    MISSED_POLICIES,
    ScheduleRecord,
    ScheduleStore,
)
from batonflow.core.errors import IdempotencyKeyError

from ._introspect import StartFieldsError, build_start_event
from ._wire import rfc3339

logger = logging.getLogger("batonflow.apps.schedules")

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


class ScheduleError(ValueError):
    """A schedule that cannot be stored as given (the message says what to change)."""


def _croniter() -> Any:
    try:
        from croniter import croniter
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "Schedules need croniter; install it with pip install 'batonflow[server]'."
        ) from exc
    return croniter


def check_cron(cron: str) -> str:
    """``cron`` stripped, if croniter reads it.

    Raises:
        ScheduleError: It is not a cron expression.
    """
    text = cron.strip()
    fields = text.split()
    if len(fields) not in (5, 6) or not _croniter().is_valid(text):
        raise ScheduleError(
            f"The cron expression {cron!r} is not valid; write five fields, minute hour "
            "day-of-month month day-of-week (times are UTC), e.g. '*/5 * * * *' for every five "
            "minutes, or six with seconds last."
        )
    return text


def check_schedule(
    workflows: dict[str, Any],
    *,
    name: str,
    workflow: str,
    cron: str,
    fields: dict[str, Any],
    missed: str = "skip",
    now: float | None = None,
) -> ScheduleRecord:
    """A schedule record from what a user sent, checked against the served ``workflows``.

    Raises:
        ScheduleError: A bad name, cron expression or missed policy, a workflow not served
            here, or fields its start event does not take.
    """
    if not _NAME.fullmatch(name):
        raise ScheduleError(
            f"The schedule name {name!r} is not valid; use up to 100 letters, digits, '_', "
            "'.' or '-', starting with a letter or digit (e.g. nightly-report)."
        )
    if missed not in MISSED_POLICIES:
        raise ScheduleError(
            f"The missed policy {missed!r} is not known; use 'skip' (missed firings are "
            "dropped) or 'once' (the latest missed firing runs once)."
        )
    cron = check_cron(cron)
    served = workflows.get(workflow)
    if served is None:
        raise ScheduleError(
            f"Workflow {workflow!r} is not served here; served: "
            f"{', '.join(sorted(workflows)) or 'none'} (GET /workflows lists them)."
        )
    try:
        build_start_event(served, fields)
    except StartFieldsError as exc:
        raise ScheduleError(
            f"Invalid field {exc.field!r} for workflow {workflow!r}: {exc.reason}; fix the "
            "schedule's fields (--set KEY=VALUE)."
        ) from exc
    return ScheduleRecord(
        name, workflow, cron, dict(fields), missed, time.time() if now is None else now
    )


def firing_key(record: ScheduleRecord, at: int) -> str:
    """The idempotency key of the run ``record``'s firing at ``at`` starts."""
    return f"schedule:{record.name}@{at}"


def _utc(ts: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(ts, dt.UTC)


def latest_time(cron: str, now: float) -> int:
    """The latest time of ``cron`` at or before ``now`` (whole seconds since the epoch)."""
    it = _croniter()(cron, _utc(int(now) + 1))
    return int(it.get_prev(dt.datetime).timestamp())


def next_time(cron: str, now: float) -> int:
    """The first time of ``cron`` after ``now`` (whole seconds since the epoch)."""
    it = _croniter()(cron, _utc(now))
    return int(it.get_next(dt.datetime).timestamp())


class Scheduler:
    """The server's schedule loop (see the module docstring).

    Args:
        store: The run store, keeping the schedules and their firings.
        workflows: The served workflows by name.
        start: Starts a run: ``start(workflow_name, start_event, fields, key)`` returns its
            id, or an awaitable of it (the server's start records the run off the loop).
            ``key`` is the firing's idempotency key: a start given a key that started a run
            already returns that run's id and starts nothing.
        poll: Seconds between looks at the stored schedules while no firing is due.
        clock: Seconds since the epoch (injectable for tests).
    """

    def __init__(
        self,
        store: ScheduleStore,
        workflows: dict[str, Any],
        start: Callable[[str, Any, dict[str, Any]], str | Awaitable[str]],
        *,
        poll: float = 15.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.workflows = workflows
        self._start = start
        self.poll = poll
        self.clock = clock
        #: Who claims firings: unique per scheduler, so a replica knows the firings it won.
        self.claimant = uuid.uuid4().hex
        self.started_at = clock()
        self._wake = asyncio.Event()
        #: The latest time this scheduler fired (or saw fired) per schedule: a claim asked
        #: again answers True to its claimant, so it must not be asked again.
        self._done: dict[str, int] = {}
        #: The schedules as the last tick read them (what next_wake looks at).
        self._known: list[ScheduleRecord] = []

    def wake(self) -> None:
        """Look at the schedules now (one was added or removed here)."""
        self._wake.set()

    def due(self, record: ScheduleRecord, now: float) -> int | None:
        """The time of ``record`` to fire at ``now``, if any (claimed or not)."""
        at = latest_time(record.cron, now)
        since = record.created_at
        if record.missed == "skip":
            since = max(since, self.started_at)
        return at if at >= since else None

    async def tick(self) -> list[str]:
        """Fire what is due now; the ids of the runs this scheduler started.

        The store is called in a thread: a database that is away (a PostgreSQL store rides
        out an outage) holds up the scheduler, never the server's event loop.
        """
        now = self.clock()
        started = []
        self._known = await asyncio.to_thread(self.store.schedules)
        for record in self._known:
            at = self.due(record, now)
            if at is None or record.workflow not in self.workflows:
                continue  # a replica that does not serve the workflow leaves it to others
            if self._done.get(record.name, -1) >= at:
                continue
            run_id = await self._fire(record, at)
            if run_id is not None:
                started.append(run_id)
        return started

    async def _fire(self, record: ScheduleRecord, at: int) -> str | None:
        try:
            start_event = build_start_event(self.workflows[record.workflow], record.fields)
        except StartFieldsError as exc:
            self._done[record.name] = at  # said once, not at every tick
            logger.error(
                "Schedule %r did not fire at %s: workflow %r no longer takes its fields (%s); "
                "remove the schedule and add it again with fields it takes.",
                record.name,
                _utc(at).isoformat(),
                record.workflow,
                exc.reason,
            )
            return None
        won = await asyncio.to_thread(self.store.claim_firing, record.name, at, self.claimant)
        # Only once the store answered: a claim that raised is asked again at the next tick
        # (the store answers a claimant's own claim with True).
        if not won:
            firing = await asyncio.to_thread(self.store.firing, record.name, at)
            if firing is not None and firing.run_id is not None:
                self._done[record.name] = at
                return None  # another replica fired it
            # Claimed by another replica that has not linked a run: it may have died or
            # stalled before starting it. Start it here with the firing's key: if the claimant
            # started it (or does so now), the key answers with its run and nothing more runs.
        try:
            started = self._start(
                record.workflow, start_event, record.fields, firing_key(record, at)
            )
            run_id = await started if inspect.isawaitable(started) else started
        except IdempotencyKeyError as exc:  # the key started another start's run
            self._done[record.name] = at  # said once, not at every tick
            logger.error("Schedule %r did not fire at %s: %s", record.name, _utc(at), exc)
            return None
        await asyncio.to_thread(self.store.link_firing, record.name, at, run_id)
        self._done[record.name] = at
        if not won:
            logger.info(
                "Schedule %r at %s was claimed by another replica that started no run yet; "
                "run %s carries it",
                record.name,
                _utc(at).isoformat(),
                run_id,
            )
            return None
        logger.info("Schedule %r fired at %s: run %s", record.name, _utc(at).isoformat(), run_id)
        return run_id

    def next_wake(self, now: float) -> float:
        """When to look again: the next firing time of the schedules the last :meth:`tick`
        read, or ``poll`` from now."""
        times = [next_time(r.cron, now) for r in self._known]
        return min([now + self.poll, *times])

    async def run(self) -> None:
        """Fire schedules until cancelled; a store error is logged and tried again later."""
        while True:
            self._wake.clear()  # a wake() from here on is seen by the next wait
            try:
                await self.tick()
                wake = self.next_wake(self.clock())
            except Exception:  # the loop outlives an outage of the store
                logger.exception("The scheduler could not read or fire the schedules")
                wake = self.clock() + self.poll
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(0.0, wake - self.clock()))


def schedule_json(record: ScheduleRecord) -> dict[str, Any]:
    """A schedule as the HTTP API shows it (times in RFC 3339, and as Unix time without
    ``_at``, like every time of the API)."""
    return {
        "name": record.name,
        "workflow": record.workflow,
        "cron": record.cron,
        "fields": record.fields,
        "missed": record.missed,
        "created_at": rfc3339(record.created_at),
        "created": record.created_at,
    }


def schedule_links(store: Any, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The schedule each of ``run_ids`` was started by, as the API shows it (``{"name",
    "fire_at", "fire"}``: the time it fired for, RFC 3339 and Unix); runs not started by a
    schedule are left out."""
    if not run_ids or not isinstance(store, ScheduleStore):
        return {}
    return {
        f.run_id: {"name": f.schedule, "fire_at": rfc3339(f.fire_at), "fire": f.fire_at}
        for f in store.firings(run_ids=run_ids)
        if f.run_id is not None
    }


__all__ = [
    "ScheduleError",
    "Scheduler",
    "check_cron",
    "check_schedule",
    "firing_key",
    "latest_time",
    "next_time",
    "schedule_json",
    "schedule_links",
]
