"""batonflow.observability: OpenTelemetry set-up, workflow spans, and GenAI spans for LLM calls.

``configure_tracing()`` sets up the OpenTelemetry SDK (exporting over OTLP/HTTP to Jaeger, Arize
Phoenix, Langfuse or any collector, or to the console) and traces every workflow run, with the
GenAI and the OpenInference attributes (:mod:`batonflow.observability.openinference`). LLM, embedding and retrieval spans
come from :mod:`batonflow.observability.genai`, imported only when asked for (it imports
llama-index-core). Tool calls are traced with :func:`tool_span` where agents call tools.
"""

# The extra's packages are checked before they are imported, for a clear error.
# ruff: noqa: E402
from batonflow._extras import require_extra

require_extra(
    "batonflow.observability",
    "otel",
    {
        "opentelemetry.sdk": "opentelemetry-sdk",
        "opentelemetry.exporter.otlp.proto.http": "opentelemetry-exporter-otlp-proto-http",
        "openinference.semconv": "openinference-semantic-conventions",
    },
)

from batonflow.core.tracing import OpenTelemetryInstrument as OpenTelemetryInstrument
from batonflow.core.tracing import tool_span as tool_span

from .configure import TracingHandle as TracingHandle
from .configure import configure_tracing as configure_tracing
from .configure import current_tracing as current_tracing
from .endpoint import TracingConfigurationError as TracingConfigurationError
from .openinference import OpenInferenceInstrument as OpenInferenceInstrument

__all__ = [
    "OpenInferenceInstrument",
    "OpenTelemetryInstrument",
    "TracingConfigurationError",
    "TracingHandle",
    "configure_tracing",
    "current_tracing",
    "tool_span",
]
