"""Workflow spans: the exact span tree, links and statuses for real batonflow runs."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from batonflow.core import (
    Context,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    retry_policy,
    stop_after_attempt,
    wait_fixed,
)
from batonflow.core.instrument import StepStarted
from batonflow.core.step import step
from batonflow.core.tracing import OpenTelemetryInstrument, tool_span
from batonflow.observability.genai import instrument_llama_index
from llama_index.core.base.llms.types import ChatMessage
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import NoOpTracerProvider, StatusCode
from otel_testing import ScriptedLLM, Spans


class Mid(Event):
    x: int


class Work(Event):
    i: int


class Done(Event):
    i: int


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _links(span: ReadableSpan) -> list[tuple[int, str]]:
    return [
        (link.context.span_id, str((link.attributes or {})["batonflow.link.kind"]))
        for link in span.links
    ]


def _traced(spans: Spans) -> list[OpenTelemetryInstrument]:
    return [OpenTelemetryInstrument(tracer_provider=spans.provider)]


class Linear(Workflow):
    @step
    async def first(self, ev: StartEvent) -> Mid:
        return Mid(x=ev.get("x", 1))

    @step
    async def second(self, ev: Mid) -> StopEvent:
        return StopEvent(result=ev.x * 2)


async def test_linear_flow_span_tree(spans: Spans) -> None:
    """A two-step run is one run span with one child span per step, the second linked to the first."""
    handler = Linear(instruments=_traced(spans)).run(x=21)
    assert await handler == 42
    assert spans.tree() == "invoke_workflow Linear\n  step first\n  step second"
    run, first, second = (
        spans.one(n) for n in ("invoke_workflow Linear", "step first", "step second")
    )
    assert _attrs(run) == {
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.workflow.name": "Linear",
        "batonflow.run_id": handler.run_id,
        "batonflow.run.resumed": False,
        "batonflow.run.status": "completed",
    }
    assert _attrs(second) == {
        "batonflow.step.name": "second",
        "batonflow.run_id": handler.run_id,
        "batonflow.step.execution_id": _attrs(second)["batonflow.step.execution_id"],
        "batonflow.step.attempt": 1,
        "batonflow.step.input_event": "Mid",
        "batonflow.step.output_events": ("StopEvent",),
    }
    assert _attrs(first)["batonflow.step.input_event"] == "StartEvent"
    assert _attrs(first)["batonflow.step.output_events"] == ("Mid",)
    assert first.links == ()
    assert _links(second) == [(first.context.span_id, "triggered_by")]
    assert {s.status.status_code for s in spans.finished} == {StatusCode.UNSET}
    assert handler.ctx.meta["traceparent"].split("-")[1:3] == [
        f"{run.context.trace_id:032x}",
        f"{run.context.span_id:016x}",
    ]


class Fan(Workflow):
    @step
    async def scatter(self, ctx: Context, ev: StartEvent) -> Work | None:
        for i in range(10):
            ctx.send_event(Work(i=i))
        return None

    @step(num_workers=10)
    async def work(self, ev: Work) -> Done:
        await asyncio.sleep(0.05 + 0.005 * (10 - ev.i))  # overlap, then finish in reverse order
        return Done(i=ev.i)

    @step
    async def gather(self, ctx: Context, ev: Done) -> StopEvent | None:
        done = ctx.collect_events(ev, [Done] * 10)
        if done is None:
            return None
        return StopEvent(result=sorted(d.i for d in done))


async def test_fan_out_and_collect_join(spans: Spans) -> None:
    """10 concurrent workers and a join: all spans in one trace, parented by the run, linked by cause."""
    assert await Fan(instruments=_traced(spans)).run() == list(range(10))
    run = spans.one("invoke_workflow Fan")
    scatter = spans.one("step scatter")
    workers = spans.named("step work")
    gathers = spans.named("step gather")
    assert len(workers) == 10 and len(gathers) == 10 and len(spans.finished) == 22
    assert {s.context.trace_id for s in spans.finished} == {run.context.trace_id}
    for span in [scatter, *workers, *gathers]:
        assert span.parent is not None and span.parent.span_id == run.context.span_id
    # workers overlapped in time: they really ran concurrently
    assert max(w.start_time for w in workers) < min(w.end_time for w in workers)
    assert _attrs(scatter)["batonflow.step.sent_events"] == ("Work",) * 10
    assert _attrs(scatter)["batonflow.step.output_events"] == ()
    for worker in workers:
        assert _links(worker) == [(scatter.context.span_id, "triggered_by")]
        assert "batonflow.step.sent_events" not in _attrs(worker)
    worker_ids = {w.context.span_id for w in workers}
    (final,) = [g for g in gathers if _attrs(g)["batonflow.step.output_events"] == ("StopEvent",)]
    assert {sid for sid, _ in _links(final)} == worker_ids
    assert sorted(kind for _, kind in _links(final)) == ["joined"] * 9 + ["triggered_by"]
    (joined,) = [e for e in final.events if e.name == "batonflow.events_joined"]
    assert (joined.attributes or {})["batonflow.joined.event_types"] == ("Done",) * 10
    for partial in gathers:
        if partial is not final:
            assert _attrs(partial)["batonflow.step.output_events"] == ()
            assert len(partial.links) == 1 and _links(partial)[0][0] in worker_ids


class Flaky(Workflow):
    calls = 0

    @step(retry_policy=retry_policy(wait=wait_fixed(0), stop=stop_after_attempt(3)))
    async def flaky(self, ev: StartEvent) -> StopEvent:
        Flaky.calls += 1
        if Flaky.calls == 1:
            raise ConnectionError("first try fails")
        return StopEvent(result="ok")


async def test_retried_step_has_one_span_per_attempt(spans: Spans) -> None:
    """A retry shows as a failed attempt span followed by a successful one, both under the run."""
    Flaky.calls = 0
    assert await Flaky(instruments=_traced(spans)).run() == "ok"
    assert spans.tree() == "invoke_workflow Flaky\n  step flaky\n  step flaky"
    first, second = sorted(spans.named("step flaky"), key=lambda s: s.start_time)
    assert _attrs(first)["batonflow.step.attempt"] == 1
    assert _attrs(second)["batonflow.step.attempt"] == 2
    assert (
        _attrs(first)["batonflow.step.execution_id"]
        == _attrs(second)["batonflow.step.execution_id"]
    )
    assert first.status.status_code is StatusCode.ERROR
    assert _attrs(first)["error.type"] == "ConnectionError"
    assert _attrs(first)["batonflow.step.will_retry"] is True
    assert [e.name for e in first.events] == ["exception"]
    assert second.status.status_code is StatusCode.UNSET
    assert spans.one("invoke_workflow Flaky").status.status_code is StatusCode.UNSET


class Broken(Workflow):
    @step
    async def explode(self, ev: StartEvent) -> StopEvent:
        raise KeyError("missing")


async def test_failing_step_marks_step_and_run(spans: Spans) -> None:
    """A step that raises gives ERROR on its span and on the run span, with error.type."""
    with pytest.raises(KeyError):
        await Broken(instruments=_traced(spans)).run()
    assert spans.tree() == "invoke_workflow Broken\n  step explode"
    step_span, run = spans.one("step explode"), spans.one("invoke_workflow Broken")
    for span in (step_span, run):
        assert span.status.status_code is StatusCode.ERROR
        assert _attrs(span)["error.type"] == "KeyError"
        exc = [e for e in span.events if e.name == "exception"]
        assert (exc[0].attributes or {})["exception.type"] == "KeyError"
    assert "batonflow.step.will_retry" not in _attrs(step_span)
    assert _attrs(run)["batonflow.run.status"] == "failed"


class SyncSteps(Workflow):
    threads: list[str] = []

    @step
    def think(self, ev: StartEvent) -> Mid:
        SyncSteps.threads.append(threading.current_thread().name)
        tracer = trace.get_tracer("fake-llm")  # the global (no-op) provider: must not matter
        with tracer.start_as_current_span("ignored"):
            pass
        with tool_span("lookup", call_id="call-1"):
            pass
        ScriptedLLM().chat([ChatMessage(role="user", content="hi")])
        return Mid(x=1)

    @step
    async def finish(self, ev: Mid) -> StopEvent:
        await ScriptedLLM().achat([ChatMessage(role="user", content="bye")])
        return StopEvent(result="done")


async def test_sync_step_children_nest_under_the_step_span(spans: Spans) -> None:
    """LLM and tool spans made inside a sync step (in its thread) are children of its step span."""
    undo = instrument_llama_index(spans.provider)
    try:
        SyncSteps.threads = []
        assert await SyncSteps(instruments=_traced(spans)).run() == "done"
    finally:
        undo()
    assert SyncSteps.threads and SyncSteps.threads[0] != threading.current_thread().name
    assert spans.tree() == (
        "invoke_workflow SyncSteps\n"
        "  step think\n"
        "    execute_tool lookup\n"
        "    chat scripted-1\n"
        "  step finish\n"
        "    chat scripted-1"
    )
    chat = spans.named("chat scripted-1")[0]
    assert _attrs(chat)["gen_ai.usage.input_tokens"] == 7
    assert _attrs(chat)["gen_ai.usage.output_tokens"] == 2
    tool = spans.one("execute_tool lookup")
    assert _attrs(tool)["gen_ai.tool.call.id"] == "call-1"


class Ask(Workflow):
    @step
    async def ask(self, ev: StartEvent) -> InputRequiredEvent:
        return InputRequiredEvent(prefix="name?")

    @step
    async def answer(self, ev: HumanResponseEvent) -> StopEvent:
        return StopEvent(result=f"hello {ev.response}")


async def test_resumed_run_continues_the_same_trace(spans: Spans) -> None:
    """A run restored from to_dict() (fresh workflow and instrument) joins the original trace."""
    handler = Ask(instruments=_traced(spans)).run()
    async for ev in handler.stream_events():
        if isinstance(ev, InputRequiredEvent):
            break
    data = json.loads(json.dumps(handler.ctx.to_dict()))  # as if stored and read back
    await handler.cancel_run()
    original = spans.one("invoke_workflow Ask")
    traceparent = f"00-{original.context.trace_id:032x}-{original.context.span_id:016x}-"
    assert traceparent in json.dumps(data)

    resumed_wf = Ask(instruments=_traced(spans))  # nothing shared with the first process
    resumed = resumed_wf.run(ctx=Context.from_dict(resumed_wf, data))
    resumed.ctx.send_event(HumanResponseEvent(response="bob"))
    assert await resumed == "hello bob"

    assert spans.tree() == (
        "invoke_workflow Ask\n  step ask\n  invoke_workflow Ask\n    step answer"
    )
    second = [s for s in spans.named("invoke_workflow Ask") if s is not original][0]
    assert second.context.trace_id == original.context.trace_id
    assert _attrs(second)["batonflow.run.resumed"] is True
    assert _attrs(original)["batonflow.run.status"] == "cancelled"
    assert {s.context.trace_id for s in spans.finished} == {original.context.trace_id}


async def test_untraced_instrument_costs_no_spans() -> None:
    """With no SDK anywhere, the instrument records nothing and the run works normally."""
    instrument = OpenTelemetryInstrument()  # global provider: the API's no-op default
    handler = Linear(instruments=[instrument]).run()
    assert await handler == 2
    assert "traceparent" not in handler.ctx.meta
    assert instrument._runs == {}


async def test_instrument_without_sdk_is_left_out_of_runs(spans: Spans) -> None:
    """With no SDK provider the instrument declines every run (``wants_run``), so the engine
    never calls its hooks; with an SDK provider it watches them."""

    class Counting(OpenTelemetryInstrument):
        calls = 0

        def step_started(self, record: StepStarted) -> None:
            Counting.calls += 1
            super().step_started(record)

    untraced = Counting()  # global provider: the API's proxy, no SDK behind it
    assert untraced.wants_run("r1", "Linear") is False
    assert Counting(tracer_provider=NoOpTracerProvider()).wants_run("r1", "Linear") is False
    assert await Linear(instruments=[untraced]).run() == 2
    assert Counting.calls == 0
    traced = Counting(tracer_provider=spans.provider)
    assert traced.wants_run("r1", "Linear") is True
    assert await Linear(instruments=[traced]).run() == 2
    assert Counting.calls == 2


class Slow(Workflow):
    @step
    async def hang(self, ev: StartEvent) -> StopEvent:
        await asyncio.sleep(30)
        return StopEvent(result="never")


async def test_timed_out_run_closes_every_span(spans: Spans) -> None:
    """A run that times out ends its run span as ERROR and leaves no step span open."""
    from batonflow.core import WorkflowTimeoutError

    with pytest.raises(WorkflowTimeoutError):
        await Slow(instruments=_traced(spans), timeout=0.05).run()
    assert spans.tree() == "invoke_workflow Slow\n  step hang"
    run, hang = spans.one("invoke_workflow Slow"), spans.one("step hang")
    assert run.status.status_code is StatusCode.ERROR
    assert _attrs(run)["batonflow.run.status"] == "timed_out"
    assert hang.status.status_code is StatusCode.ERROR
    assert hang.end_time is not None and hang.end_time <= run.end_time


async def test_run_nests_under_the_callers_span(spans: Spans) -> None:
    """A run started inside an open span (an HTTP request, say) is that span's child."""
    tracer = spans.provider.get_tracer("app")
    with tracer.start_as_current_span("POST /runs"):
        await Linear(instruments=_traced(spans)).run()
    assert spans.tree() == ("POST /runs\n  invoke_workflow Linear\n    step first\n    step second")


