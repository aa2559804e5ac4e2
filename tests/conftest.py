"""Shared pytest configuration: no test may reach the internet."""

from __future__ import annotations

import os

import pytest

# A throw-away PostgreSQL server for the tests that need one (tests/pg_server.py), and a disk
# that fills up for real (tests/full_disk.py).
pytest_plugins = ["pg_server", "full_disk"]

# Tests never talk to a real OpenAI or tracing backend.
for _key in ("OPENAI_API_KEY", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_EXPORTER"):
    os.environ.pop(_key, None)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
