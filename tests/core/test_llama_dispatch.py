"""Runs and steps reach llama-index instrumentation handlers as LlamaIndex's engine sends them.

The expected records below are what llama-index-workflows 2.26.1 emitted for the same
workflows to the same handlers (span ids and run ids normalized).
"""

import asyncio
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.span import SimpleSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from llama_index_instrumentation.dispatcher import active_instrument_tags

ROOT = Path(__file__).resolve().parents[2]
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _norm(value: Any) -> Any:
    return None if value is None else UUID.sub("<uuid>", str(value))


def _tags(tags: dict[str, Any] | None) -> dict[str, Any] | None:
    if tags is None:
        return None
    return {k: "<run>" if k == "llamaindex.run_id" else v for k, v in tags.items()}


class Spans(BaseSpanHandler[SimpleSpan]):
    """Records every span the dispatcher reports."""

    log: list[tuple[Any, ...]] = []
    run_ids: set[str] = set()

    def new_span(self, id_, bound_args, instance=None, parent_span_id=None, tags=None, **kw):
        active = active_instrument_tags.get()
        self.run_ids.add(active.get("llamaindex.run_id"))
        entry = ("enter", _norm(id_), _norm(parent_span_id), sorted(bound_args.arguments))
        self.log.append((*entry, type(instance).__name__, _tags(tags), _tags(active)))
        return SimpleSpan(id_=id_, parent_id=parent_span_id, tags=tags or {})

    def prepare_to_exit_span(self, id_, bound_args, instance=None, result=None, **kw):
        self.log.append(("exit", _norm(id_), type(result).__name__))

    def prepare_to_drop_span(self, id_, bound_args, instance=None, err=None, **kw):
        self.log.append(("drop", _norm(id_), type(err).__name__))


class Events(BaseEventHandler):
    """Records every event the dispatcher reports."""

    log: list[tuple[Any, ...]] = []

    @classmethod
    def class_name(cls) -> str:
        return "Events"

    def handle(self, event, **kw):
        skip = ("timestamp", "id_", "span_id", "tags", "class_name")
        payload = {k: v for k, v in event.model_dump().items() if k not in skip}
        self.log.append(
            ("event", event.class_name(), _norm(event.span_id), payload, _tags(event.tags))
        )


@pytest.fixture
def recorded() -> Iterator[list[tuple[Any, ...]]]:
    """A span and an event handler on the root dispatcher, writing to one log."""
    root = get_dispatcher()
    log: list[tuple[Any, ...]] = []
    spans, events = Spans(), Events()
    spans.log = events.log = log
    spans.run_ids = set()
    root.add_span_handler(spans)
    root.add_event_handler(events)
    try:
        yield log
    finally:
        root.span_handlers = [h for h in root.span_handlers if h is not spans]
        root.event_handlers = [h for h in root.event_handlers if h is not events]


inner = get_dispatcher("user.code")


@inner.span
async def tool(x: str) -> str:
    return x


class Mid(Event):
    text: str


class Flow(Workflow):
    @step
    async def first(self, ctx: Context, ev: StartEvent) -> Mid:
        await tool(ev.topic)
        return Mid(text="m")

    @step
    def second(self, ev: Mid) -> StopEvent:
        return StopEvent(result="done " + ev.text)


class Bad(Workflow):
    @step
    async def boom(self, ev: StartEvent) -> StopEvent:
        raise ValueError("bad")


class Slow(Workflow):
    @step
    async def slow(self, ev: StartEvent) -> StopEvent:
        await asyncio.sleep(30)
        return StopEvent()


RUN = {"llamaindex.run_id": "<run>"}


def _step_tags(event: str, summary: str) -> dict[str, str]:
    return {
        **RUN,
        "llamaindex.step.input_event": event,
        "llamaindex.step.input_summary": summary,
    }


START = _step_tags("StartEvent", "StartEvent()")
RUN_ARGS = ["init_state", "start_event", "tags"]


