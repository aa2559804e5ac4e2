"""``configure_tracing()``: one call that sets up the OpenTelemetry SDK and traces every run."""

from __future__ import annotations

import atexit
import importlib.util
import logging
import os
import socket
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Literal
from urllib.parse import urlsplit

from batonflow.core.tracing import OpenTelemetryInstrument
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.util.types import AttributeValue

from . import _engine
from .endpoint import (
    TracingConfigurationError,
    resolve_endpoint,
    resolve_exporters,
    resolve_protocol,
)
from .openinference import OpenInferenceInstrument, project_attributes

logger = logging.getLogger("batonflow.observability")

_lock = threading.Lock()
_active: TracingHandle | None = None

#: Seconds :meth:`TracingHandle.shutdown` waits for the last spans to be exported (at exit).
SHUTDOWN_TIMEOUT = 3.0
#: Seconds to wait for a TCP connection when checking that the collector is there.
PROBE_TIMEOUT = 1.0


def _unreachable(url: str, timeout: float = PROBE_TIMEOUT) -> str | None:
    """Why nothing answers at ``url``'s host and port (``None`` when a connection opens)."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "its port is not a number"
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except ConnectionRefusedError:
        return "connection refused"
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except OSError as exc:
        return exc.strerror or type(exc).__name__


class _CollectorGuard(SpanExporter):
    """Wraps the OTLP exporter so that a collector that is not running costs no time or noise.

    The SDK's exporter retries a refused connection for up to 10 s and logs every attempt.
    Before the first export, after an export failed, and when closing (at exit), the guard
    first checks that the collector accepts a TCP connection; if it does not, the batch is dropped at once and one
    warning says where the traces were to go and how to fix it.
    """

    def __init__(self, inner: SpanExporter, url: str) -> None:
        self.inner = inner
        self.url = url
        self.closing = False
        self._suspect = True  # check before the first export too
        self._warned = False
        self._close_lock = threading.Lock()
        self._inner_closed = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.closing or self._suspect:
            reason = _unreachable(self.url)
            if reason is not None:
                self._suspect = True
                self._warn(reason)
                return SpanExportResult.FAILURE
        self._suspect = self._warned = False
        result = self.inner.export(spans)
        if result is not SpanExportResult.SUCCESS:
            self._suspect = True
        return result

    def _warn(self, reason: str) -> None:
        if self._warned:
            return
        self._warned = True
        logger.warning(
            "traces not sent: the collector at %s did not answer (%s); start it (e.g. Jaeger, "
            "OTLP on port 4318) or unset OTEL_EXPORTER_OTLP_ENDPOINT.",
            self.url,
            reason,
        )

    def shutdown(self) -> None:
        with self._close_lock:
            if self._inner_closed:
                return
            self._inner_closed = True
        self.inner.shutdown()  # also stops the SDK's retries of an export in progress

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


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
        self._guards: list[_CollectorGuard] = []
        self._shutdown_thread: threading.Thread | None = None
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

    def shutdown(self, timeout: float = SHUTDOWN_TIMEOUT) -> None:
        """Flush and stop exporting, and stop tracing workflows and LLM calls. Idempotent.

        Args:
            timeout: Seconds to wait for the last spans to be exported. A collector that
                refuses the connection is noticed at once; one that does not answer within
                ``timeout`` gets a warning and its spans are dropped, so a program (or the
                CLI) never hangs at exit because the collector is down.
        """
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
            self._shutdown_provider(self.tracer_provider, timeout)

    def _shutdown_provider(self, provider: TracerProvider, timeout: float) -> None:
        for guard in self._guards:
            guard.closing = True
        try:
            worker = threading.Thread(
                target=provider.shutdown, name="batonflow-tracing-shutdown", daemon=True
            )
            worker.start()
        except RuntimeError:  # no new threads while the interpreter finalizes
            provider.shutdown()
            return
        self._shutdown_thread = worker
        worker.join(timeout)
        if worker.is_alive():
            for guard in self._guards:
                guard.shutdown()
            where = f"the collector at {self.endpoint}" if self.endpoint else "the exporter"
            logger.warning(
                "traces not sent: %s did not take them within %g s; check that it runs, or "
                "unset OTEL_EXPORTER_OTLP_ENDPOINT.",
                where,
                timeout,
            )

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
    trace_workflows: bool = True,
    set_global: bool = False,
) -> TracingHandle:
    """Set up OpenTelemetry tracing for every batonflow run (and LLM calls inside steps).

    Builds an SDK ``TracerProvider`` (resource ``service.name``, and Phoenix's
    ``openinference.project.name`` unless given), an exporter and its span processor, installs
    an :class:`~batonflow.observability.OpenInferenceInstrument` (GenAI and OpenInference
    attributes) as a
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
        trace_workflows: Trace every workflow run and step (the default). ``False`` leaves them
            to another tracer: with OpenInference's llama-index instrumentor, which traces a
            batonflow run, its steps and its LLM calls itself (batonflow emits llama-index's
            instrumentation, as llama-index-workflows does), pass ``trace_workflows=False,
            instrument_llama_index=False`` and give it ``handle.tracer_provider``: one tree, no
            span twice.
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
    guards: list[_CollectorGuard] = []
    url: str | None = None
    if custom is not None:
        processors.append(_processor(custom, span_processor or "simple"))
    for name in names:
        if name == "otlp":
            otlp, url = _otlp_exporter(endpoint, resolve_protocol(protocol), headers)
            guard = _CollectorGuard(otlp, url)
            guards.append(guard)
            processors.append(_processor(guard, span_processor or "batch"))
        elif name == "console":
            console = ConsoleSpanExporter(out=_Stdout())  # type: ignore[arg-type]
            processors.append(_processor(console, span_processor or "simple"))

    name = _service_name(service_name)
    extra = dict(resource_attributes or {})
    # Phoenix files traces by project, not service: the project follows the service name.
    project = project_attributes(name, extra, os.environ)
    resource = Resource.create({"service.name": name, **project, **extra})
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)  # the handle does it
    for processor in processors:
        provider.add_span_processor(processor)
    if set_global:
        from opentelemetry import trace

        trace.set_tracer_provider(provider)

    instrument = OpenInferenceInstrument(tracer_provider=provider) if trace_workflows else None
    handle = TracingHandle(provider, instrument, names or ["custom"], url)
    handle._guards = guards
    if instrument is not None:
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
    raise TracingConfigurationError(f"Unknown span_processor {kind!r}. Use 'batch' or 'simple'.")


def current_tracing() -> TracingHandle | None:
    """The handle of the active :func:`configure_tracing` call, if any."""
    with _lock:
        return _active


__all__ = ["TracingHandle", "configure_tracing", "current_tracing"]
