"""The schedules API on a real server: add, list, remove, and runs that link to their firing."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from batonflow.apps.run_store import RunStore
from batonflow.client import Client


def _wait_for_runs(client, schedule: str, count: int, deadline: float = 30.0) -> list[dict]:
    end = time.monotonic() + deadline
    while True:
        runs = [
            r
            for r in client.get("/runs").json()["runs"]
            if (r["schedule"] or {}).get("name") == schedule
        ]
        if len(runs) >= count or time.monotonic() > end:
            return runs
        time.sleep(0.05)


def test_a_schedule_added_over_http_starts_runs_linked_to_it(start_server) -> None:
    """POST /schedules stores it; the scheduler fires at its times (here every second) and
    each run's record names the schedule and the time it fired for."""
    url, client = start_server()
    body = {"name": "tick", "cron": "* * * * * *", "workflow": "typed", "fields": {"n": 4}}
    added = client.post("/schedules", json=body)
    assert added.status_code == 201, added.text
    assert added.json()["missed"] == "skip"
    assert [s["name"] for s in client.get("/schedules").json()["schedules"]] == ["tick"]
    runs = _wait_for_runs(client, "tick", 2)
    assert len(runs) >= 2
    one = client.get(f"/runs/{runs[0]['run_id']}").json()
    assert one["start"] == {"n": 4} and one["schedule"]["name"] == "tick"
    fire = one["schedule"]["fire"]
    assert isinstance(fire, int)
    assert datetime.fromisoformat(one["schedule"]["fire_at"]).timestamp() == fire
    assert len({r["schedule"]["fire_at"] for r in runs}) == len(runs)
    with Client(url) as sync:
        assert sync.get(one["run_id"]).schedule == one["schedule"]
    removed = client.delete("/schedules/tick")
    assert removed.status_code == 200 and removed.json()["name"] == "tick"
    assert client.get("/schedules").json() == {"schedules": []}
    # A run started by hand links to no schedule.
    plain = client.post("/workflows/echo/runs", json={}).json()
    assert client.get(f"/runs/{plain['run_id']}").json()["schedule"] is None


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        pytest.param(
            {"name": "x", "cron": "*/5 * * *", "workflow": "echo"},
            422,
            "The cron expression '*/5 * * *' is not valid",
            id="bad-cron",
        ),
        pytest.param(
            {"name": "x", "cron": "*/5 * * * *", "workflow": "nope"},
            422,
            "Workflow 'nope' is not served here",
            id="unknown-workflow",
        ),
        pytest.param(
            {"name": "x", "cron": "*/5 * * * *", "workflow": "typed", "fields": {"n": "a"}},
            422,
            "Invalid field 'n' for workflow 'typed'",
            id="bad-field",
        ),
        pytest.param(
            {"name": "x", "workflow": "echo"}, 422, "The schedule needs cron", id="no-cron"
        ),
        pytest.param(
            {"name": "taken", "cron": "0 * * * *", "workflow": "echo"},
            409,
            "A schedule named 'taken' exists already",
            id="taken-name",
        ),
    ],
)
def test_bad_schedules_are_refused_with_the_reason(start_server, body, status, message) -> None:
    """A bad cron, workflow, field, a missing part or a taken name: nothing more is stored."""
    _, client = start_server()
    taken = {"name": "taken", "cron": "0 3 * * *", "workflow": "echo"}
    assert client.post("/schedules", json=taken).status_code == 201
    answer = client.post("/schedules", json=body)
    assert answer.status_code == status
    assert message in answer.json()["detail"]
    assert [s["name"] for s in client.get("/schedules").json()["schedules"]] == ["taken"]


def test_removing_an_unknown_schedule_is_a_404(client) -> None:
    """DELETE of a name never added says so and where the list is."""
    answer = client.delete("/schedules/nope")
    assert answer.status_code == 404
    assert answer.json()["detail"] == (
        "Schedule 'nope' does not exist; GET /schedules lists the schedules."
    )


def test_schedules_are_kept_in_the_run_store_file(start_server, tmp_path) -> None:
    """Schedules live in the run store: another server started on the same file (as after a
    restart) lists them."""
    _, first = start_server(store=RunStore(tmp_path / "kept.db"))
    body = {"name": "kept", "cron": "0 3 * * *", "workflow": "echo", "missed": "once"}
    assert first.post("/schedules", json=body).status_code == 201
    _, second = start_server(store=RunStore(tmp_path / "kept.db"))
    (kept,) = second.get("/schedules").json()["schedules"]
    assert (kept["name"], kept["cron"], kept["missed"]) == ("kept", "0 3 * * *", "once")


def test_a_firing_started_by_a_replica_that_died_before_linking_it_runs_once(
    start_server, tmp_path
) -> None:
    """A replica claimed this year's firing, started its run (with the firing's key) and died
    before linking it: the next server links that run to the firing and starts no other."""
    import asyncio

    from batonflow.apps.schedules import firing_key
    from batonflow.core import WorkflowCheckpointer
    from batonflow.core.checkpoints import RunInfo, SqliteCheckpointStore
    from batonflow.core.durable._schedules import ScheduleRecord

    from .flows import Numbers, TypedFlow

    record = ScheduleRecord("yearly", "typed", "0 0 1 1 *", {"n": 3}, "once", 0.0)
    at = int(datetime(datetime.now(UTC).year, 1, 1, tzinfo=UTC).timestamp())
    with SqliteCheckpointStore(tmp_path / "runs.db") as store:
        store.add_schedule(record)
        assert store.claim_firing("yearly", at, "a-replica-that-died")
        cptr = WorkflowCheckpointer(TypedFlow(), store=store)
        info = RunInfo({"n": 3}, None, owner="server", name="typed")

        async def run_it() -> tuple[str, object]:
            handler = cptr.start(
                start_event=Numbers(n=3), info=info, idempotency_key=firing_key(record, at)
            )
            return handler.run_id, await handler

        run_id, result = asyncio.run(run_it())
        assert result == {"label": "x", "double": 6}
    _, client = start_server()
    runs = _wait_for_runs(client, "yearly", 1)
    assert [r["run_id"] for r in runs] == [run_id]
    time.sleep(0.5)  # a second start would have been recorded by now
    assert [r["run_id"] for r in client.get("/runs").json()["runs"]] == [run_id]
