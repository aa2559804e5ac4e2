"""An agent's chat in the run console, and start forms that take plain text, in Chromium.

The agents are ``agent_flows.py``'s, on scripted LLMs that stream word by word and call tools;
a real server serves them and Playwright drives Debian's Chromium with the network cut off
(see ``browser.py``). ``BATONFLOW_CONSOLE_SCREENSHOTS=docs/img`` writes the chat's screenshots
used by docs/server.md and docs/agents.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Literal

import httpx
import pytest
from batonflow.core import StartEvent, StopEvent, Workflow, step
from playwright.sync_api import expect

from . import agent_flows
from .browser import NEEDS_CHROMIUM, serve_consoles

pytestmark = NEEDS_CHROMIUM


class KindsStart(StartEvent):
    """A start event with a field of each simple kind."""

    name: str
    note: str | None = None
    count: int | None = None
    loud: bool | None = None
    mood: Literal["calm", "wild"] | None = None
    extra: Any = None
    other: Any = None
    tags: list[str] | None = None
    meta: dict[str, int] | None = None


class KindsFlow(Workflow):
    """Returns the fields it was started with (the ones that were sent) and their values."""

    @step
    async def echo(self, ev: KindsStart) -> StopEvent:
        return StopEvent(result={name: getattr(ev, name) for name in sorted(ev.model_fields_set)})


def chat_flows() -> dict[str, Any]:
    return {
        "calc": agent_flows.calc,
        "bank": agent_flows.bank,
        "relay": agent_flows.relay,
        "broken": agent_flows.broken,
        "kinds": KindsFlow(timeout=10),
    }


@pytest.fixture
def console(browser, tmp_path) -> Iterator[Any]:
    yield from serve_consoles(browser, tmp_path, chat_flows)


# Records every text the streamed bubbles showed (from the mutation records: several deltas
# may land between two observer calls), to see the answer grow token by token.
WATCH_BUBBLES = """() => {
  window.shownTexts = [];
  new MutationObserver((records) => {
    const texts = Array.from(document.querySelectorAll(".msg.assistant .text"));
    records.forEach((r) => {
      const i = texts.indexOf(r.target);
      if (i < 0 || !r.addedNodes.length) return;
      (window.shownTexts[i] = window.shownTexts[i] || []).push(r.addedNodes[0].textContent);
    });
  }).observe(document.getElementById("app"), {subtree: true, childList: true});
}"""


def test_an_agent_answers_in_the_chat_with_its_tool_call_as_a_card(console):
    """A message starts a run: the answer grows as it streams, the tool call is a card."""
    ui = console()
    page = ui.page
    page.goto(ui.url + "/")
    page.locator("[data-workflow=calc] >> text=Chat").click()
    page.locator("#chat-input").wait_for()
    page.evaluate(WATCH_BUBBLES)
    page.fill("#chat-input", "What is 2 + 3?")
    page.press("#chat-input", "Enter")

    final = page.locator(".msg.assistant.final .text")
    expect(final).to_have_text(agent_flows.CALC_ANSWER)
    expect(page.locator(".msg.user .text")).to_have_text("What is 2 + 3?")
    # One bubble per LLM turn: the text before the tool call, then the answer.
    expect(page.locator(".msg.assistant .text")).to_have_text(
        ["Let me add.", agent_flows.CALC_ANSWER]
    )
    card = page.locator(".tool-card[data-tool=add]")
    expect(card).to_have_attribute("data-state", "done")
    expect(card.locator("dl.tool-args")).to_have_text("a2b3")
    expect(card.locator(".tool-result")).to_have_text("5")
    # The answer grew word by word in one bubble (not a blob per token).
    grown = page.evaluate("window.shownTexts[1]")
    assert grown[-1] == agent_flows.CALC_ANSWER
    assert grown[:3] == ["The ", "The sum ", "The sum of "]
    assert page.locator(".turn-meta").inner_text().endswith("completed")

    # The second message carries the conversation so far as the run's chat history.
    page.fill("#chat-input", "And 3 + 2?")
    page.click("button[name=send]")
    expect(page.locator(".msg.assistant.final")).to_have_count(2)
    first, second = page.url.rsplit("/", 1)[1].split(",")
    sent = httpx.get(f"{ui.url}/runs/{second}").json()["start"]
    assert sent == {
        "user_msg": "And 3 + 2?",
        "chat_history": [
            {"role": "user", "content": "What is 2 + 3?"},
            {"role": "assistant", "content": agent_flows.CALC_ANSWER},
        ],
    }
    # The page's address holds the turns: reloaded, the chat is rebuilt from their events.
    page.reload()
    expect(page.locator(".transcript")).to_have_count(2)
    expect(page.locator(".msg.user .text")).to_have_text(["What is 2 + 3?", "And 3 + 2?"])
    assert page.locator(".transcript").first.get_attribute("data-run-id") == first
    ui.check_offline()


def test_a_tool_that_asks_a_human_is_approved_inline(console):
    """The question of a waiting tool shows in the chat with the answer form; yes runs it."""
    ui = console()
    page = ui.page
    page.goto(ui.url + "/#/chat/bank")
    page.fill("#chat-input", "Pay Ada her 30 EUR.")
    page.press("#chat-input", "Enter")
    ask = page.locator(".ask-card[data-state=open]")
    expect(ask.locator(".question")).to_have_text("Transfer 30 EUR to Ada?")
    expect(page.locator(".tool-card[data-tool=transfer]")).to_have_attribute(
        "data-state", "running"
    )
    ask.locator("input[name=response]").fill("yes")
    ui.shot("console-chat-approval.png")
    ask.locator("button[name=answer]").click()
    expect(page.locator(".msg.assistant.final .text")).to_have_text("Done: sent 30 EUR to Ada.")
    expect(page.locator(".tool-card[data-tool=transfer] .tool-result")).to_have_text(
        "sent 30 EUR to Ada"
    )
    expect(page.locator(".ask-card")).to_have_attribute("data-state", "answered")
    ui.shot("console-chat.png")
    ui.check_offline()


def test_an_agent_run_page_shows_the_conversation_and_the_handoff(console):
    """A run of an AgentWorkflow: the conversation names who answers; stream rows grow."""
    ui = console()
    page = ui.page
    started = httpx.post(
        f"{ui.url}/workflows/relay/runs?wait=true", json={"user_msg": "How far is the Moon?"}
    ).json()
    page.goto(f"{ui.url}/#/runs/{started['run_id']}")
    conversation = page.locator("#conversation")
    continued = conversation.locator("a", has_text="continue in the chat")
    expect(continued).to_have_attribute("href", f"#/chat/relay/{started['run_id']}")
    expect(conversation.locator(".tool-card")).to_have_count(2)
    expect(conversation.locator(".tool-card .tool-head strong")).to_have_text(["lookup", "handoff"])
    expect(conversation.locator(".handoff")).to_have_text("writer takes over from researcher")
    answer = conversation.locator(".msg.assistant.final")
    expect(answer.locator(".who")).to_have_text("writer")
    expect(answer.locator(".text")).to_have_text("The Moon is about 384,400 km away.")
    # The approval lives in the conversation, not in a second answer box.
    assert page.locator("#answer-form").count() == 0
    # The events: one row per streamed LLM turn, counting its tokens, not a row per token.
    page.locator("#timeline li.end").wait_for()
    events = [e for e in _event_types(ui.url, started["run_id"]) if e == "AgentStream"]
    rows = page.locator("#timeline li[data-type=AgentStream]")
    counts = [int(c) for c in rows.evaluate_all("l => l.map(e => e.dataset.count)")]
    assert sum(counts) == len(events) > len(counts)
    expect(rows.last.locator(".value")).to_have_text("The Moon is about 384,400 km away.")
    label = rf"AgentStream × {counts[-1]} \(to {int(rows.last.get_attribute('data-last-seq'))}\)"
    expect(rows.last.locator(".type")).to_have_text(re.compile(label))
    ui.shot("console-agent-run.png")
    ui.check_offline()


def test_a_failed_tool_call_is_a_card_marked_as_an_error(console):
    """The tool's error is its card's result, marked error; the agent's answer follows."""
    ui = console()
    page = ui.page
    page.goto(ui.url + "/#/chat/broken")
    page.fill("#chat-input", "1 / 0?")
    page.press("#chat-input", "Enter")
    card = page.locator(".tool-card[data-tool=divide]")
    expect(card).to_have_attribute("data-state", "error")
    expect(card.locator(".tool-result.error")).to_contain_text("ZeroDivisionError")
    expect(page.locator(".msg.assistant.final .text")).to_have_text("I cannot divide by zero.")
    ui.check_offline()


