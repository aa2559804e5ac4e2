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
from workloads import Once, check, make_chain

#: Alternating pairs per tracing-off measurement.
PAIRS = 10


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


def make_tracing_off(api: Api) -> Once:
    """The chain with tracing off (nothing configured), against the engine without hooks.

    Both engines are timed alternately in this one process, ``PAIRS`` pairs per measurement,
    keeping each one's best (the difference is small, so cross-process noise would swamp it):
    ``us_per_step_nohooks`` on the run loop with every instrument hook call site removed
    (``_nohooks.py``), ``us_per_step`` on batonflow as shipped with no instrument installed.
    """
    _batonflow_only(api)
    from _nohooks import hookless_run_methods, install

    stripped, original, _sites = hookless_run_methods()
    once = make_chain(api)

    async def ab(n: int) -> dict[str, float]:
        # The difference is a few percent and this machine is noisy: time many alternating
        # pairs and keep each engine's best (the least disturbed) run.
        best = {"nohooks": float("inf"), "shipped": float("inf")}
        try:
            for pair in range(PAIRS):
                order = [("nohooks", stripped), ("shipped", original)]
                for label, methods in order if pair % 2 else order[::-1]:
                    install(methods)
                    best[label] = min(best[label], (await once(n))["us_per_step"])
        finally:
            install(original)
        return {"us_per_step": best["shipped"], "us_per_step_nohooks": best["nohooks"]}

    return ab


def make_tracing_nosdk(api: Api) -> Once:
    """The chain with the OpenTelemetry instrument installed but no SDK behind it.

    With only the OpenTelemetry API present, spans are no-ops: this is what a run pays when the
    instrument is wired in by hand but nobody configured an SDK (``configure_tracing`` does not
    install the instrument when it exports nowhere).

    Timed as ``tracing_off`` is, in alternating pairs in this one process keeping each one's
    best: ``us_per_step`` with the instrument installed, ``us_per_step_off`` without it. (A
    median in a fresh process against the other job's best pair read +40-60% on a 6 µs step
    that is the same in both.)
    """
    _batonflow_only(api)
    tracing = _need("batonflow.core.tracing", "OpenTelemetryInstrument")
    core_instrument = _need(
        "batonflow.core.instrument", "add_global_instrument", "remove_global_instrument"
    )
    instrument = tracing.OpenTelemetryInstrument()
    once = make_chain(api)

    async def ab(n: int) -> dict[str, float]:
        best = {"off": float("inf"), "nosdk": float("inf")}
        for pair in range(PAIRS):
            for label in ("off", "nosdk") if pair % 2 else ("nosdk", "off"):
                if label == "nosdk":
                    core_instrument.add_global_instrument(instrument)
                try:
                    best[label] = min(best[label], (await once(n))["us_per_step"])
                finally:
                    if label == "nosdk":
                        core_instrument.remove_global_instrument(instrument)
        return {"us_per_step": best["nosdk"], "us_per_step_off": best["off"]}

    return ab


def make_tracing_on(api: Api) -> Once:
    """The chain with ``configure_tracing`` and an exporter that drops every span.

    Every span is created, filled and ended through the SDK (simple span processor), so this
    is the whole cost of tracing short of the network.
    """
    _batonflow_only(api)
    observability = _need("batonflow.observability", "configure_tracing")
    _need("batonflow.core.instrument", "add_global_instrument")
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class DropExporter(SpanExporter):
        """Accepts every span and sends it nowhere."""

        def __init__(self) -> None:
            self.spans = 0

        def export(self, spans: Any) -> SpanExportResult:
            self.spans += len(spans)
            return SpanExportResult.SUCCESS

    exporter = DropExporter()
    observability.configure_tracing(
        exporter=exporter, span_processor="simple", instrument_llama_index=False
    )
    once = make_chain(api)

    async def checked(n: int) -> dict[str, float]:
        before = exporter.spans
        figures = await once(n)
        # one run span and one span per step execution (n loop steps + the first step)
        check("spans exported", exporter.spans - before, n + 2)
        return figures

    return checked


def make_durable(api: Api) -> Once:
    """The chain with every step checkpointed to a SQLite file."""
    _batonflow_only(api)
    checkpoints = _need(
        "batonflow.core.checkpoints", "SqliteCheckpointStore", "WorkflowCheckpointer"
    )
    folder = tempfile.mkdtemp(prefix="batonflow-bench-")
    store = checkpoints.SqliteCheckpointStore(os.path.join(folder, "checkpoints.db"))

    made: list[Any] = []

    def wrap(flow: Any) -> Any:
        made.append(checkpoints.WorkflowCheckpointer(workflow=flow, store=store))
        return made[0]

    def after(handler: Any, n: int) -> None:
        # one checkpoint per completed step: the first step and the n loop steps
        listed = made[0].checkpoints[handler.run_id]
        check("checkpoints recorded", len(listed), n + 1)

    return make_chain(api, wrap=wrap, after=after)


EXTRA_WORKLOADS: dict[str, Callable[[Api], Once]] = {
    "tracing_off": make_tracing_off,
    "tracing_nosdk": make_tracing_nosdk,
    "tracing_on": make_tracing_on,
    "durable": make_durable,
}
