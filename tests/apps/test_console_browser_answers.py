"""The console's question and answer form in Chromium: built from what the run waits for.

The agent tool of issue 27 waits for ``HumanResponseEvent`` with ``requirements={"tool":
"transfer"}``: the form offers that type with the required value filled in, stays while a
wrong answer is refused, and goes once the step took the answer. A run that asks again gets a
new form for its new question.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.core.checkpoints import SqliteCheckpointStore
from playwright.sync_api import expect

from .browser import CHROMIUM, Console
from .sse import wait_status
from .waiting_flows import waiting_flows

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH"),
]


@pytest.fixture
def ui(browser, tmp_path) -> Iterator[Console]:  # noqa: F811 (the fixture above)
    db = tmp_path / "runs.db"
    app = create_app(waiting_flows(), store=RunStore(db), checkpoints=SqliteCheckpointStore(db))
    server = BackgroundServer(app).start()
    page = Console(browser, server)
    yield page
    page.context.close()
    server.stop()


def start_waiting(ui: Console, flow: str, **fields: Any) -> str:
    run_id = httpx.post(f"{ui.url}/workflows/{flow}/runs", json=fields).json()["run_id"]
    with httpx.Client(base_url=ui.url) as http:
        wait_status(http, run_id, {"waiting"})
    return str(run_id)


def test_the_agent_approval_form_fills_in_the_required_value_and_stays_until_taken(ui):
    """The form names the awaited type and value; a refused answer leaves it; the right one ends it."""
    run_id = start_waiting(ui, "agent", user_msg="send 30 to Ada")
    page = ui.page
    page.goto(f"{ui.url}/#/runs/{run_id}")
    expect(page.locator("#answer-prompt")).to_have_text("Transfer 30 EUR to Ada?")
    picker = page.locator("#answer-type option")
    expect(picker).to_have_text(['HumanResponseEvent with tool = "transfer" (step call_tool)'])
    assert page.locator("#answer-form select[name=tool]").input_value() == '"transfer"'

    # An answer from elsewhere that the step would not take is refused: the question stays.
    refused = httpx.post(
        f"{ui.url}/runs/{run_id}/events",
        json={"type": "HumanResponseEvent", "data": {"response": "yes"}},
    )
    assert refused.status_code == 422
    page.wait_for_timeout(1500)  # the page refreshes every second: two refreshes
    expect(page.locator("#run-status [data-status]")).to_have_text("waiting")
    expect(page.locator("#answer-form")).to_be_visible()
    ui.shot("console-approval.png")

    page.fill("#answer-form input[name=response]", "yes")
    page.click("button[name=answer]")
    expect(page.locator("#result")).to_contain_text("Done: Transferred 30 EUR to Ada.")
    expect(page.locator("#answer-form")).to_have_count(0)
    ui.check_offline()


def test_a_run_that_asks_again_gets_a_form_for_its_new_question(ui):
    """Own classes: an Approval form (ticket 7 fixed, approved a checkbox), then a Decision form."""
    run_id = start_waiting(ui, "custom")
    page = ui.page
    page.goto(f"{ui.url}/#/runs/{run_id}")
    expect(page.locator("#answer-prompt")).to_have_text("Approve ticket 7?")
    expect(page.locator("#answer-type option")).to_have_text(
        ["Approval with ticket = 7 (step review)"]
    )
    assert page.locator("#answer-form input[name=approved]").get_attribute("type") == "checkbox"
    page.check("#answer-form input[name=approved]")
    page.click("button[name=answer]")
    expect(page.locator("#answer-prompt")).to_have_text("Which one?")
    expect(page.locator("#answer-type option")).to_have_text(["Decision (step review)"])
    page.fill("#answer-form input[name=choice]", "b")
    page.click("button[name=answer]")
    expect(page.locator("#result")).to_have_text('"True b"')
    asks = page.locator("#timeline li.ask")
    expect(asks).to_have_count(2)
    assert re.search(r"ApprovalRequest", asks.first.inner_text())
    ui.check_offline()
