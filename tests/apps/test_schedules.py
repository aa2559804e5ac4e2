"""The scheduler: what is due when (cron in UTC), the missed policies, checks of what users send."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from batonflow.apps.schedules import ScheduleError, Scheduler, check_schedule
from batonflow.core import DuplicateStartError, WorkflowCheckpointer
from batonflow.core.checkpoints import SqliteCheckpointStore
from batonflow.core.stores import open_store

from . import flows

FLOWS = {"echo": flows.EchoFlow(), "typed": flows.TypedFlow()}
#: 2026-01-01 03:00:00 UTC, a firing time of "*/5 * * * *".
T0 = int(dt.datetime(2026, 1, 1, 3, 0, tzinfo=dt.UTC).timestamp())


class Clock:
    """A settable clock (seconds since the epoch)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _scheduler(
    store: Any, clock: Callable[[], float], started: list[tuple[str, dict[str, Any]]]
) -> Scheduler:
    def start(name: str, event: Any, fields: dict[str, Any], key: str) -> str:
        started.append((name, fields))
        return f"run-{len(started)}"

    return Scheduler(store, FLOWS, start, clock=clock)


def _keyed_scheduler(
    store: Any, clock: Callable[[], float], cptr: WorkflowCheckpointer
) -> Scheduler:
    """A scheduler starting runs as the server does: through a checkpointer, with the firing's
    idempotency key (a key that started a run answers with that run)."""

    async def start(name: str, event: Any, fields: dict[str, Any], key: str) -> str:
        try:
            return str(cptr.start(start_event=event, idempotency_key=key).run_id)
        except DuplicateStartError as exc:
            return exc.run_id

    return Scheduler(store, FLOWS, start, clock=clock)


@pytest.fixture
def store(tmp_path: Path):
    with SqliteCheckpointStore(tmp_path / "runs.db") as s:
        yield s


def _add(store: Any, missed: str, created: float) -> None:
    record = check_schedule(
        FLOWS,
        name="five",
        workflow="typed",
        cron="*/5 * * * *",
        fields={"n": 2},
        missed=missed,
        now=created,
    )
    store.add_schedule(record)


async def test_a_schedule_fires_at_each_cron_time_once(store) -> None:
    """Due at 03:05 UTC, fired once whatever the number of ticks, linked to its run."""
    _add(store, "skip", T0 + 10)
    clock = Clock(T0 + 20)
    started: list[Any] = []
    scheduler = _scheduler(store, clock, started)
    assert await scheduler.tick() == []  # 03:00 was before the schedule existed
    clock.now = T0 + 300.001
    assert await scheduler.tick() == ["run-1"]
    assert await scheduler.tick() == []
    assert started == [("typed", {"n": 2})]
    assert [(f.fire_at, f.run_id) for f in store.firings(schedule="five")] == [(T0 + 300, "run-1")]


async def test_the_scheduler_wakes_at_the_next_firing_time(store) -> None:
    """next_wake is the next cron time when it comes before the poll interval runs out."""
    _add(store, "skip", T0)
    started: list[Any] = []
    scheduler = _scheduler(store, Clock(T0 + 298), started)
    await scheduler.tick()
    assert scheduler.next_wake(T0 + 298) == T0 + 300
    assert scheduler.next_wake(T0 + 10) == T0 + 10 + scheduler.poll


@pytest.mark.parametrize(
    ("missed", "fired"),
    [
        pytest.param("skip", [], id="skip-drops-missed-firings"),
        pytest.param("once", [T0 + 3600], id="once-runs-the-latest-missed-firing"),
    ],
)
async def test_firings_missed_in_an_outage_follow_the_policy(store, missed, fired) -> None:
    """After an hour with no server, skip fires nothing late and once fires the latest time;
    both then fire the next time on time."""
    _add(store, missed, T0 - 10)
    clock = Clock(T0 + 3600 + 100)  # the server comes back at 04:01:40
    started: list[Any] = []
    scheduler = _scheduler(store, clock, started)
    await scheduler.tick()
    await scheduler.tick()
    assert [f.fire_at for f in store.firings(schedule="five")] == fired
    clock.now = T0 + 3900
    await scheduler.tick()
    assert [f.fire_at for f in store.firings(schedule="five")] == [*fired, T0 + 3900]
    assert len(started) == len(fired) + 1


async def test_two_schedulers_on_one_store_start_one_run_per_firing(tmp_path: Path) -> None:
    """Two replicas' schedulers, each with its own store on one file, fire each time once."""
    path = tmp_path / "runs.db"
    with SqliteCheckpointStore(path) as a, SqliteCheckpointStore(path) as b:
        _add(a, "skip", T0 - 10)
        clock = Clock(T0 - 5)
        started: list[Any] = []
        one, two = _scheduler(a, clock, started), _scheduler(b, clock, started)
        for at in (T0, T0 + 300, T0 + 600):
            clock.now = at + 0.5
            assert len(await one.tick()) + len(await two.tick()) == 1
        assert len(started) == 3