def _event_types(url: str, run_id: str) -> list[str]:
    with httpx.stream("GET", f"{url}/runs/{run_id}/events") as response:
        return re.findall(r'"type": "(\w+)"', response.read().decode())


def test_start_forms_take_plain_text_and_leave_empty_fields_out(console):
    """Text boxes for str fields (unions with str too), and nothing sent for empty ones."""
    ui = console()
    page = ui.page
    page.goto(ui.url + "/#/start/calc")
    form = page.locator("#start-form")
    # The agent's start form: its JSON fields, no Python objects (memory, output_cls).
    expect(form.locator("label")).to_have_count(5)
    assert form.locator("label").evaluate_all("l => l.map(e => e.htmlFor)") == [
        "start-user_msg",
        "start-chat_history",
        "start-max_iterations",
        "start-early_stopping_method",
        "start-tool_choice",
    ]
    assert page.locator("#start-user_msg").get_attribute("type") == "text"
    assert page.locator("#start-chat_history").input_value() == ""  # not "null"
    page.fill("#start-user_msg", "What is 2 + 3?")
    page.click("button[name=start]")
    page.wait_for_url(re.compile(r"#/runs/[0-9a-f]+$"))
    run_id = page.url.rsplit("/", 1)[1]
    expect(page.locator("#conversation .msg.assistant.final")).to_have_count(1)
    assert httpx.get(f"{ui.url}/runs/{run_id}").json()["start"] == {"user_msg": "What is 2 + 3?"}

    page.goto(ui.url + "/#/start/kinds")
    page.locator("#start-name").wait_for()
    widgets = {
        name: page.locator(f"#start-{name}").evaluate("e => e.type")
        for name in ("name", "note", "count", "loud", "mood", "extra", "tags", "meta")
    }
    assert widgets == {
        "name": "text",
        "note": "text",
        "count": "number",
        "loud": "select-one",
        "mood": "select-one",
        "extra": "textarea",
        "tags": "textarea",
        "meta": "textarea",
    }
    page.fill("#start-name", "Ada")
    page.fill("#start-extra", "plain words")  # not JSON: sent as text
    page.fill("#start-other", "[1, 2]")  # JSON: sent as a list
    page.select_option("#start-loud", "true")
    page.fill("#start-tags", "not json")
    page.click("button[name=start]")
    refused = page.locator("#start-form .error")
    expect(refused).to_contain_text("Field 'tags' is not valid JSON")
    expect(refused).to_contain_text("write a JSON array, like [1, 2].")
    page.fill("#start-tags", '["a"]')
    page.click("button[name=start]")
    expect(page.locator("#run-status [data-status]")).to_have_text("completed")
    run_id = page.url.rsplit("/", 1)[1]
    assert httpx.get(f"{ui.url}/runs/{run_id}").json()["result"] == {
        "extra": "plain words",
        "loud": True,
        "name": "Ada",
        "other": [1, 2],
        "tags": ["a"],
    }
    ui.check_offline()
