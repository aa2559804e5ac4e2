"""A restart on the console's run page, in a real browser (Playwright driving Debian's Chromium).

The page follows a run whose server is killed (SIGKILL) while a step streams Progress events,
then started again on the same port; the page reconnects with ``Last-Event-ID``, and when the
StepRestarted arrives it drops the interrupted attempt's rows and shows a "restarted" marker.
"""

from __future__ import annotations

import socket

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect
from restart_stream import SERVE

from .browser import NEEDS_CHROMIUM, Console
from .sse import wait_status
from .test_server_restart import ServerProcess

pytestmark = NEEDS_CHROMIUM

N = 20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_console_drops_the_interrupted_attempts_output(browser, tmp_path, request, backend):
    """Killed mid-step and restarted: the timeline shows one "restarted" marker, then the
    re-run's N Progress rows; the interrupted attempt's rows are gone."""
    db = str(tmp_path / "runs.db")
    if backend == "postgres":
        db = request.getfixturevalue("postgres_url")
    # --quiet: nobody reads the servers' stderr, which access logs would fill until they block.
    options = (*SERVE, "--quiet", "--port", str(_free_port()), "--lease-seconds", "2")
    first = ServerProcess(db, None, True, *options)
    ui = Console(browser, first)  # type: ignore[arg-type]  # a server at first.url
    second = None
    try:
        run_id = first.client.post("/workflows/report/runs", json={"n": N, "pause": 0.1})
        run_id = run_id.json()["run_id"]
        page = ui.page
        page.goto(f"{ui.url}/#/runs/{run_id}")
        rows = page.locator("#timeline li[data-type=Progress]")
        expect(rows.nth(2)).to_be_attached()
        first.kill()
        second = ServerProcess(db, None, True, *options)
        assert wait_status(second.client, run_id, {"completed"}, timeout=60)
        try:
            page.locator("#timeline li.end").wait_for(timeout=30_000)
        except PlaywrightTimeoutError as exc:  # what the page saw, for the report
            shown = page.locator("body").inner_text()
            raise AssertionError(f"the page did not see the end:\n{shown}") from exc
        restart = page.locator("#timeline li.restart")
        expect(restart).to_have_count(1)
        expect(restart).to_contain_text("report runs again (attempt 2)")
        assert int(restart.get_attribute("data-dropped") or 0) >= 3
        expect(rows).to_have_count(N)
        seqs = [int(s) for s in rows.evaluate_all("rs => rs.map(r => r.dataset.seq)")]
        assert min(seqs) > int(restart.get_attribute("data-seq") or 0)
        assert ui.elsewhere == []
    finally:
        ui.context.close()
        first.kill()
        if second is not None:
            second.kill()
