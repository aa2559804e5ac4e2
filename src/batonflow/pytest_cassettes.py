"""The pytest plugin of :mod:`batonflow.testing`: a ``cassette`` fixture for every test.

Installed with batonflow (the ``pytest11`` entry point ``batonflow``), so a test asks for it
by name::

    async def test_agent(cassette):
        async with cassette():
            result = await agent.run(user_msg="Rome?")

``cassette(name=None, redact=None)`` opens the cassette
``<the test's folder>/cassettes/<test module>/<name or the test's name>.json``: it replays the
file when it exists and records it when it does not. ``pytest --cassette-mode=record`` records
every cassette again, ``replay`` never records (a missing cassette fails), ``rewrite`` records
only the calls that changed. This module imports nothing heavy: llama-index is loaded when a
test first calls the fixture.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from batonflow.testing import CassetteSession

_MODES = ("auto", "record", "replay", "rewrite")


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--cassette-mode`` (auto, record, replay or rewrite)."""
    parser.addoption(
        "--cassette-mode",
        choices=_MODES,
        default="auto",
        help="batonflow cassettes: auto (replay a cassette that exists, record one that does "
        "not), record (all again), replay (never record), rewrite (record changed calls)",
    )


def cassette_path(request: pytest.FixtureRequest, name: str | None = None) -> Path:
    """Where the cassette ``name`` of the test ``request`` runs lives."""
    test_file = Path(str(request.node.path))
    stem = name or re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    return test_file.parent / "cassettes" / test_file.stem / f"{stem}.json"


@pytest.fixture
def cassette(request: pytest.FixtureRequest) -> Callable[..., CassetteSession]:
    """Open this test's cassette: ``with cassette():`` or ``async with cassette("name"):``."""
    mode = request.config.getoption("--cassette-mode")

    def open_cassette(name: str | None = None, *, redact: Any = None) -> CassetteSession:
        from batonflow import testing

        path = cassette_path(request, name)
        if mode == "record" or (mode == "auto" and not path.exists()):
            return testing.record(path, redact=redact)
        return testing.replay(
            path, mode="rewrite" if mode == "rewrite" else "replay", redact=redact
        )

    return open_cassette
