"""``batonflow schedule add | list | remove`` and the clients' schedule calls, on a real server."""

from __future__ import annotations

import json

from batonflow.apps.cli import app
from batonflow.client import AsyncClient
from typer.testing import CliRunner

runner = CliRunner()


def test_schedule_add_list_remove_through_the_cli(start_server) -> None:
    """add stores what --cron, --workflow, --set and --missed say; list shows it; remove
    forgets it."""
    url, client = start_server()
    added = runner.invoke(
        app,
        [
            "schedule",
            "add",
            "nightly",
            "--cron",
            "0 3 * * *",
            "--workflow",
            "typed",
            "--set",
            "n=3",
            "--set",
            "label=night",
            "--missed",
            "once",
            "--server",
            url,
        ],
    )
    assert added.exit_code == 0, added.output
    assert "schedule nightly: typed at '0 3 * * *' (UTC)" in added.output
    listed = runner.invoke(app, ["schedule", "list", "--server", url, "--json"])
    (schedule,) = json.loads(listed.output)
    assert (schedule["fields"], schedule["missed"]) == ({"n": 3, "label": "night"}, "once")
    table = runner.invoke(app, ["schedule", "list", "--server", url])
    assert "nightly" in table.output and "0 3 * * *" in table.output
    removed = runner.invoke(app, ["schedule", "remove", "nightly", "--server", url])
    assert removed.exit_code == 0 and "schedule nightly removed" in removed.output
    assert client.get("/schedules").json() == {"schedules": []}


def test_schedule_add_errors_name_the_problem(start_server, monkeypatch) -> None:
    """A bad cron, an unknown workflow, a bad --set and no server each end with what to do."""
    monkeypatch.delenv("BATONFLOW_SERVER", raising=False)
    url, _ = start_server()
    base = ["schedule", "add", "x", "--server", url]
    cases = [
        (["--cron", "*/5 * *", "--workflow", "echo"], "The cron expression '*/5 * *' is not"),
        (["--cron", "*/5 * * * *", "--workflow", "nope"], "Workflow 'nope' is not served here"),
        (["--cron", "*/5 * * * *", "--workflow", "echo", "--set", "oops"], "--set expects"),
    ]
    for extra, message in cases:
        result = runner.invoke(app, [*base, *extra])
        assert result.exit_code == 1 and message in result.output, result.output
    result = runner.invoke(app, ["schedule", "list"])
    assert result.exit_code == 1
    assert "pass --server URL" in result.output


async def test_the_async_client_adds_lists_and_removes_schedules(start_server) -> None:
    """AsyncClient.add_schedule, schedules and remove_schedule speak the same API."""
    url, _ = start_server()
    async with AsyncClient(url) as client:
        added = await client.add_schedule("hourly", cron="0 * * * *", workflow="echo")
        assert added["missed"] == "skip"
        assert [s["name"] for s in await client.schedules()] == ["hourly"]
        assert (await client.remove_schedule("hourly"))["name"] == "hourly"
        assert await client.schedules() == []
