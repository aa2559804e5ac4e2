"""The CLI's default service names never override the one the user set through OTEL_*."""

from __future__ import annotations

import pytest
from batonflow.apps._console import setup_tracing
from batonflow.observability import current_tracing


@pytest.fixture
def console_tracing(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    yield
    handle = current_tracing()
    if handle is not None:
        handle.shutdown()


def _service_name() -> str:
    handle = current_tracing()
    assert handle is not None and handle.tracer_provider is not None
    return str(handle.tracer_provider.resource.attributes["service.name"])


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param({}, "batonflow-demo", id="default"),
        pytest.param({"OTEL_SERVICE_NAME": "shop"}, "shop", id="otel-service-name"),
        pytest.param(
            {"OTEL_RESOURCE_ATTRIBUTES": "team=x,service.name=billing"},
            "billing",
            id="resource-attributes",
        ),
    ],
)
def test_cli_service_name_is_a_default_only(console_tracing, monkeypatch, env, expected):
    """setup_tracing's name applies only when OTEL_* names no service."""
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    setup_tracing("batonflow-demo")
    assert _service_name() == expected
