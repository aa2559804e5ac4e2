"""``@catch_error`` handler steps: recover from a failed step, or fail the run clearly."""

from __future__ import annotations

from typing import Any

import pytest
from batonflow.core import (
    Context,
    Event,
    StartEvent,
    StepFailedEvent,
    StepState,
    StepStateChanged,
    StopEvent,
    Workflow,
    WorkflowFailedEvent,
    WorkflowValidationError,
    catch_error,
    retry_policy,
    step,
    stop_after_attempt,
    wait_fixed,
)


class Work(Event):
    n: int


async def test_catch_all_handler_recovers_with_a_stop_event() -> None:
    """A failing step's StepFailedEvent reaches the wildcard handler, whose StopEvent ends the run."""
    seen: list[StepFailedEvent] = []

    class W(Workflow):
        @step(retry_policy=retry_policy(wait=wait_fixed(0), stop=stop_after_attempt(2)))
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


class Again(Event):
    pass


def chained_flow(max_recoveries: int, calls: list[str]) -> Workflow:
    """`a` fails, its handler sends Again, `retry_a` fails too: both are the handler's steps."""

    class Chain(Workflow):
        @step
        async def a(self, ev: StartEvent) -> StopEvent:
            calls.append("a")
            raise RuntimeError("a failed")

        @step
        async def retry_a(self, ev: Again) -> StopEvent:
            calls.append("retry_a")
            raise RuntimeError(f"retry_a failed {calls.count('retry_a')}")

        @catch_error(for_steps=["a", "retry_a"], max_recoveries=max_recoveries)
        async def handle(self, ev: StepFailedEvent) -> Again:
            calls.append("handle")
            return Again()

    return Chain()


@pytest.mark.parametrize("budget", [1, 2, 3])
async def test_max_recoveries_is_a_budget_per_lineage(budget: int) -> None:
    """max_recoveries=N: N recoveries along one chain of events, the next failure fails the run."""
    calls: list[str] = []
    with pytest.raises(RuntimeError, match=f"retry_a failed {budget}$"):
        await chained_flow(budget, calls).run()
    assert calls.count("handle") == budget
    assert calls == ["a", "handle"] + ["retry_a", "handle"] * (budget - 1) + ["retry_a"]


async def test_independent_branches_each_have_their_own_budget() -> None:
    """Failures on separate branches (fan-out items) are each recovered once with max_recoveries=1."""

    class Recovered(Event):
        n: int

    class FanOut(Workflow):
        @step
        async def start(self, ctx: Context, ev: StartEvent) -> Work | None:
            for n in range(3):
                ctx.send_event(Work(n=n))
            return None

        @step(num_workers=3)
        async def work(self, ev: Work) -> Recovered:
            raise ValueError(f"item {ev.n}")

        @catch_error(for_steps=["work"])
        async def rescue(self, ev: StepFailedEvent) -> Recovered:
            return Recovered(n=ev.input_event.n)

        @step
        async def gather(self, ctx: Context, ev: Recovered) -> StopEvent | None:
            done = ctx.collect_events(ev, [Recovered] * 3)
            return None if done is None else StopEvent(result=sorted(e.n for e in done))

    assert await FanOut().run() == [0, 1, 2]


async def test_unrecovered_failure_is_announced_on_the_stream() -> None:
    """A failure nothing recovers puts a WorkflowFailedEvent on the stream, then fails the run."""

    class W(Workflow):
        @step(retry_policy=retry_policy(wait=wait_fixed(0), stop=stop_after_attempt(2)))
        async def bad(self, ev: StartEvent) -> StopEvent:
            raise ValueError("boom")

    handler = W().run()
    seen = [ev async for ev in handler.stream_events()]
    with pytest.raises(ValueError, match="boom"):
        await handler
    (failed,) = [ev for ev in seen if isinstance(ev, WorkflowFailedEvent)]
    assert (failed.step_name, failed.attempts, str(failed.exception)) == ("bad", 2, "boom")


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
            "two-wildcards",
            r"^Only one wildcard @catch_error handler is allowed per workflow, found 2: h1, h2\. "
            r"Keep one handler without for_steps in W",
            id="two-wildcards",
        ),
        pytest.param(
            "unknown-step",
            r"^@catch_error handler 'h1' lists unknown step 'nope' in for_steps\. "
            r"Name steps of W: a\.$",
            id="unknown-step",
        ),
        pytest.param(
            "claimed-twice",
            r"^Step 'a' is claimed by two @catch_error handlers: 'h1' and 'h2'\. Name it in one",
            id="claimed-twice",
        ),
        pytest.param(
            "covers-handler",
            r"^@catch_error handler 'h1' cannot cover another handler step 'h2'\. .*remove 'h2'",
            id="covers-handler",
        ),
    ],
)
async def test_bad_handler_configurations(variant: str, match: str) -> None:
    """Handler mistakes are validation errors: LlamaIndex's sentence first, then the fix."""

    class W(Workflow):
        @step
        async def a(self, ev: StartEvent) -> StopEvent:
            return StopEvent()

    scopes = {
        "two-wildcards": (None, None),
        "unknown-step": (["nope"], ["a"]),
        "claimed-twice": (["a"], ["a"]),
        "covers-handler": (["h2"], ["a"]),
    }[variant]

    @catch_error(for_steps=scopes[0])
    async def h1(self: W, ev: StepFailedEvent) -> StopEvent:
        return StopEvent()

    @catch_error(for_steps=scopes[1])
    async def h2(self: W, ev: StepFailedEvent) -> StopEvent:
        return StopEvent()

    W.add_step(h1)
    W.add_step(h2)
    with pytest.raises(WorkflowValidationError, match=match):
        W().validate()


