"""The run console and the API docs in a real browser: Playwright driving Debian's Chromium.

Every page is opened with the network cut off: any request that is not to the test server is
aborted and recorded, and each test checks there was none.

Set ``BATONFLOW_CONSOLE_SCREENSHOTS=docs/img`` to also write the screenshots used by
docs/server.md (the browser and the pages are ``browser.py``'s).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from batonflow.apps.run_store import RunStore
from batonflow.core import (
    Context,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    step,
)
from playwright.sync_api import expect
from pydantic import Field

from . import flows
from .browser import NEEDS_CHROMIUM, serve_consoles

pytestmark = NEEDS_CHROMIUM


class ReviewStart(StartEvent):
    """What to review, and in how many drafting rounds."""

    topic: str
    rounds: int = Field(3, ge=1, le=20, description="Drafting rounds before asking.")


class Drafted(Event):
    round: int


class ReviewFlow(Workflow):
    """Drafts in rounds (streaming progress), then asks a human whether to publish."""

    @step
    async def draft(self, ctx: Context, ev: ReviewStart) -> InputRequiredEvent:
        await ctx.store.set("topic", ev.topic)
        for i in range(1, ev.rounds + 1):
            await asyncio.sleep(0.15)
            ctx.write_event_to_stream(Drafted(round=i))
            await ctx.store.set("rounds_done", i)
        return InputRequiredEvent(prefix=f"Publish the {ev.topic} draft?")

    @step
    async def publish(self, ctx: Context, ev: HumanResponseEvent) -> StopEvent:
        return StopEvent(result=f"{await ctx.store.get('topic')}: {ev.response}")


def console_flows() -> dict[str, Any]:
    return {
        "review": ReviewFlow(timeout=None),
        "ticks": flows.TicksFlow(timeout=60),
        "sleepy": flows.SleepyFlow(timeout=None),
        "guess": flows.GuessFlow(timeout=None),
        "flaky": flows.FlakyFlow(timeout=None),
    }


@pytest.fixture
def console(browser, tmp_path) -> Iterator[Any]:
    yield from serve_consoles(browser, tmp_path, console_flows)


def timeline_seqs(page: Any) -> list[int]:
    return [
        int(s) for s in page.locator("#timeline li").evaluate_all("l => l.map(e => e.dataset.seq)")
    ]


def test_start_a_run_watch_it_answer_it_and_see_it_complete(console):
    """From the form to the result: events arrive live, the answer box finishes the run."""
    ui = console()
    page = ui.page
    page.goto(ui.url + "/")
    page.locator("[data-workflow=review] >> text=Start a run").click()
    form = page.locator("#start-form")
    # One field per start-event field, from its JSON schema (rendered once it is fetched).
    expect(form.locator("label")).to_have_count(2)
    assert form.locator("label").evaluate_all("l => l.map(e => e.htmlFor)") == [
        "start-topic",
        "start-rounds",
    ]
    assert form.locator("label .hint").all_inner_texts() == ["string, required", "integer"]
    assert page.locator("#start-rounds").get_attribute("type") == "number"
    assert page.locator("#start-rounds").input_value() == "3"  # the field's default
    page.fill("#start-topic", "release notes")
    page.fill("#start-rounds", "0")
    page.click("button[name=start]")
    refused = page.locator("#start-form .error")
    refused.wait_for()
    assert "Invalid field 'rounds'" in refused.inner_text()  # the server's 422, shown
    ui.shot("console-start.png")
    page.fill("#start-rounds", "4")
    page.click("button[name=start]")

    page.wait_for_url(re.compile(r"#/runs/[0-9a-f]+$"))
    run_id = page.url.rsplit("/", 1)[1]
    first = page.locator("#timeline li[data-type=Drafted]").first
    first.wait_for()
    # The first draft event came over the live stream (on a loaded machine the question may
    # already follow it, so the stream's state says it, not the absence of the question).
    assert page.locator("#stream-state").inner_text() == "live"

    prompt = page.locator("#answer-prompt")
    prompt.wait_for()
    expect(prompt).to_have_text("Publish the release notes draft?")
    # Retrying assertions: the status and the timeline may render a moment after the prompt.
    expect(page.locator("#run-status [data-status]")).to_have_text("waiting")
    expect(page.locator("#timeline li[data-type=Drafted]")).to_have_count(4)
    expect(page.locator("#state")).to_contain_text('"rounds_done": 4')
    ui.shot("console-run-waiting.png")

    page.fill("#answer-form input[name=response]", "yes, ship it")
    page.click("button[name=answer]")
    result = page.locator("#result")
    expect(result).to_have_text('"release notes: yes, ship it"')
    expect(page.locator("#timeline li.end")).to_have_text(re.compile(r"end · completed$"))
    expect(page.locator("#stream-state")).to_have_text("ended")
    assert timeline_seqs(page) == list(range(1, 8))  # 4 drafts, the ask, StopEvent, end
    expect(page.locator("#steps tr td:first-child")).to_have_text(["draft", "publish"])
    drawing = page.locator("iframe.drawing").get_attribute("srcdoc") or ""
    assert "Recorded run" in drawing and "publish" in drawing
    ui.shot("console-run-completed.png")

    # A few more runs, so the list has something to filter.
    httpx.post(f"{ui.url}/workflows/ticks/runs?wait=true", json={"count": 2, "delay": 0})
    httpx.post(f"{ui.url}/workflows/sleepy/runs", json={"seconds": 60})
    httpx.post(f"{ui.url}/workflows/guess/runs", json={})
    page.goto(ui.url + "/#/")
    row = page.locator(f"#runs tr[data-run-id='{run_id}']")
    expect(row).to_have_attribute("data-status", "completed")
    expect(page.locator("#runs tr")).to_have_count(4)
    ui.shot("console-home.png")
    page.select_option("#filter-status", "waiting")
    row.wait_for(state="detached")
    page.select_option("#filter-status", "completed")
    row.wait_for()
    expect(page.locator("#runs tr")).to_have_count(2)  # review and ticks
    assert httpx.get(f"{ui.url}/runs/{run_id}").json()["result"] == "release notes: yes, ship it"
    ui.check_offline()


def test_a_dropped_stream_resumes_from_the_last_event_id(console):
    """After the connection drops, the page reconnects with Last-Event-ID: nothing lost or twice."""
    ui = console()
    page = ui.page
    run_id = httpx.post(f"{ui.url}/workflows/ticks/runs", json={"count": 25, "delay": 0.06}).json()[
        "run_id"
    ]
    page.goto(f"{ui.url}/#/runs/{run_id}")
    page.locator("#timeline li[data-seq='3']").wait_for()
    page.evaluate("window.batonflowConsole.dropStream()")
    page.locator("#timeline li.end").wait_for()
    assert timeline_seqs(page) == list(range(1, 28))  # 25 ticks, StopEvent, end
    streams = [r for r in ui.requests if r.url.endswith(f"/runs/{run_id}/events")]
    assert len(streams) == 2
    assert "last-event-id" not in streams[0].headers
    resumed_after = int(streams[1].headers["last-event-id"])
    assert resumed_after >= 3
    assert page.locator("#stream-state").get_attribute("data-connections") == "2"
    ui.check_offline()


def test_the_token_is_asked_for_kept_in_the_tab_and_sent(console):
    """A server with a token: the page asks, refuses a wrong one, then sends the bearer."""
    ui = console(token="s3cret")
    page = ui.page
    page.goto(ui.url + "/")
    page.locator("#token-form").wait_for()
    assert page.locator("#app").is_hidden()
    page.fill("#token-input", "wrong")
    page.click("#token-entry button")
    error = page.locator("#token-error")
    error.wait_for()
    assert "refused" in error.inner_text()
    page.fill("#token-input", "s3cret")
    page.click("#token-entry button")
    page.locator("[data-workflow=review]").wait_for()
    assert page.evaluate("sessionStorage.getItem('batonflow.token')") == "s3cret"
    api_calls = [r for r in ui.requests if "/workflows" in r.url or "/runs" in r.url]
    assert api_calls and api_calls[-1].headers.get("authorization") == "Bearer s3cret"
    page.reload()
    page.locator("[data-workflow=review]").wait_for()  # kept for the tab: not asked again
    assert page.locator("#token-form").is_hidden()
    ui.check_offline()


def test_cancel_a_run_from_its_page(console):
    """The Cancel button cancels a running run and the page shows it."""
    ui = console()
    page = ui.page
    run_id = httpx.post(f"{ui.url}/workflows/sleepy/runs", json={"seconds": 60}).json()["run_id"]
    page.goto(f"{ui.url}/#/runs/{run_id}")
    page.locator("button[name=cancel]:not([disabled])").click()
    page.locator("#run-status [data-status=cancelled]").wait_for()
    expect(page.locator("#error")).to_have_text("The run was cancelled.")
    assert page.locator("button[name=cancel]").is_disabled()
    # A cancelled run is not resumed (only interrupted or failed ones are).
    assert page.locator("button[name=resume]").is_disabled()
    ui.check_offline()


def test_a_typed_answer_is_sent_with_its_fields(console):
    """For an outside event with typed fields, the answer box has those fields."""
    ui = console()
    page = ui.page
    run_id = httpx.post(f"{ui.url}/workflows/guess/runs", json={}).json()["run_id"]
    page.goto(f"{ui.url}/#/runs/{run_id}")
    page.locator("#answer-form").wait_for()
    assert page.locator("#answer-type").input_value() == "Guess"
    page.fill("#answer-form input[name=value]", "21")
    page.click("button[name=answer]")
    expect(page.locator("#result")).to_have_text("42")
    ui.check_offline()


@pytest.mark.parametrize("token", [None, "s3cret"], ids=["open", "token"])
def test_api_docs_render_offline(console, token):
    """Swagger UI and ReDoc render this server's typed schema with the network cut off."""
    ui = console(token=token)
    page = ui.page
    if token:
        page.on("dialog", lambda dialog: dialog.accept(token))
    page.goto(ui.url + "/docs")
    page.locator(".opblock").first.wait_for()
    start = page.locator(".opblock", has_text="/workflows/review/runs")
    assert start.count() == 1
    start.click()
    # The start body's example, from the start event's schema (rounds defaults to 3).
    expect(start.locator(".microlight").first).to_contain_text('"rounds": 3')
    expect(start.locator(".microlight").first).to_contain_text('"topic"')
    if not token:
        start.scroll_into_view_if_needed()
        ui.shot("api-docs-swagger.png", full_page=False)
    page.goto(ui.url + "/redoc")
    page.get_by_text("Start a run of review").first.wait_for()
    assert page.locator("text=Follow a run's events").count() >= 1
    ui.check_offline()
    if token:
        assert ui.requests and any(
            r.url.endswith("/openapi.json") and r.headers.get("authorization") == f"Bearer {token}"
            for r in ui.requests
        )


def test_resume_a_failed_run_from_its_page(console, tmp_path):
    """Resume continues a failed run as a new run, whose page then shows it completed."""
    from batonflow.core.checkpoints import SqliteCheckpointStore

    flows.FlakyFlow.drafts, flows.FlakyFlow.outages = 0, 1
    db = tmp_path / "durable.db"
    ui = console(store=RunStore(db), checkpoints=SqliteCheckpointStore(db))
    page = ui.page
    run_id = httpx.post(f"{ui.url}/workflows/flaky/runs", json={"topic": "ships"}).json()["run_id"]
    page.goto(f"{ui.url}/#/runs/{run_id}")
    page.locator("#run-status [data-status=failed]").wait_for()
    page.locator("button[name=resume]:not([disabled])").click()
    # A retrying URL check, not wait_for_function: its string predicate goes through eval(),
    # which the console's CSP (script-src 'self') refuses when the first check fails (load).
    expect(page).not_to_have_url(re.compile(rf"{re.escape(run_id)}$"))
    page.locator("#run-status [data-status=completed]").wait_for()
    expect(page.locator("#result")).to_contain_text("SHIPS")
    assert flows.FlakyFlow.drafts == 1  # the completed step was not run again
    ui.check_offline()
