"""A queued run in the console, in a real browser (Debian's Chromium, offline): its status,
where it waits and why, and Cancel, which cancels it before it ever starts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from batonflow.core import RunLimits
from playwright.sync_api import expect

from . import flows
from .browser import NEEDS_CHROMIUM, serve_consoles
from .queued import started

pytestmark = NEEDS_CHROMIUM


@pytest.fixture
def console(browser, tmp_path) -> Iterator[Any]:
    yield from serve_consoles(
        browser, tmp_path, lambda: {"approval": flows.ApprovalFlow(timeout=None)}
    )


def test_a_queued_run_shows_why_it_waits_and_can_be_cancelled(console) -> None:
    """The run page says 'queued', its position and limit; Cancel makes it cancelled."""
    ui = console(limits={"approval": RunLimits(concurrency=1)})
    with httpx.Client(base_url=ui.url, timeout=20) as client:
        started(client, {"topic": "holds the slot"})
        queued = client.post("/workflows/approval/runs", json={"topic": "waits"}).json()
    page = ui.page
    page.goto(ui.url + "/#/runs/" + queued["run_id"])
    expect(page.locator("#run-status")).to_contain_text("queued")
    place = page.locator("#run-queue")
    expect(place).to_contain_text("position 1, waiting on the workflow's concurrency limit")
    ui.shot("console-queued.png")
    page.click("button[name=cancel]")
    expect(page.locator("#run-status")).to_contain_text("cancelled")
    expect(place).to_have_count(0)
