"""Fixtures of the apps tests: real uvicorn servers on 127.0.0.1 with ephemeral ports."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app

from . import flows


def served_flows() -> dict[str, Any]:
    return {
        "echo": flows.EchoFlow(timeout=10),
        "ticks": flows.TicksFlow(timeout=30),
        "approval": flows.ApprovalFlow(timeout=None),
        "guess": flows.GuessFlow(timeout=None),
        "sleepy": flows.SleepyFlow(timeout=None),
        "fail": flows.FailFlow(timeout=10),
        "typed": flows.TypedFlow(timeout=10),
        "broken": flows.BrokenRunFlow(timeout=10),
        "waiter": flows.WaitingFlow(timeout=None),
    }


@pytest.fixture
def start_server(tmp_path) -> Iterator[Callable[..., tuple[str, httpx.Client]]]:
    """Start a server (in a thread) with the test flows; returns (base url, client)."""
    started: list[tuple[BackgroundServer, httpx.Client]] = []

    def start(**options: Any) -> tuple[str, httpx.Client]:
        options.setdefault("store", RunStore(tmp_path / "runs.db"))
        app = create_app(served_flows(), **options)
        server = BackgroundServer(app).start()
        client = httpx.Client(base_url=server.url, timeout=20)
        started.append((server, client))
        return server.url, client

    yield start
    for server, client in started:
        client.close()
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium through Playwright, for a module of browser tests (see browser.py)."""
    from playwright.sync_api import sync_playwright

    from .browser import launch

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def client(start_server) -> httpx.Client:
    """A client of a server without a token."""
    return start_server()[1]