async def test_every_handler_problem_is_reported_at_once() -> None:
    """Several handler mistakes come in one error, one line each."""

    class W(Workflow):
        @step
        async def a(self, ev: StartEvent) -> StopEvent:
            return StopEvent()

        @catch_error
        async def h1(self, ev: StepFailedEvent) -> StopEvent:
            return StopEvent()

        @catch_error
        async def h2(self, ev: StepFailedEvent) -> StopEvent:
            return StopEvent()

        @catch_error(for_steps=["ghost", "h1"])
        async def h3(self, ev: StepFailedEvent) -> StopEvent:
            return StopEvent()

    with pytest.raises(WorkflowValidationError) as info:
        W().validate()
    lines = str(info.value).splitlines()
    assert [line.split(".")[0] for line in lines] == [
        "Only one wildcard @catch_error handler is allowed per workflow, found 2: h1, h2",
        "@catch_error handler 'h3' lists unknown step 'ghost' in for_steps",
        "@catch_error handler 'h3' cannot cover another handler step 'h1'",
    ]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        pytest.param(
            {"max_recoveries": 0},
            r"^@catch_error max_recoveries must be an integer >= 1, got 0; pass max_recoveries=1",
            id="zero-recoveries",
        ),
        pytest.param(
            {"max_recoveries": True},
            r"max_recoveries must be an integer >= 1, got True",
            id="bool-recoveries",
        ),
        pytest.param(
            {"for_steps": "a"},
            r"^@catch_error for_steps must be None or a list of step name strings, got 'a'; "
            r"pass e\.g\. for_steps=\['fetch'\]",
            id="string-for-steps",
        ),
        pytest.param(
            {"for_steps": ["a", 3]},
            r"for_steps must be None or a list of step name strings",
            id="non-string-step",
        ),
    ],
)
async def test_bad_catch_error_arguments_fail_at_decoration(kwargs: dict, match: str) -> None:
    """@catch_error(...) rejects bad max_recoveries and for_steps before any workflow exists."""
    with pytest.raises(WorkflowValidationError, match=match):
        catch_error(**kwargs)


async def _takes_work(self: Any, ev: Work) -> StopEvent:
    return StopEvent()


async def _takes_union(self: Any, ev: StepFailedEvent | Work) -> StopEvent:
    return StopEvent()


@pytest.mark.parametrize(
    "handler",
    [pytest.param(_takes_work, id="other-event"), pytest.param(_takes_union, id="union")],
)
async def test_handler_must_accept_step_failed_event(handler: Any) -> None:
    """A @catch_error step must take exactly StepFailedEvent (not another event, not a union)."""
    with pytest.raises(
        WorkflowValidationError,
        match=rf"^@catch_error handler '{handler.__name__}' must accept StepFailedEvent as its "
        r"event parameter\. Annotate it `ev: StepFailedEvent`",
    ):
        catch_error(handler)


async def test_a_recovered_step_reports_it_stopped_running() -> None:
    """On the internal stream, a step that failed and was recovered is reported running,
    then not running with no output (released after its failure), then the handler runs."""

    class W(Workflow):
        @step
        async def flaky(self, ev: StartEvent) -> StopEvent:
            raise ConnectionError("down")

        @catch_error
        async def recover(self, ev: StepFailedEvent) -> StopEvent:
            return StopEvent(result="recovered")

    handler = W().run()
    changes = [
        (ev.name, ev.step_state, ev.output_event_name)
        async for ev in handler.stream_events(expose_internal=True)
        if isinstance(ev, StepStateChanged) and ev.name == "flaky"
    ]
    assert await handler == "recovered"
    assert changes == [
        ("flaky", StepState.RUNNING, None),
        ("flaky", StepState.NOT_RUNNING, None),
    ]
