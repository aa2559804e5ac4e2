"""Drawing the most recent execution of real runs (batonflow.core.drawing)."""

import re

import pytest
from batonflow.core.drawing import draw_most_recent_execution, draw_most_recent_execution_mermaid
from batonflow.core.events import (
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
)
from batonflow.core.step import step
from batonflow.core.workflow import Workflow
from drawing_flows import AskFlow, JokeEvent, JokeFlow, RetryEvent, RetryFlow


def svg_texts(page: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", page)


def titles(page: str) -> list[str]:
    return re.findall(r"<title>([^<]*)</title>", page)


async def test_recent_execution_counts_and_orders_steps(tmp_path):
    """The page says which steps ran, how often, and numbers the executions in order."""
    w = RetryFlow()
    assert await w.run() == "done"
    page = draw_most_recent_execution(w, filename=tmp_path / "recent.html")
    items = re.findall(r"<li><b>([^<]+)</b>", page)
    # StartEvent goes to attempt and never_runs; then attempt loops twice; finish ends it.
    assert sorted(items[:2]) == ["attempt", "never_runs"]
    assert items[2:] == ["attempt", "attempt", "finish"]
    assert (tmp_path / "recent.html").read_text() == page
    assert "×3" in svg_texts(page)  # attempt's badge
    assert any("ran 3 times" in t for t in titles(page))
    assert "Most recent execution: 5 step executions" in page


async def test_recent_execution_fades_steps_that_did_not_run():
    """A step that never ran is drawn faded and its tooltip says it ran 0 times."""

    class TwoWay(Workflow):
        @step
        async def go(self, ev: StartEvent) -> JokeEvent | RetryEvent:
            return JokeEvent(joke="x")

        @step
        async def left(self, ev: JokeEvent) -> StopEvent:
            return StopEvent(result="left")

        @step
        async def right(self, ev: RetryEvent) -> StopEvent:
            return StopEvent(result="right")

    w = TwoWay()
    assert await w.run() == "left"
    page = draw_most_recent_execution(w, filename=None)
    assert re.search(r'data-id="step:right" opacity="0.4"', page)
    assert not re.search(r'data-id="step:left" opacity', page)
    assert "step right\nran 0 times" in titles(page)


async def test_recent_execution_from_handler_in_mermaid(tmp_path):
    """The handler works too; Mermaid numbers the triggering edges in order."""
    w = RetryFlow()
    handler = w.run()
    await handler
    text = draw_most_recent_execution_mermaid(handler, filename=tmp_path / "recent.mmd")
    assert (tmp_path / "recent.mmd").read_text() == text
    assert '    step_attempt["attempt ×3"]' in text.splitlines()
    assert re.search(r'event_RetryEvent -->\|"#\d, #\d"\| step_attempt', text)
    assert "step_never_runs" in text  # it ran once, doing nothing


async def test_recent_execution_through_a_human(tmp_path):
    """A HITL run shows the trip through the external node."""
    w = AskFlow()
    handler = w.run()
    async for ev in handler.stream_events():
        if isinstance(ev, InputRequiredEvent):
            handler.ctx.send_event(HumanResponseEvent(response="Ada"))
    assert await handler == "hello Ada"
    text = draw_most_recent_execution_mermaid(handler, filename=None)
    assert "event_InputRequiredEvent --> external" in text
    assert "external --> event_HumanResponseEvent" in text
    assert 'event_HumanResponseEvent -->|"#2"| step_greet' in text


async def test_recent_execution_of_the_latest_run_only():
    """A second run replaces the first in the drawing of the workflow."""
    w = JokeFlow()
    await w.run(topic="a")
    await w.run(topic="b")
    page = draw_most_recent_execution(w, filename=None)
    assert len(re.findall(r"<li><b>", page)) == 2


async def test_recent_execution_of_a_failed_run_shows_what_completed():
    """When a step raises, the drawing shows the executions that completed before it."""

    class Boom(Workflow):
        @step
        async def fine(self, ev: StartEvent) -> JokeEvent:
            return JokeEvent(joke="x")

        @step
        async def explode(self, ev: JokeEvent) -> StopEvent:
            raise RuntimeError("boom")

    w = Boom()
    handler = w.run()
    with pytest.raises(RuntimeError, match="boom"):
        await handler
    text = draw_most_recent_execution_mermaid(handler, filename=None)
    assert '    step_fine["fine ×1"]' in text.splitlines()
    assert "step_explode" not in text


async def test_recent_execution_on_instance_with_attached_step():
    """Steps attached with @step(workflow=w) are drawn and counted."""

    class Base(Workflow):
        @step
        async def begin(self, ev: StartEvent) -> JokeEvent:
            return JokeEvent(joke="x")

    w = Base(disable_validation=True)  # completed below: Base alone has no StopEvent

    @step(workflow=w)
    async def end(ev: JokeEvent) -> StopEvent:
        return StopEvent(result=ev.joke)

    assert await w.run() == "x"
    page = draw_most_recent_execution(w, filename=None)
    assert re.findall(r"<li><b>([^<]+)</b>", page) == ["begin", "end"]


async def test_a_recorded_trace_draws_like_the_most_recent_execution(tmp_path):
    """draw_recorded_execution of a run's trace is the most-recent drawing under its own title."""
    from batonflow.core.drawing import draw_recorded_execution

    w = RetryFlow()
    handler = w.run()
    assert await handler == "done"
    names = [
        (s, i.__name__, [o.__name__ for o in outs]) for s, i, outs in handler.execution_trace()
    ]
    recorded = draw_recorded_execution(RetryFlow, names)
    recent = draw_most_recent_execution(w, filename=None)
    assert recorded.replace("Recorded run", "Most recent execution") == recent
    mermaid = draw_recorded_execution(w, names, filename=tmp_path / "run.mmd")
    assert mermaid == draw_most_recent_execution_mermaid(w, filename=None)
    assert (tmp_path / "run.mmd").read_text() == mermaid
    draw_recorded_execution(w, names, filename=tmp_path / "run.txt")
    assert (tmp_path / "run.txt").read_text() == recorded
