"""Schedules on a real PostgreSQL: replicas racing for a firing start its run exactly once."""

from __future__ import annotations

import time

import psycopg
import pytest
from batonflow.core.durable._schedules import ScheduleRecord
from batonflow.postgres import PostgresCheckpointStore
from firing_race import race_for_firings
from replicas import Replica
from replicas import executions as _executions


def test_three_stores_racing_claim_each_firing_once(postgres_url) -> None:
    """Nine threads on three stores (three connection pools) race for 30 firings: each time
    has exactly one claimant, and each claimant is told the truth."""
    stores = [PostgresCheckpointStore(postgres_url) for _ in range(3)]
    won = race_for_firings(stores, threads=9, firings=30, schedule="race")
    for s in stores:
        s.close()
    assert sorted(at for at, _ in won) == list(range(30))
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(
            "SELECT fire_at, claimant FROM schedule_firings WHERE schedule = 'race' ORDER BY 1"
        ).fetchall()
    assert rows == sorted(won)


@pytest.mark.slow
@pytest.mark.timeout(300)  # three servers starting on two cores can take a while
def test_three_replicas_start_one_run_per_firing(postgres_url, tmp_path) -> None:
    """A schedule firing every second, three ``batonflow serve`` replicas waking at the same
    times: each firing is claimed once and starts one run, which runs once."""
    log = tmp_path / "steps.log"
    with PostgresCheckpointStore(postgres_url) as store:
        store.add_schedule(
            ScheduleRecord(
                "every-second",
                "steps",
                "* * * * * *",
                {"log": str(log), "pause": 0},
                "skip",
                time.time(),
            )
        )
    replicas = [Replica(f"r{i}", postgres_url, tmp_path, 5.0) for i in range(3)]
    try:
        deadline = time.monotonic() + 120
        while True:
            with psycopg.connect(postgres_url) as conn:
                fired = conn.execute(
                    "SELECT count(*) FROM schedule_firings WHERE run_id IS NOT NULL"
                ).fetchone()[0]
            if fired >= 8 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert fired >= 8, [r.tail() for r in replicas]
    finally:
        for replica in replicas:
            replica.stop()
    with psycopg.connect(postgres_url) as conn:
        firings = conn.execute(
            "SELECT fire_at, claimant, run_id FROM schedule_firings "
            "WHERE schedule = 'every-second' ORDER BY fire_at"
        ).fetchall()
        runs = {r for (r,) in conn.execute("SELECT run_id FROM checkpoint_runs")}
    linked = [run for _, _, run in firings if run is not None]
    # One run per firing (a firing claimed as a replica stopped may have none), no run
    # without a firing, and no two firings on the same second.
    assert len(linked) == len(set(linked)) >= 8
    assert runs == set(linked)
    assert len({at for at, _, _ in firings}) == len(firings)
    # Each run's first step ran once, on one replica.
    works = {run: pids for (run, step), pids in _executions(log).items() if step == "work"}
    assert set(works) <= runs
    assert all(len(pids) == 1 for pids in works.values())
