"""A page on another port of this machine cannot change a token-less server, in Chromium.

The page is served by a plain HTTP server on another port (a dev server, a notebook) and
sends what any page may send without asking: ``fetch`` POSTs in ``no-cors`` mode, with no body
or a JSON one, and a form submission. None of them cancels, answers or starts a run. The
console's own requests (same origin) are covered by ``test_console_browser.py``.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app

from . import flows
from .browser import CHROMIUM, FLAGS
from .sse import wait_status

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="chromium is not on PATH (apt-get install chromium; .ci/run installs it)",
    ),
]

PAGE = b"""<!doctype html><meta charset="utf-8"><title>another app</title>
<form id="f" method="post" target="sink"></form><iframe name="sink"></iframe>
<script>
async function attack(base, runId) {
  const sent = [];
  for (const [path, body] of [
    [`/runs/${runId}/cancel`, undefined],
    [`/runs/${runId}/events`, JSON.stringify({type: "HumanResponseEvent", data: {response: "y"}})],
    ["/workflows/echo/runs", undefined],
    ["/workflows/echo/runs", "{}"],
  ]) {
    try {
      await fetch(base + path, {method: "POST", mode: "no-cors", body});
      sent.push(path);
    } catch (e) { sent.push("failed " + path + ": " + e); }
  }
  return sent;
}
function submitForm(action) {
  const form = document.getElementById("f");
  form.action = action;
  form.submit();
}
</script>"""


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def other_app() -> Iterator[int]:
    """A page server on another port of 127.0.0.1; yields its port."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield browser
        browser.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_page_on_another_port_cannot_cancel_answer_or_start_runs(
    chromium, other_app, tmp_path, host
):
    """fetch no-cors POSTs and a form post from another port leave the runs as they were."""
    app = create_app(
        {"approval": flows.ApprovalFlow(timeout=None), "echo": flows.EchoFlow(timeout=10)},
        store=RunStore(tmp_path / "runs.db"),
    )
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=20) as c:
        run_id = c.post("/workflows/approval/runs", json={}).json()["run_id"]
        wait_status(c, run_id, {"waiting"})
        context = chromium.new_context()
        page = context.new_page()
        seen: list[tuple[str, int]] = []
        page.on("response", lambda r: seen.append((r.url, r.status)))
        page.goto(f"http://{host}:{other_app}/")
        base = server.url.replace("127.0.0.1", host)
        sent = page.evaluate("([base, runId]) => attack(base, runId)", [base, run_id])
        assert len(sent) == 4 and not any(s.startswith("failed") for s in sent), sent
        with page.expect_response(f"{base}/runs/{run_id}/cancel"):
            page.evaluate("a => submitForm(a)", f"{base}/runs/{run_id}/cancel")
        context.close()

        posts = [status for url, status in seen if url.startswith(base)]
        assert posts == [403] * 5, seen
        assert c.get(f"/runs/{run_id}").json()["status"] == "waiting"
        assert [r["run_id"] for r in c.get("/runs").json()["runs"]] == [run_id]
