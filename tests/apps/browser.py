"""Driving the run console in a real browser: Playwright on Debian's Chromium, offline.

Shared by the browser tests: :data:`NEEDS_CHROMIUM` marks them, :class:`Console` is a page on
a served app that may reach nothing but that server, and :func:`serve_consoles` is the body of
a fixture that serves apps and opens such pages (closing both at the end).

Set ``BATONFLOW_CONSOLE_SCREENSHOTS=docs/img`` to also write the screenshots the docs use.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: Chromium's flags that work here (no sandbox as root, nothing phoning home).
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = os.environ.get("BATONFLOW_CONSOLE_SCREENSHOTS")

#: The marks of a browser test module (``pytestmark = NEEDS_CHROMIUM``).
NEEDS_CHROMIUM = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="chromium is not on PATH (apt-get install chromium; .ci/run installs it)",
    ),
]


def launch(playwright: Any) -> Any:
    """Debian's Chromium, headless, through Playwright (never ``playwright install``)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)


class Console:
    """A served app, and a browser page on it that may reach only that server."""

    def __init__(self, browser: Any, server: BackgroundServer) -> None:
        self.server = server
        self.url = server.url
        self.elsewhere: list[str] = []
        self.requests: list[Any] = []
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        here = re.escape(self.url)
        self.context.route(re.compile(rf"^(?!{here}/).*"), self._refuse)
        self.page = self.context.new_page()
        self.page.set_default_timeout(15_000)
        self.page.on("request", lambda request: self.requests.append(request))
        self.errors: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def _refuse(self, route: Any) -> None:
        self.elsewhere.append(route.request.url)
        route.abort()

    def shot(self, name: str, full_page: bool = True) -> None:
        """Write a screenshot to ``$BATONFLOW_CONSOLE_SCREENSHOTS`` when it is set."""
        if SHOTS:
            Path(SHOTS).mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(Path(SHOTS) / name), full_page=full_page)

    def check_offline(self) -> None:
        """The page reached nothing but its server and raised no script error."""
        assert self.elsewhere == [], f"the page tried to reach {self.elsewhere}"
        assert self.errors == [], f"script errors: {self.errors}"


def serve_consoles(
    browser: Any, tmp_path: Path, flows: Callable[[], dict[str, Any]]
) -> Iterator[Callable[..., Console]]:
    """Yield ``open_console(**server_options)``: a server of ``flows()`` and a page on it."""
    opened: list[tuple[Console, BackgroundServer]] = []

    def open_console(**options: Any) -> Console:
        options.setdefault("store", RunStore(tmp_path / "runs.db"))
        server = BackgroundServer(create_app(flows(), **options)).start()
        page = Console(browser, server)
        opened.append((page, server))
        return page

    yield open_console
    for page, server in opened:
        page.context.close()
        server.stop()