async def test_concurrent_runs_get_separate_traces(spans: Spans) -> None:
    """Two runs at once through one instrument give two traces that do not mix."""
    instruments = _traced(spans)
    wf = Linear(instruments=instruments)
    await asyncio.gather(wf.run(x=1), wf.run(x=2))
    runs = spans.named("invoke_workflow Linear")
    assert len(runs) == 2 and runs[0].context.trace_id != runs[1].context.trace_id
    for run in runs:
        children = [
            s for s in spans.finished if s.parent and s.parent.span_id == run.context.span_id
        ]
        assert sorted(s.name for s in children) == ["step first", "step second"]
        assert {s.context.trace_id for s in children} == {run.context.trace_id}
    assert instruments[0]._runs == {}


def test_importing_tracing_loads_no_sdk_and_no_llama_index() -> None:
    """batonflow.core.tracing and batonflow.observability stay off the SDK / llama-index import."""
    import subprocess
    import sys

    code = (
        "import sys, batonflow.core.tracing; "
        "assert 'opentelemetry.sdk' not in sys.modules, 'sdk'; "
        "import batonflow.observability; "
        "assert not [m for m in sys.modules if m.startswith('llama_index')], 'llama'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


class CrashOnce(Workflow):
    crashed = False

    @step
    async def first(self, ev: StartEvent) -> Mid:
        return Mid(x=1)

    @step
    async def second(self, ev: Mid) -> StopEvent:
        if not CrashOnce.crashed:
            CrashOnce.crashed = True
            raise RuntimeError("crash")
        return StopEvent(result=ev.x)


async def test_checkpoint_resume_continues_the_trace(spans: Spans) -> None:
    """cptr.resume(run_id) after a failure hangs the resumed run under the original run span."""
    from batonflow.core.checkpoints import WorkflowCheckpointer

    CrashOnce.crashed = False
    cptr = WorkflowCheckpointer(workflow=CrashOnce(instruments=_traced(spans)))
    handler = cptr.run()
    with pytest.raises(RuntimeError, match="crash"):
        await handler
    assert await cptr.resume(handler.run_id) == 1
    assert spans.tree() == (
        "invoke_workflow CrashOnce\n"
        "  step first\n"
        "  step second\n"
        "  invoke_workflow CrashOnce\n"
        "    step second"
    )
    original, resumed = sorted(spans.named("invoke_workflow CrashOnce"), key=lambda s: s.start_time)
    assert _attrs(original)["batonflow.run.status"] == "failed"
    assert _attrs(resumed)["batonflow.run.resumed"] is True
    assert _attrs(resumed)["batonflow.run_id"] == _attrs(original)["batonflow.run_id"]
    assert {s.context.trace_id for s in spans.finished} == {original.context.trace_id}