@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request, tmp_path: Path):
    """A SQLite store, or one on a real PostgreSQL."""
    where = (
        request.getfixturevalue("postgres_url")
        if request.param == "postgres"
        else str(tmp_path / "runs.db")
    )
    with open_store(where) as s:
        yield s


async def test_a_firing_whose_claimant_died_before_starting_it_is_started_by_another(
    any_store,
) -> None:
    """A replica claimed 03:05 and died before it started the run: the next replica to look
    starts it (with the firing's key) and links it; it is not started again after."""
    _add(any_store, "skip", T0 - 10)
    clock = Clock(T0 + 300.5)
    assert any_store.claim_firing("five", T0 + 300, "a-replica-that-died")
    cptr = WorkflowCheckpointer(flows.TypedFlow(), store=any_store)
    taker = _keyed_scheduler(any_store, clock, cptr)
    taker.started_at = T0  # it was up before 03:05
    assert await taker.tick() == []  # not its own claim: it carries it, it did not fire it
    runs = any_store.runs()
    assert len(runs) == 1 and runs[0].idempotency_key == f"schedule:five@{T0 + 300}"
    assert any_store.firing("five", T0 + 300).run_id == runs[0].run_id
    await taker.tick()
    assert len(any_store.runs()) == 1


async def test_a_stalled_claimant_and_the_replica_carrying_its_firing_start_one_run(
    tmp_path: Path,
) -> None:
    """The claimant stalls between its claim and its start while another replica starts the
    firing; when the claimant goes on, its start finds the run by the key: one run, linked."""
    path = tmp_path / "runs.db"
    with SqliteCheckpointStore(path) as a, SqliteCheckpointStore(path) as b:
        _add(a, "skip", T0 - 10)
        go_on, stalled = asyncio.Event(), asyncio.Event()
        clock = Clock(T0 - 5)  # both replicas were up before 03:05
        carried = _keyed_scheduler(a, clock, WorkflowCheckpointer(flows.TypedFlow(), store=a))
        other = _keyed_scheduler(b, clock, WorkflowCheckpointer(flows.TypedFlow(), store=b))
        clock.now = T0 + 300.5
        stalling = carried._start

        async def stall_then_start(*args: Any) -> str:
            stalled.set()
            await go_on.wait()
            return await stalling(*args)

        carried._start = stall_then_start
        first = asyncio.create_task(carried.tick())
        await asyncio.wait_for(stalled.wait(), 10)
        assert await other.tick() == []
        go_on.set()
        assert len(await asyncio.wait_for(first, 10)) == 1
        runs = a.runs()
        assert len(runs) == 1
        assert [(f.fire_at, f.run_id) for f in a.firings(schedule="five")] == [
            (T0 + 300, runs[0].run_id)
        ]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        pytest.param(
            {"cron": "every five minutes"},
            r"The cron expression 'every five minutes' is not valid; write five fields",
            id="bad-cron",
        ),
        pytest.param({"cron": "61 * * * *"}, r"'61 \* \* \* \*' is not valid", id="minute-61"),
        pytest.param(
            {"workflow": "nope"},
            r"Workflow 'nope' is not served here; served: echo, typed",
            id="unknown-workflow",
        ),
        pytest.param(
            {"fields": {"n": "many"}},
            r"Invalid field 'n' for workflow 'typed': .*; fix the schedule's fields",
            id="bad-field",
        ),
        pytest.param({"name": "a b"}, r"The schedule name 'a b' is not valid", id="bad-name"),
        pytest.param(
            {"missed": "all"}, r"The missed policy 'all' is not known; use 'skip'", id="bad-missed"
        ),
    ],
)
def test_bad_schedules_get_clear_errors(given: dict[str, Any], message: str) -> None:
    """Each bad part of a schedule is named, with what to write instead."""
    args: dict[str, Any] = {
        "name": "five",
        "workflow": "typed",
        "cron": "*/5 * * * *",
        "fields": {"n": 2},
        **given,
    }
    with pytest.raises(ScheduleError, match=message):
        check_schedule(FLOWS, **args)


async def test_the_loop_sees_a_schedule_another_process_added(store) -> None:
    """A schedule written to the store by someone else (no wake()) is fired once the loop
    looks again, within its poll interval, at its next time."""
    started: list[Any] = []
    scheduler = _scheduler(store, time.time, started)
    scheduler.poll = 0.2
    loop = asyncio.create_task(scheduler.run())
    try:
        await asyncio.sleep(0.3)  # the loop has looked and found nothing
        record = check_schedule(
            FLOWS, name="late", workflow="echo", cron="* * * * * *", fields={}, now=time.time()
        )
        store.add_schedule(record)
        deadline = time.monotonic() + 10
        while not started:
            assert time.monotonic() < deadline, "the schedule was never fired"
            await asyncio.sleep(0.05)
    finally:
        loop.cancel()
    assert started[0] == ("echo", {})
