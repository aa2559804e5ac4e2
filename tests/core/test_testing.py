"""batonflow.core.testing: the test runner and the fake clock."""

from __future__ import annotations

import pytest
from batonflow.core import (
    Context,
    Event,
    StartEvent,
    StepStateChanged,
    StopEvent,
    Workflow,
    retry_policy,
    step,
    stop_after_attempt,
    wait_fixed,
)
from batonflow.core.testing import FakeTime, WorkflowTestRunner


class Progress(Event):
    n: int


class Counting(Workflow):
    @step
    async def count(self, ctx: Context, ev: StartEvent) -> StopEvent:
        for n in range(ev.upto):
            ctx.write_event_to_stream(Progress(n=n))
        await ctx.store.set("done", True)
        return StopEvent(result=ev.upto)


async def test_runner_collects_stream_and_result() -> None:
    """The runner returns every streamed event, counts per type, the result and the context."""
    result = await WorkflowTestRunner(Counting()).run(upto=3)
    assert result.result == 3
    assert result.event_types[Progress] == 3
    assert result.event_types[StepStateChanged] >= 2
    assert await result.ctx.store.get("done") is True


async def test_runner_excludes_and_hides_internal() -> None:
    """``expose_internal=False`` and ``exclude_events`` trim what is collected."""
    result = await WorkflowTestRunner(Counting()).run(
        start_event=StartEvent(upto=2), expose_internal=False, exclude_events=[StopEvent]
    )
    assert [type(e) for e in result.collected] == [Progress, Progress]


async def test_runner_raises_the_run_error() -> None:
    """A failing run raises from the runner."""

    class Bad(Workflow):
        @step
        async def bad(self, ev: StartEvent) -> StopEvent:
            raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        await WorkflowTestRunner(Bad()).run()


async def test_fake_time_makes_retries_instant() -> None:
    """FakeTime records retry delays and advances its clock instead of sleeping."""
    fake = FakeTime()
    calls = 0

    class Flaky(Workflow):
        @step(retry_policy=retry_policy(wait=wait_fixed(30), stop=stop_after_attempt(3)))
        async def flaky(self, ev: StartEvent) -> StopEvent:
            nonlocal calls
            calls += 1
            if calls < 3:
                raise ConnectionError("later")
            return StopEvent(result=calls)

    assert await Flaky(clock=fake.clock, sleep=fake.sleep).run() == 3
    assert fake.sleeps == [30, 30] and fake.now == 60
