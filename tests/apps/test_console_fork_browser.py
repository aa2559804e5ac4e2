"""The console's forks in a real browser (Playwright driving Debian's Chromium, offline).

A step of a durable run offers "fork from here": the state at its checkpoint is shown in an
editable box, the fork starts with the edited state and opens its own page, which links its
parent, whose page links the fork back.
"""

from __future__ import annotations

import re

import httpx
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.core.checkpoints import SqliteCheckpointStore
from playwright.sync_api import expect

from .browser import NEEDS_CHROMIUM, Console
from .fork_flows import Essay
from .sse import wait_status

pytestmark = NEEDS_CHROMIUM


def test_fork_a_step_with_its_state_edited_and_follow_the_lineage(browser, tmp_path):
    """fork from here -> edit the state -> the fork completes with it; parent and fork link."""
    db = tmp_path / "runs.db"
    flow = Essay(timeout=30)
    store = SqliteCheckpointStore(db)
    app = create_app({"essay": flow}, store=RunStore(db), checkpoints=store)
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url) as http:
        ui = Console(browser, server)
        try:
            parent = http.post("/workflows/essay/runs", json={"tone": "dry"}).json()["run_id"]
            wait_status(http, parent, {"completed"})
            flow.ran.clear()
            page = ui.page
            page.goto(f"{ui.url}/#/runs/{parent}")
            page.locator("#run-status [data-status=completed]").wait_for()
            draft = page.locator("#steps tr").first
            expect(draft.locator("td").first).to_have_text("draft")
            draft.locator("button[name=fork-from-here]").click()
            editor = page.locator("#fork-state")
            expect(editor).to_have_value(re.compile(r'"tone": "dry"'))
            editor.fill('{"tone": "warm"}')
            page.locator("button[name=fork]").click()
            expect(page).not_to_have_url(re.compile(rf"{re.escape(parent)}$"))
            page.locator("#run-status [data-status=completed]").wait_for()
            expect(page.locator("#result")).to_contain_text("100 words, warm")
            assert flow.ran == ["publish"]  # the step before the checkpoint did not run again
            fork_id = page.locator("#run-id").inner_text()
            expect(page.locator("#parent-run")).to_contain_text(parent)
            page.locator("#parent-run a").click()
            expect(page.locator("#run-id")).to_have_text(parent)
            expect(page.locator("#fork-runs")).to_contain_text(fork_id)
            page.locator("#fork-runs a").click()
            expect(page.locator("#run-id")).to_have_text(fork_id)
            ui.check_offline()
        finally:
            ui.context.close()
    store.close()
