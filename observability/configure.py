"""``configure_tracing()``: one call that sets up the OpenTelemetry SDK and traces every run."""

from __future__ import annotations

import atexit
import importlib.util
import logging
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Literal

from batonflow.core.tracing import OpenTelemetryInstrument
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.util.types import AttributeValue

from . import _engine
from .endpoint import (
    TracingConfigurationError,
    resolve_endpoint,
    resolve_exporters,
    resolve_protocol,
)

logger = logging.getLogger("batonflow.observability")

_lock = threading.Lock()
_active: TracingHandle | None = None


class TracingHandle:
    """What :func:`configure_tracing` set up; flush it, or shut it down to undo it.

    Attributes:
        tracer_provider: The SDK provider spans go to (``None`` when tracing is off).
        instrument: The workflow instrument in use (``None`` when tracing is off).
        exporters: The exporter names in use, e.g. ``["otlp"]``; empty when tracing is off.
        endpoint: The full OTLP URL spans are posted to, when exporting over OTLP.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        instrument: OpenTelemetryInstrument | None,
        exporters: Sequence[str],
        endpoint: str | None,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.instrument = instrument
        self.exporters = list(exporters)
        self.endpoint = endpoint
        self._llama_index_off: list[object] = []
        self._closed = False

    @property
    def enabled(self) -> bool:
        """Whether spans are being recorded."""
        return self.tracer_provider is not None and not self._closed

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export every finished span now; returns False if the timeout passed first."""
        if self.tracer_provider is None or self._closed:
            return True
        return self.tracer_provider.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Flush and stop exporting, and stop tracing workflows and LLM calls. Idempotent."""
        global _active
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.shutdown)
        with _lock:
            if _active is self:
                _active = None
        if self.instrument is not None:
            _engine.uninstall(self.instrument)
        for undo in self._llama_index_off:
            undo()  # type: ignore[operator]
        self._llama_index_off.clear()
        if self.tracer_provider is not None:
            self.tracer_provider.shutdown()

    def __enter__(self) -> TracingHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        state = "off" if not self.enabled else ",".join(self.exporters) or "custom"
        return f"<TracingHandle {state} endpoint={self.endpoint!r}>"


def _service_name(service_name: str | None) -> str:
    if service_name:
        return service_name
    if os.environ.get("OTEL_SERVICE_NAME", "").strip():
        return os.environ["OTEL_SERVICE_NAME"].strip()
    for item in os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "").split(","):
        key, _, value = item.partition("=")
        if key.strip() == "service.name" and value.strip():
            return value.strip()
    return "batonflow"


def _otlp_exporter(
    endpoint: str | None, protocol: str, headers: Mapping[str, str] | None
) -> tuple[SpanExporter, str]:
    url = resolve_endpoint(endpoint, protocol)
    if protocol == "grpc":
        module = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
        if importlib.util.find_spec("opentelemetry.exporter.otlp.proto.grpc") is None:
            raise TracingConfigurationError(
                "OTLP protocol 'grpc' needs the gRPC exporter, which is not installed. "
                "Run pip install opentelemetry-exporter-otlp-proto-grpc, or use "
                "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf with port 4318."
            )
        grpc_exporter = importlib.import_module(module).OTLPSpanExporter
        return grpc_exporter(endpoint=url, headers=dict(headers) if headers else None), url
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:  # pragma: no cover - part of the [otel] extra
        raise TracingConfigurationError(
            "The OTLP/HTTP exporter is not installed. Run pip install 'batonflow[otel]'."
        ) from exc
    return OTLPSpanExporter(endpoint=url, headers=dict(headers) if headers else None), url


def configure_tracing(
    service_name: str | None = None,
    endpoint: str | None = None,
    exporter: str | SpanExporter | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    protocol: str | None = None,
    span_processor: Literal["batch", "simple"] | None = None,
    resource_attributes: Mapping[str, AttributeValue] | None = None,
    instrument_llama_index: bool | None = None,
    set_global: bool = False,
) -> TracingHandle:
    """Set up OpenTelemetry tracing for every batonflow run (and LLM calls inside steps).

    Builds an SDK ``TracerProvider`` (resource ``service.name``), an exporter and its span
    processor, installs the :class:`~batonflow.core.tracing.OpenTelemetryInstrument` as a
    default instrument of every workflow, and (when llama-index-core is installed) the LLM,
    embedding and retrieval span handlers. Spans are flushed at interpreter exit. Calling it
    again replaces the previous configuration.

    Unset arguments fall back to the standard variables: ``OTEL_SERVICE_NAME``,
    ``OTEL_TRACES_EXPORTER`` (``otlp``, ``console``, ``none``; a comma list works),
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``,
    ``OTEL_EXPORTER_OTLP_PROTOCOL``, ``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_SDK_DISABLED``.

    Args:
        service_name: ``service.name`` of the resource (default ``OTEL_SERVICE_NAME``, else
            ``batonflow``).
        endpoint: OTLP endpoint; a base URL such as Jaeger's ``http://localhost:4318`` gets
            ``/v1/traces`` appended.
        exporter: ``"otlp"``, ``"console"``, ``"none"``, or a ``SpanExporter`` instance (e.g.
            the SDK's ``InMemorySpanExporter``); ``None`` reads ``OTEL_TRACES_EXPORTER``.
        headers: Extra HTTP headers for the OTLP exporter (e.g. an API key).
        protocol: ``"http/protobuf"`` (default) or ``"grpc"`` (needs the gRPC exporter).
        span_processor: ``"batch"`` (default for OTLP) or ``"simple"`` (default for console
            and exporter instances: spans are exported as soon as they end).
        resource_attributes: More resource attributes (``deployment.environment`` …).
        instrument_llama_index: Trace llama-index LLM, embedding and retrieval calls. ``None``
            means yes when llama-index-core is installed.
        set_global: Also make the provider OpenTelemetry's global one, so other libraries'
            spans use it. Off by default: batonflow never takes the global slot unasked.

    Returns:
        A :class:`TracingHandle`; ``handle.shutdown()`` flushes and undoes the set-up.

    Raises:
        TracingConfigurationError: an unknown exporter, an unsupported protocol, or an
            endpoint that cannot receive OTLP (the message says what to use instead).
    """
    global _active
    if isinstance(exporter, SpanExporter):
        names: list[str] = []
        custom: SpanExporter | None = exporter
    else:
        names = resolve_exporters(exporter)
        custom = None
    with _lock:
        previous = _active
    if previous is not None:
        previous.shutdown()
    if custom is None and not names:
        handle = TracingHandle(None, None, [], None)
        with _lock:
            _active = handle
        return handle

    processors: list[SpanProcessor] = []
    url: str | None = None
    if custom is not None:
        processors.append(_processor(custom, span_processor or "simple"))
    for name in names:
        if name == "otlp":
            otlp, url = _otlp_exporter(endpoint, resolve_protocol(protocol), headers)
            processors.append(_processor(otlp, span_processor or "batch"))
        elif name == "console":
            console = ConsoleSpanExporter(out=_Stdout())  # type: ignore[arg-type]
            processors.append(_processor(console, span_processor or "simple"))

    resource = Resource.create(
        {"service.name": _service_name(service_name), **dict(resource_attributes or {})}
    )
    provider = TracerProvider(resource=resource)
    for processor in processors:
        provider.add_span_processor(processor)
    if set_global:
        from opentelemetry import trace

        trace.set_tracer_provider(provider)

    instrument = OpenTelemetryInstrument(tracer_provider=provider)
    handle = TracingHandle(provider, instrument, names or ["custom"], url)
    _engine.install(instrument)
    if instrument_llama_index is None:
        instrument_llama_index = importlib.util.find_spec("llama_index.core") is not None
    if instrument_llama_index:
        from .genai import instrument_llama_index as _instrument

        handle._llama_index_off.append(_instrument(provider))
    atexit.register(handle.shutdown)
    with _lock:
        _active = handle
    return handle


class _Stdout:
    """Writes to whatever ``sys.stdout`` is at the time (redirects and capture keep working)."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


def _processor(exporter: SpanExporter, kind: str) -> SpanProcessor:
    if kind == "batch":
        return BatchSpanProcessor(exporter)
    if kind == "simple":
        return SimpleSpanProcessor(exporter)
    raise TracingConfigurationError(
        f"Unknown span_processor {kind!r}. Use 'batch' or 'simple'."
    )


def current_tracing() -> TracingHandle | None:
    """The handle of the active :func:`configure_tracing` call, if any."""
    with _lock:
        return _active


__all__ = ["TracingHandle", "configure_tracing", "current_tracing"]
