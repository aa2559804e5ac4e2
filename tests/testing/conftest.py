"""Fixtures for the cassette tests: OpenAI over respx, a network that refuses every socket."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import respx

# The OpenAI wire-format builders live with the agents tests (tests/agents/openai_mock.py), the
# kill-trial plumbing with the core tests (tests/core/worker_run.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agents"))
sys.path.append(str(Path(__file__).resolve().parents[1] / "core"))


@pytest.fixture
def openai_wire() -> Iterator[respx.MockRouter]:
    """A respx router for api.openai.com while recording; unmatched requests fail."""
    with respx.mock(base_url="https://api.openai.com/v1", assert_all_called=False) as router:
        yield router


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[respx.MockRouter]:
    """No network at all: respx with no routes (any HTTP request fails) and sockets that refuse
    to connect."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError("the network is blocked in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    with respx.mock(assert_all_called=False) as router:
        yield router
