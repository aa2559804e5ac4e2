"""``verbose=True`` prints what llama-index-workflows 2.26 prints (each line checked there)."""

import asyncio
import logging

import pytest
from batonflow.core import (
    Context,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    step,
)
from batonflow.core.retry_policy import retry_policy, stop_after_attempt, wait_fixed


class Said(Event):
    text: str = "a"


class Scored(StopEvent):
    answer: str
    score: float = 0.5


class Flaky(Workflow):
    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.attempts = 0

    @step(retry_policy=retry_policy(wait=wait_fixed(0), stop=stop_after_attempt(3)))
    async def flaky(self, ev: StartEvent) -> Scored:
        self.attempts += 1
        if self.attempts < 2:
            raise ValueError("boom")
        return Scored(answer="x" * 80, score=1, extra={"a": 1, "b": 2, "c": 3, "d": 4})


class Slow(Workflow):
    @step
    async def slow(self, ev: StartEvent) -> StopEvent:
        await asyncio.sleep(30)
        return StopEvent()


class Ask(Workflow):
    @step
    async def ask(self, ev: StartEvent) -> InputRequiredEvent:
        return InputRequiredEvent(prefix="Name? ")

    @step
    async def answer(self, ev: HumanResponseEvent) -> StopEvent:
        return StopEvent(result=f"hi {ev.response}")


class Targeted(Workflow):
    @step
    async def start(self, ctx: Context, ev: StartEvent) -> Said | None:
        ctx.send_event(Said(text="one"), step="one")
        return None

    @step
    async def one(self, ev: Said) -> StopEvent:
        return StopEvent(result=None)

    @step
    async def two(self, ev: Said) -> StopEvent:
        return StopEvent(result="two")


async def test_retried_step_and_a_typed_result(capsys: pytest.CaptureFixture[str]) -> None:
    """A failed attempt completes with no result; long values are cut as LlamaIndex cuts them."""
    await Flaky(verbose=True).run()
    assert capsys.readouterr().out.splitlines() == [
        "[tick] add: StartEvent()",
        "[flaky:0] started from StartEvent",
        "[flaky:0] complete with no result",
        "[flaky:0] started from StartEvent",
        "[result] Scored(answer='xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...', "
        "score=1.0, extra={4 keys})",
        "[flaky:0] complete with Scored",
    ]


@pytest.mark.parametrize(
    ("timeout", "line"),
    [
        pytest.param(0.2, "[tick] timeout: 0.2s", id="float"),
        pytest.param(1, "[tick] timeout: 1.0s", id="int"),
    ],
)
async def test_timeout_line(capsys: pytest.CaptureFixture[str], timeout: float, line: str) -> None:
    """A run that times out ends with the ``[tick] timeout`` line."""
    with pytest.raises(TimeoutError):
        await Slow(verbose=True, timeout=timeout).run()
    assert capsys.readouterr().out.splitlines() == [
        "[tick] add: StartEvent()",
        "[slow:0] started from StartEvent",
        line,
    ]


async def test_cancelled_line(capsys: pytest.CaptureFixture[str]) -> None:
    """A cancelled run ends with ``[tick] cancelled``."""
    handler = Slow(verbose=True).run()
    async for _ in handler.stream_events(expose_internal=True):
        break
    await handler.cancel_run()
    with pytest.raises(Exception, match="cancelled"):
        await handler
    assert capsys.readouterr().out.splitlines()[-1] == "[tick] cancelled"


async def test_human_in_the_loop_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """Events from outside are added too; HITL fields show only when given."""
    handler = Ask(verbose=True).run()
    async for ev in handler.stream_events():
        if isinstance(ev, InputRequiredEvent):
            handler.ctx.send_event(HumanResponseEvent(response="Ada"))
    assert await handler == "hi Ada"
    assert capsys.readouterr().out.splitlines() == [
        "[tick] add: StartEvent()",
        "[ask:0] started from StartEvent",
        "[ask:0] complete with InputRequiredEvent",
        "[tick] add: InputRequiredEvent(prefix='Name? ')",
        "[tick] add: HumanResponseEvent(response='Ada')",
        "[answer:0] started from HumanResponseEvent",
        "[result] StopEvent(result='hi Ada')",
        "[answer:0] complete with StopEvent",
    ]


async def test_an_event_sent_to_one_step_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    """``send_event(ev, step="one")`` is added ``-> one``; an empty result shows no field."""
    await Targeted(verbose=True, disable_validation=True).run()
    lines = capsys.readouterr().out.splitlines()
    assert "[tick] add: Said(text='one') -> one" in lines
    assert lines[-2:] == ["[result] StopEvent()", "[one:0] complete with StopEvent"]


async def test_lines_go_to_the_verbose_logger_when_it_is_enabled(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """With ``batonflow.verbose`` at INFO when the workflow is made, the lines are logged."""
    with caplog.at_level(logging.INFO, logger="batonflow.verbose"):
        handler = Ask(verbose=True).run()
        async for ev in handler.stream_events():
            if isinstance(ev, InputRequiredEvent):
                handler.ctx.send_event(HumanResponseEvent(response="Ada"))
        await handler
    assert capsys.readouterr().out == ""
    assert [r.getMessage() for r in caplog.records][:2] == [
        "[tick] add: StartEvent()",
        "[ask:0] started from StartEvent",
    ]
