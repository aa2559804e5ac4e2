"""A run's budget in the console, in a real browser (Debian's Chromium, offline): the runs
table's tokens column, a run waiting for its budget with its usage per step, and the raise
button that lets it finish."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from .browser import NEEDS_CHROMIUM, serve_consoles
from .budget_flows import BudgetedAgent, calls

pytestmark = NEEDS_CHROMIUM


@pytest.fixture
def console(browser, tmp_path, monkeypatch) -> Iterator[Any]:
    monkeypatch.chdir(tmp_path)  # the agent notes its LLM calls in the working folder
    yield from serve_consoles(browser, tmp_path, lambda: {"budgeted": BudgetedAgent()})


def test_a_run_waiting_for_its_budget_is_raised_from_its_page(console, tmp_path) -> None:
    """The run page shows the budget, the usage of the step and the raise form; Add tokens
    lets the run finish; the runs table shows its tokens."""
    ui = console()
    page = ui.page
    started = httpx.post(
        ui.url + "/workflows/budgeted/runs",
        params={"budget": "120"},
        json={"user_msg": "What is the answer?"},
    ).json()
    run_id = started["run_id"]
    deadline = time.monotonic() + 30
    while httpx.get(f"{ui.url}/runs/{run_id}").json().get("waiting_reason") != "budget":
        assert time.monotonic() < deadline, "the run did not wait for its budget"
        time.sleep(0.05)
    page.goto(f"{ui.url}/#/runs/{run_id}")
    expect(page.locator("#run-budget")).to_have_text("120 tokens (over it: wait)")
    expect(page.locator("#run-usage")).to_contain_text("120 tokens (100 prompt, 20 completion")
    expect(page.locator(".step-usage[data-step=run_agent_step]")).to_contain_text("1 LLM call")
    form = page.locator("#raise-budget")
    expect(form).to_contain_text("Step run_agent_step waits")
    ui.shot("console-budget.png")
    assert calls(tmp_path) == 1
    page.fill("input[name=raise-amount]", "1000")
    page.click("button[name=raise-budget]")
    expect(page.locator("#run-status")).to_have_text("completed", timeout=30_000)
    expect(page.locator("#run-budget")).to_have_text("1120 tokens (over it: wait)")
    expect(page.locator("#raise-budget")).to_have_count(0)
    assert calls(tmp_path) == 2
    page.goto(ui.url + "/")
    cell = page.locator(f"#runs tr[data-run-id='{run_id}'] td.tokens")
    expect(cell).to_have_text("300")
    ui.check_offline()
