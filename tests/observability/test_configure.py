"""configure_tracing(): SDK set-up, OTEL_* variables, exporters, flushing, undoing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from batonflow.core import instrument as core_instrument
from batonflow.core.tracing import GlobalProviderInstrument
from batonflow.observability import (
    TracingConfigurationError,
    configure_tracing,
    current_tracing,
)
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_testing import OTLPReceiver

ROOT = Path(__file__).resolve().parents[2]


def _installed() -> tuple[object, ...]:
    # The engine's own instruments are always there once the OpenTelemetry SDK (the global
    # provider's) and llama-index's instrumentation (its dispatcher's) are imported.
    return tuple(
        i
        for i in core_instrument.global_instruments()[0]
        if not isinstance(i, GlobalProviderInstrument)
        and type(i).__name__ != "LlamaDispatchInstrument"
    )


def test_none_exporter_turns_tracing_off() -> None:
    """exporter='none' sets up nothing: no provider, no instrument on workflows."""
    handle = configure_tracing(exporter="none")
    assert not handle.enabled
    assert handle.instrument is None
    assert handle.force_flush()
    assert _installed() == ()


def test_env_none_turns_tracing_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """OTEL_TRACES_EXPORTER=none is honoured."""
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert not configure_tracing().enabled


def test_grpc_without_its_exporter_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """OTEL_EXPORTER_OTLP_PROTOCOL=grpc without the gRPC exporter names the fix."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with pytest.raises(
        TracingConfigurationError,
        match=r"pip install opentelemetry-exporter-otlp-proto-grpc.*http/protobuf",
    ):
        configure_tracing(exporter="otlp", instrument_llama_index=False)


def test_custom_exporter_installs_instrument_and_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    """An exporter instance gets spans; the instrument is global until shutdown()."""
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-env")
    memory = InMemorySpanExporter()
    handle = configure_tracing(exporter=memory, instrument_llama_index=False)
    assert handle.enabled and handle.instrument in _installed()
    assert current_tracing() is handle
    assert handle.tracer_provider is not None
    assert trace.get_tracer_provider() is not handle.tracer_provider  # global slot untouched
    with handle.tracer_provider.get_tracer("t").start_as_current_span("hello"):
        pass
    (span,) = memory.get_finished_spans()
    assert span.resource.attributes["service.name"] == "from-env"
    handle.shutdown()
    assert handle.instrument not in _installed()
    assert current_tracing() is None
    handle.shutdown()  # idempotent


def test_service_name_argument_and_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """service_name= wins; without it and without OTEL_SERVICE_NAME it is 'batonflow'."""
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    for name, expected in ((None, "batonflow"), ("shop", "shop")):
        memory = InMemorySpanExporter()
        with configure_tracing(name, exporter=memory, instrument_llama_index=False) as handle:
            assert handle.tracer_provider is not None
            handle.tracer_provider.get_tracer("t").start_span("s").end()
        assert memory.get_finished_spans()[0].resource.attributes["service.name"] == expected


def test_configuring_again_replaces_the_previous_setup() -> None:
    """A second configure_tracing() shuts the first one down."""
    first = configure_tracing(exporter=InMemorySpanExporter(), instrument_llama_index=False)
    second = configure_tracing(exporter=InMemorySpanExporter(), instrument_llama_index=False)
    assert not first.enabled and second.enabled
    assert _installed() == (second.instrument,)


def test_console_exporter_prints_spans(capfd: pytest.CaptureFixture[str]) -> None:
    """exporter='console' prints each span as it ends."""
    with configure_tracing(exporter="console", instrument_llama_index=False) as handle:
        assert handle.tracer_provider is not None
        handle.tracer_provider.get_tracer("t").start_span("printed-span").end()
    assert '"name": "printed-span"' in capfd.readouterr().out


def test_base_url_endpoint_reaches_the_traces_path(otlp_receiver: OTLPReceiver) -> None:
    """A Jaeger-style base URL is completed with /v1/traces, so spans really arrive."""
    handle = configure_tracing(
        "wire-base", endpoint=otlp_receiver.url, instrument_llama_index=False
    )
    assert handle.endpoint == otlp_receiver.url + "/v1/traces"
    assert handle.tracer_provider is not None
    handle.tracer_provider.get_tracer("t").start_span("over-the-wire").end()
    assert handle.force_flush(5_000)
    assert otlp_receiver.paths == ["/v1/traces"]
    names = [
        s["operationName"]
        for t in otlp_receiver.jaeger_traces("wire-base")["data"]
        for s in t["spans"]
    ]
    assert names == ["over-the-wire"]


def test_spans_are_flushed_at_exit(otlp_receiver: OTLPReceiver, tmp_path: Path) -> None:
    """A process that never calls shutdown() still exports its spans when it exits."""
    script = tmp_path / "app.py"
    script.write_text(
        textwrap.dedent("""
        from batonflow.observability import configure_tracing
        handle = configure_tracing("exit-flush", instrument_llama_index=False)
        handle.tracer_provider.get_tracer("t").start_span("last-words").end()
    """)
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlp_receiver.url
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    deadline = time.monotonic() + 5
    while not otlp_receiver.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    traces = otlp_receiver.jaeger_traces("exit-flush")["data"]
    assert [s["operationName"] for t in traces for s in t["spans"]] == ["last-words"]
