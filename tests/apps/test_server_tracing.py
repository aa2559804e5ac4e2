"""A W3C traceparent on POST /workflows/{name}/runs makes the run part of the caller's trace."""

from __future__ import annotations

import pytest
from batonflow.observability import configure_tracing
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    handle = configure_tracing(
        exporter=exporter, span_processor="simple", instrument_llama_index=False
    )
    yield exporter
    handle.shutdown()


def test_run_joins_the_callers_trace(spans, start_server):
    """The run span has the caller's trace id and the caller's span as parent."""
    _, client = start_server()
    response = client.post(
        "/workflows/echo/runs",
        params={"wait": True},
        json={"a": 1},
        headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"},
    )
    assert response.json()["status"] == "completed"
    runs = [s for s in spans.get_finished_spans() if s.name.startswith("invoke_workflow")]
    assert len(runs) == 1
    run = runs[0]
    assert format(run.context.trace_id, "032x") == TRACE_ID
    assert run.parent is not None and format(run.parent.span_id, "016x") == PARENT_ID
    steps = [s for s in spans.get_finished_spans() if s.name.startswith("step ")]
    assert steps and all(format(s.context.trace_id, "032x") == TRACE_ID for s in steps)


def test_run_without_traceparent_starts_its_own_trace(spans, start_server):
    """Without the header the run is the root of a new trace."""
    _, client = start_server()
    client.post("/workflows/echo/runs", params={"wait": True}, json={})
    run = next(s for s in spans.get_finished_spans() if s.name.startswith("invoke_workflow"))
    assert run.parent is None
    assert format(run.context.trace_id, "032x") != TRACE_ID
