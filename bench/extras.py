"""batonflow-only workloads: the chain with tracing, and the chain with durable checkpoints.

Each probes for the feature it needs and raises :class:`api.Unsupported` (reported as n/a,
with the reason) when that feature has not landed, so ``make bench`` always completes.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Callable
from typing import Any

from api import Api, Unsupported
from workloads import Once, make_chain


def _need(module: str, *names: str) -> Any:
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise Unsupported(f"{module} is not importable yet ({exc})") from exc
    missing = [name for name in names if not hasattr(mod, name)]
    if missing:
        raise Unsupported(f"{module} has no {', '.join(missing)} yet")
    return mod


def _batonflow_only(api: Api) -> None:
    if api.impl != "batonflow":
        raise Unsupported("batonflow only")


def make_tracing_none(api: Api) -> Once:
    """The chain with no instrument at all: the baseline of the tracing overhead."""
    _batonflow_only(api)
    return make_chain(api)


def make_tracing_off(api: Api) -> Once:
    """The chain with the OpenTelemetry instrument installed but no SDK configured."""
    _batonflow_only(api)
    tracing = _need("batonflow.core.tracing", "OpenTelemetryInstrument")
    return make_chain(api, {"instruments": [tracing.OpenTelemetryInstrument()]})


def make_tracing_on(api: Api) -> Once:
    """The chain with the OpenTelemetry SDK configured to an exporter that drops every span."""
    _batonflow_only(api)
    tracing = _need("batonflow.core.tracing", "OpenTelemetryInstrument")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class DropExporter(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(DropExporter()))
    instrument = tracing.OpenTelemetryInstrument(tracer_provider=provider)
    return make_chain(api, {"instruments": [instrument]})


def make_durable(api: Api) -> Once:
    """The chain with every step checkpointed to a SQLite file."""
    _batonflow_only(api)
    checkpoints = _need(
        "batonflow.core.checkpoints", "SqliteCheckpointStore", "WorkflowCheckpointer"
    )
    folder = tempfile.mkdtemp(prefix="batonflow-bench-")
    store = checkpoints.SqliteCheckpointStore(os.path.join(folder, "checkpoints.db"))

    def wrap(flow: Any) -> Any:
        return checkpoints.WorkflowCheckpointer(workflow=flow, store=store)

    return make_chain(api, wrap=wrap)


EXTRA_WORKLOADS: dict[str, Callable[[Api], Once]] = {
    "tracing_none": make_tracing_none,
    "tracing_off": make_tracing_off,
    "tracing_on": make_tracing_on,
    "durable": make_durable,
}
