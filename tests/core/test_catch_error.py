"""``@catch_error`` handler steps: recover from a failed step, or fail the run clearly."""

from __future__ import annotations

import pytest
from batonflow.core import (
    ConstantDelayRetryPolicy,
    Event,
    StartEvent,
    StepFailedEvent,
    StopEvent,
    Workflow,
    WorkflowValidationError,
    catch_error,
    step,
)


class Work(Event):
    n: int


async def test_catch_all_handler_recovers_with_a_stop_event() -> None:
    """A failing step's StepFailedEvent reaches the wildcard handler, whose StopEvent ends the run."""
    seen: list[StepFailedEvent] = []

    class W(Workflow):
        @step(retry_policy=ConstantDelayRetryPolicy(delay=0, maximum_attempts=2))
        async def flaky(self, ev: StartEvent) -> StopEvent:
            raise ConnectionError("down")

        @catch_error
        async def recover(self, ev: StepFailedEvent) -> StopEvent:
            seen.append(ev)
            return StopEvent(result=f"recovered from {ev.step_name}")

    assert await W().run(x=1) == "recovered from flaky"
    (failed,) = seen
    assert failed.attempts == 2
    assert isinstance(failed.exception, ConnectionError)
    assert isinstance(failed.input_event, StartEvent) and failed.input_event.x == 1
    assert failed.failed_at.tzinfo is not None


async def test_handler_can_route_back_into_the_workflow() -> None:
    """A handler may return another event; max_recoveries bounds how often it helps."""
    calls = 0

    class W(Workflow):
        @step
        async def start(self, ev: StartEvent) -> Work:
            return Work(n=0)

        @step
        async def work(self, ev: Work) -> StopEvent:
            nonlocal calls
            calls += 1
            if ev.n < 2:
                raise ValueError(f"n={ev.n}")
            return StopEvent(result=ev.n)

        @catch_error(for_steps=["work"], max_recoveries=2)
        async def retry_bigger(self, ev: StepFailedEvent) -> Work:
            return Work(n=ev.input_event.n + 1)

    assert await W().run() == 2
    assert calls == 3


async def test_recoveries_run_out_and_the_run_fails() -> None:
    """Beyond max_recoveries the step's own exception fails the run."""

    class W(Workflow):
        @step
        async def start(self, ev: StartEvent) -> Work:
            return Work(n=0)

        @step
        async def work(self, ev: Work) -> StopEvent:
            raise ValueError(f"n={ev.n}")

        @catch_error(max_recoveries=1)
        async def again(self, ev: StepFailedEvent) -> Work:
            return Work(n=ev.input_event.n + 1)

    with pytest.raises(ValueError, match="n=1"):
        await W().run()


async def test_handler_that_raises_fails_the_run() -> None:
    """An exception from the handler itself fails the run with that exception."""

    class W(Workflow):
        @step
        async def bad(self, ev: StartEvent) -> StopEvent:
            raise ValueError("first")

        @catch_error
        async def handler(self, ev: StepFailedEvent) -> StopEvent:
            raise RuntimeError("handler gave up") from ev.exception

    with pytest.raises(RuntimeError, match="handler gave up"):
        await W().run()


async def test_scoped_handler_wins_over_wildcard() -> None:
    """A handler naming the step takes it; the wildcard takes the rest."""

    class W(Workflow):
        @step
        async def a(self, ev: StartEvent) -> Work:
            raise KeyError("a")

        @step
        async def b(self, ev: Work) -> StopEvent:
            return StopEvent()

        @catch_error(for_steps=["a"])
        async def for_a(self, ev: StepFailedEvent) -> StopEvent:
            return StopEvent(result="scoped")

        @catch_error
        async def everything(self, ev: StepFailedEvent) -> StopEvent:
            return StopEvent(result="wildcard")

    assert await W().run() == "scoped"


@pytest.mark.parametrize(
    "variant,match",
    [
        pytest.param(
            "two-wildcards", r"several @catch_error steps without for_steps", id="two-wildcards"
        ),
        pytest.param(
            "unknown-step", r"names step 'nope', which W does not have", id="unknown-step"
        ),
        pytest.param(
            "claimed-twice", r"Step a of W is handled by two @catch_error steps", id="claimed-twice"
        ),
    ],
)
async def test_bad_handler_configurations(variant: str, match: str) -> None:
    """Handler mistakes are validation errors naming the steps."""

    class W(Workflow):
        @step
        async def a(self, ev: StartEvent) -> StopEvent:
            return StopEvent()

    if variant == "two-wildcards":

        @catch_error
        async def h1(self: W, ev: StepFailedEvent) -> StopEvent:
            return StopEvent()

        @catch_error
        async def h2(self: W, ev: StepFailedEvent) -> StopEvent:
            return StopEvent()

    elif variant == "unknown-step":

        @catch_error(for_steps=["nope"])
        async def h1(self: W, ev: StepFailedEvent) -> StopEvent:
            return StopEvent()

        h2 = None
    else:

        @catch_error(for_steps=["a"])
        async def h1(self: W, ev: StepFailedEvent) -> StopEvent:
            return StopEvent()

        @catch_error(for_steps=["a"])
        async def h2(self: W, ev: StepFailedEvent) -> StopEvent:
            return StopEvent()

    W.add_step(h1)
    if h2 is not None:
        W.add_step(h2)
    with pytest.raises(WorkflowValidationError, match=match):
        W().validate()


async def test_handler_must_accept_step_failed_event() -> None:
    """A @catch_error step whose parameter is not StepFailedEvent is rejected."""
    with pytest.raises(WorkflowValidationError, match="does not accept StepFailedEvent"):

        class W(Workflow):
            @catch_error
            async def handler(self, ev: Work) -> StopEvent:
                return StopEvent()
