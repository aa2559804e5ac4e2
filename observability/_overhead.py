"""Measure what tracing costs per step: ``python -m batonflow.observability._overhead``.

Runs one workflow that loops through ``--steps`` step executions, in four set-ups:

* ``bare``: no instrument at all (the engine's floor);
* ``instrument, no SDK``: the OpenTelemetryInstrument installed while no SDK is configured
  (the global provider is OpenTelemetry's no-op default);
* ``SDK, drop exporter``: ``configure_tracing()`` with a batch processor and an exporter that
  drops everything (the cost of building and ending real spans);
* ``SDK + LLM handlers``: the same plus the llama-index dispatcher handlers installed.

Prints the median time per step over ``--repeat`` runs. Not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Sequence

from batonflow.core import Event, StartEvent, StopEvent, Workflow
from batonflow.core.instrument import Instrument
from batonflow.core.step import step
from batonflow.core.tracing import OpenTelemetryInstrument
from batonflow.observability import configure_tracing
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


class _Tick(Event):
    n: int


class _Loop(Workflow):
    @step
    async def begin(self, ev: StartEvent) -> _Tick:
        return _Tick(n=0)

    @step
    async def tick(self, ev: _Tick) -> _Tick | StopEvent:
        if ev.n >= self.limit:
            return StopEvent(result=ev.n)
        return _Tick(n=ev.n + 1)

    limit = 0


class _Drop(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


async def _per_step(steps: int, repeat: int, instruments: Sequence[Instrument]) -> float:
    _Loop.limit = steps
    wf = _Loop(instruments=list(instruments), timeout=None)
    await wf.run()  # warm-up
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        await wf.run()
        samples.append((time.perf_counter() - start) / (steps + 2))
    return statistics.median(samples)


async def _main(steps: int, repeat: int) -> None:
    rows: list[tuple[str, float]] = []
    rows.append(("bare (no instrument)", await _per_step(steps, repeat, [])))
    rows.append(("instrument, no SDK", await _per_step(steps, repeat, [OpenTelemetryInstrument()])))
    with configure_tracing(exporter=_Drop(), span_processor="batch", instrument_llama_index=False):
        rows.append(("SDK, drop exporter", await _per_step(steps, repeat, [])))
    with configure_tracing(exporter=_Drop(), span_processor="batch", instrument_llama_index=True):
        rows.append(("SDK + LLM handlers", await _per_step(steps, repeat, [])))
    base = rows[0][1]
    print(f"{steps} steps per run, median of {repeat} runs")
    for name, value in rows:
        print(f"{name:24s} {value * 1e6:8.2f} µs/step  ({(value / base - 1) * 100:+6.1f} %)")


def main(argv: Sequence[str] | None = None) -> None:
    """Run the measurement and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    asyncio.run(_main(args.steps, args.repeat))


if __name__ == "__main__":
    main()