async def test_a_run_and_its_steps_are_spans_and_events(recorded) -> None:
    """Spans nest caller code under the step under the run; the step's tags are active."""
    handler = Flow().run(topic="t")
    assert await handler == "done m"
    first = _step_tags("StartEvent", "StartEvent(topic='t')")
    second = _step_tags("Mid", "Mid(text='m')")
    assert recorded == [
        ("enter", "Flow.run-<uuid>", None, RUN_ARGS, "Flow", None,
         {**RUN, "llamaindex.start_event": "StartEvent(topic='t')"}),
        ("enter", "Flow.first-<uuid>", "Flow.run-<uuid>", ["ctx", "ev"], "NoneType", first, first),
        ("enter", "tool-<uuid>", "Flow.first-<uuid>", ["x"], "NoneType", first, first),
        ("exit", "tool-<uuid>", "str"),
        ("event", "step.output", "Flow.first-<uuid>", {"output": "Mid(text='m')"}, first),
        ("exit", "Flow.first-<uuid>", "Mid"),
        ("enter", "Flow.second-<uuid>", "Flow.run-<uuid>", ["ev"], "NoneType", second, second),
        ("event", "step.output", "Flow.second-<uuid>",
         {"output": "StopEvent(result='done m')"}, second),
        ("exit", "Flow.second-<uuid>", "StopEvent"),
        ("event", "workflow.output", "Flow.run-<uuid>",
         {"output": "StopEvent(result='done m')"}, RUN),
        ("exit", "Flow.run-<uuid>", "StopEvent"),
    ]  # fmt: skip


async def test_failed_and_cancelled_runs(recorded) -> None:
    """A failing step drops its span and the run's; a cancelled run exits both, cancelled."""
    with pytest.raises(ValueError, match="bad"):
        await Bad().run()
    handler = Slow().run()
    while not any(entry[:2] == ("enter", "Slow.slow-<uuid>") for entry in recorded):
        await asyncio.sleep(0.01)
    await handler.cancel_run()
    with pytest.raises(Exception, match="cancelled"):
        await handler
    assert recorded == [
        ("enter", "Bad.run-<uuid>", None, RUN_ARGS, "Bad", None,
         {**RUN, "llamaindex.start_event": "StartEvent()"}),
        ("enter", "Bad.boom-<uuid>", "Bad.run-<uuid>", ["ev"], "NoneType", START, START),
        ("event", "SpanDropEvent", "Bad.boom-<uuid>", {"err_str": "bad"}, START),
        ("drop", "Bad.boom-<uuid>", "ValueError"),
        ("event", "SpanDropEvent", "Bad.run-<uuid>", {"err_str": "bad"}, RUN),
        ("drop", "Bad.run-<uuid>", "ValueError"),
        ("enter", "Slow.run-<uuid>", None, RUN_ARGS, "Slow", None,
         {**RUN, "llamaindex.start_event": "StartEvent()"}),
        ("enter", "Slow.slow-<uuid>", "Slow.run-<uuid>", ["ev"], "NoneType", START, START),
        ("event", "SpanCancelledEvent", "Slow.slow-<uuid>", {"reason": "step cancelled"}, START),
        ("exit", "Slow.slow-<uuid>", "NoneType"),
        ("event", "SpanCancelledEvent", "Slow.run-<uuid>",
         {"reason": "workflow cancelled by user"}, RUN),
        ("exit", "Slow.run-<uuid>", "NoneType"),
    ]  # fmt: skip


async def test_the_run_id_tag_is_the_runs(recorded) -> None:
    """``llamaindex.run_id`` is the handler's ``run_id``."""
    handler = Flow().run(topic="t", run_id="my-run")
    await handler
    spans = next(h for h in get_dispatcher().span_handlers if isinstance(h, Spans))
    assert spans.run_ids == {"my-run"}


def _in_fresh_python(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.strip()


HELLO = (
    "import asyncio, sys\n"
    "from batonflow.core import StartEvent, StopEvent, Workflow, step\n"
    "class Hello(Workflow):\n"
    "    @step\n"
    "    async def hello(self, ev: StartEvent) -> StopEvent:\n"
    "        return StopEvent(result='hi')\n"
    "async def run(w):\n"
    "    return await w.run()\n"
)


async def test_nothing_is_loaded_or_watched_without_a_handler() -> None:
    """Without llama-index loaded nothing of it is imported; loaded with no handler attached,
    the instrument leaves every run (its hooks cost nothing)."""
    out = _in_fresh_python(
        HELLO
        + "asyncio.run(run(Hello()))\n"
        + "print([m for m in sys.modules if m.startswith('llama_index')])\n"
    )
    assert out == "[]"
    out = _in_fresh_python(
        HELLO
        + "import llama_index.core.instrumentation\n"
        + "w = Hello()\n"
        + "assert asyncio.run(run(w)) == 'hi'\n"
        + "full = w._instrument_set()\n"
        + "print([type(i).__name__ for i in full.instruments],"
        + " full.for_run('r', 'Hello').instruments)\n"
    )
    assert out == "['LlamaDispatchInstrument'] ()"
