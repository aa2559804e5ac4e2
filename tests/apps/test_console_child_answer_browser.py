"""The console answers a child run's question from its parent's page (Playwright driving
Debian's Chromium, offline): the parent shows waiting with the child's prompt and an answer
form; the answer sent there reaches the child and the parent completes."""

from __future__ import annotations

import httpx
import pytest
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.core.checkpoints import SqliteCheckpointStore
from child_questions import Release
from playwright.sync_api import expect

from .browser import NEEDS_CHROMIUM, Console
from .sse import wait_status

pytestmark = NEEDS_CHROMIUM


@pytest.fixture
def asking(browser, tmp_path):
    """A durable server of Release, its console, and a run whose child asks: (page, console
    url, http client, the parent's run id)."""
    db = tmp_path / "runs.db"
    store = SqliteCheckpointStore(db)
    app = create_app({"release": Release()}, store=RunStore(db), checkpoints=store)
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url) as http:
        ui = Console(browser, server)
        try:
            run_id = http.post("/workflows/release/runs", json={"topic": "tides"}).json()["run_id"]
            wait_status(http, run_id, {"waiting"})
            yield ui.page, ui.url, http, run_id
            ui.check_offline()
        finally:
            ui.context.close()
    store.close()


def test_the_parents_page_answers_its_childs_question(asking):
    """parent page: waiting, the child's prompt, the form; the answer completes the run."""
    page, url, http, run_id = asking
    page.goto(f"{url}/#/runs/{run_id}")
    expect(page.locator("#answer-prompt")).to_have_text("approve tides?")
    page.fill("#answer-form input[name=response]", "ship it")
    page.click("button[name=answer]")
    expect(page.locator("#result")).to_contain_text("tides: ship it")
    assert wait_status(http, run_id, {"completed"})["result"] == "tides: ship it"


def test_the_runs_list_shows_a_parent_waiting_for_its_childs_answer(asking):
    """The runs list: the parent's row says waiting; the waiting filter keeps it, the
    running filter leaves it out."""
    page, url, _, run_id = asking
    page.goto(f"{url}/#/")
    row = page.locator(f'#runs tr[data-run-id="{run_id}"]')
    expect(row).to_have_attribute("data-status", "waiting")
    expect(row.locator("[data-status]")).to_have_text("waiting")
    page.select_option("#filter-status", "running")
    expect(row).to_have_count(0)
    page.select_option("#filter-status", "waiting")
    expect(row).to_have_attribute("data-status", "waiting")
