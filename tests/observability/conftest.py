"""Fixtures for the observability tests: in-memory spans and an OTLP receiver on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from batonflow.observability import configure
from otel_testing import OTLPReceiver, Spans


@pytest.fixture
def spans() -> Iterator[Spans]:
    """A fresh in-memory span store."""
    store = Spans()
    yield store
    store.provider.shutdown()


@pytest.fixture(autouse=True)
def _no_leftover_tracing() -> Iterator[None]:
    """Each test starts and ends with no configure_tracing() set-up active."""
    yield
    handle = configure.current_tracing()
    if handle is not None:
        handle.shutdown()


@pytest.fixture
def otlp_receiver() -> Iterator[OTLPReceiver]:
    """An OTLP/HTTP receiver with a Jaeger query API, on an ephemeral 127.0.0.1 port."""
    receiver = OTLPReceiver()
    receiver.thread.start()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()
