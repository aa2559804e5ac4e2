"""The console's schedules page in a real browser (Debian's Chromium, offline): add, see its
runs link back to it, remove."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from . import flows
from .browser import NEEDS_CHROMIUM, serve_consoles

pytestmark = NEEDS_CHROMIUM


@pytest.fixture
def console(browser, tmp_path) -> Iterator[Any]:
    yield from serve_consoles(
        browser, tmp_path, lambda: {"typed": flows.TypedFlow(), "echo": flows.EchoFlow()}
    )


def test_add_a_schedule_follow_its_run_and_remove_it(console) -> None:
    """A refused cron shows the server's reason; a good schedule is listed, its runs name it
    on their page, and Remove takes it off the list."""
    ui = console()
    page = ui.page
    page.goto(ui.url + "/")
    page.click("text=Schedules")
    expect(page.locator("#schedule-form")).to_be_visible()
    expect(page.locator("text=No schedules yet")).to_be_visible()
    page.fill("#schedule-name", "tick")
    page.select_option("#schedule-workflow", "typed")
    page.fill("#schedule-cron", "every second")
    page.fill("#schedule-fields", '{"n": 2}')
    page.click("button[name=add]")
    refused = page.locator("#schedule-form .error")
    expect(refused).to_contain_text("The cron expression 'every second' is not valid")
    page.fill("#schedule-cron", "* * * * * *")
    page.click("button[name=add]")
    row = page.locator("#schedules tr[data-schedule=tick]")
    expect(row).to_contain_text("* * * * * *")
    expect(row).to_contain_text('{"n":2}')
    ui.shot("console-schedules.png")

    deadline = time.monotonic() + 30
    while True:
        runs = httpx.get(ui.url + "/runs").json()["runs"]
        fired = [r for r in runs if r["schedule"]]
        if fired or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert fired, "the schedule did not fire"
    page.goto(ui.url + "/#/runs/" + fired[0]["run_id"])
    link = page.locator("#run-schedule")
    expect(link).to_contain_text("tick (fired for ")
    expect(link).to_contain_text(" UTC)")
    link.locator("a").click()
    row = page.locator("#schedules tr[data-schedule=tick]")
    row.locator("button[name=remove]").click()
    expect(row).to_have_count(0)
    assert httpx.get(ui.url + "/schedules").json() == {"schedules": []}
    ui.check_offline()
