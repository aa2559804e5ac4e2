"""The console's child runs in a real browser (Playwright driving Debian's Chromium, offline).

In the runs list a child run's row links its parent and the parent's row links the child;
the child's page names its parent and step, the parent's page lists its child runs.
"""

from __future__ import annotations

import httpx
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.core.checkpoints import SqliteCheckpointStore
from playwright.sync_api import expect

from .browser import NEEDS_CHROMIUM, Console
from .child_flows import Book, Outline
from .sse import wait_status

pytestmark = NEEDS_CHROMIUM


def test_a_child_run_and_its_parent_link_each_other_in_the_list_and_on_their_pages(
    browser, tmp_path
):
    """list row: child -> parent -> child; run pages: parent -> child -> parent."""
    db = tmp_path / "runs.db"
    store = SqliteCheckpointStore(db)
    flow = Book(Outline(timeout=None), timeout=None)
    app = create_app({"book": flow}, store=RunStore(db), checkpoints=store)
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url) as http:
        ui = Console(browser, server)
        try:
            parent = http.post("/workflows/book/runs", json={"topic": "tides"}).json()["run_id"]
            wait_status(http, parent, {"completed"})
            child = http.get(f"/runs/{parent}/lineage").json()["children"][0]["run_id"]
            page = ui.page
            page.goto(f"{ui.url}/#/")
            child_row = page.locator(f"#runs tr[data-run-id='{child}']")
            expect(child_row.locator(".parent-link")).to_contain_text("child of")
            parent_row = page.locator(f"#runs tr[data-run-id='{parent}']")
            expect(parent_row.locator(".child-links")).to_contain_text(child[:12])
            child_row.locator(".parent-link a").click()
            expect(page.locator("#run-id")).to_have_text(parent)
            expect(page.locator("#child-runs")).to_contain_text(child)
            expect(page.locator("#child-runs")).to_contain_text("Outline from plan")
            page.locator("#child-runs a").click()
            expect(page.locator("#run-id")).to_have_text(child)
            expect(page.locator("#parent-run")).to_contain_text("child run of")
            expect(page.locator("#parent-run")).to_contain_text("its step plan")
            page.locator("#parent-run a").click()
            expect(page.locator("#run-id")).to_have_text(parent)
            page.goto(f"{ui.url}/#/")
            page.locator(f"#runs tr[data-run-id='{parent}'] .child-links a").click()
            expect(page.locator("#run-id")).to_have_text(child)
            ui.check_offline()
        finally:
            ui.context.close()
    store.close()
