"""The HTML drawing in a real browser: headless Chromium, no network, renders every step."""

import os
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from batonflow.core.drawing import draw_all_possible_flows, draw_most_recent_execution
from batonflow.core.events import (
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
)
from batonflow.core.step import step
from batonflow.core.workflow import Workflow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="chromium is not on PATH (apt-get install chromium; .ci/run installs it)",
    ),
]


class DraftEvent(Event):
    draft: str


class ReviewEvent(Event):
    verdict: str


class ReviewFlow(Workflow):
    @step
    async def write_draft(self, ev: StartEvent | ReviewEvent) -> DraftEvent:
        return DraftEvent(draft="d")

    @step
    async def review_draft(self, ev: DraftEvent) -> ReviewEvent | InputRequiredEvent:
        return InputRequiredEvent()

    @step
    async def publish(self, ev: HumanResponseEvent) -> StopEvent:
        return StopEvent()


STEP_NAMES = ("write_draft", "review_draft", "publish")


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium with networking features off and a throwaway profile."""
    profile = tmp_path / "profile"
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        # Any attempt to reach the network would fail: the page must not need it.
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        f"--user-data-dir={profile}",
        *args,
    ]
    env = {**os.environ, "HOME": str(tmp_path)}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90, env=env, check=False)


class VisibleText(HTMLParser):
    """The text content of the rendered DOM, without style/script/title contents."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.texts: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.stack.append(tag)

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop() != tag:
            pass

    def handle_data(self, data):
        if not any(t in ("style", "script", "title") for t in self.stack):
            self.texts.append(data.strip())


def test_every_step_name_is_in_the_rendered_page(tmp_path):
    """Chromium renders the page offline and its DOM shows each step name as visible text."""
    page = tmp_path / "review.html"
    draw_all_possible_flows(ReviewFlow, filename=page)
    done = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    assert "<svg" in dom
    parser = VisibleText()
    parser.feed(dom)
    visible = set(parser.texts)
    for name in (*STEP_NAMES, "StartEvent", "StopEvent", "external"):
        assert name in visible, f"{name} not rendered; visible texts: {sorted(visible)}"


def test_screenshot_is_a_real_png(tmp_path):
    """A screenshot of the page is a non-trivial PNG of the requested size."""
    page = tmp_path / "review.html"
    draw_all_possible_flows(ReviewFlow, filename=page)
    shot = tmp_path / "x.png"
    done = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1200, 900)
    # A blank white page compresses to a few hundred bytes; a drawing does not.
    assert len(data) > 10_000


async def test_recent_execution_page_renders_the_run(tmp_path):
    """The recent-execution page shows the ordered executions and the ×n badges in Chromium."""

    class Loop(Workflow):
        @step
        async def spin(self, ev: StartEvent | DraftEvent) -> DraftEvent | StopEvent:
            n = ev.get("n", 0) + 1
            return StopEvent(result=n) if n == 3 else DraftEvent(draft="d", n=n)

    w = Loop()
    assert await w.run() == 3
    page = tmp_path / "recent.html"
    draw_most_recent_execution(w, filename=page)
    done = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    parser = VisibleText()
    parser.feed(done.stdout)
    visible = [t for t in parser.texts if t]
    assert "×3" in visible
    assert visible.count("spin") >= 4  # the node label and three list items
    assert "Most recent execution: 3 step executions" in visible
