"""Retry policies inside real runs (fake clock and sleep: no waiting)."""

import asyncio
from datetime import datetime

import pytest
from batonflow.core import (
    Context,
    Event,
    ExponentialBackoffRetryPolicy,
    StartEvent,
    StopEvent,
    Workflow,
    step,
)
from batonflow.core.errors import (
    StepTimeoutError,
    WorkflowConfigurationError,
    WorkflowRuntimeError,
)
from batonflow.core.retry import (
    RetryInfo,
    retry_if_exception_type,
    retry_policy,
    retry_seed,
    stop_after_attempt,
    stop_after_delay,
    wait_fixed,
    wait_random,
)


class FakeTime:
    """A clock that only moves when the workflow sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


class Job(Event):
    n: int


def flaky_workflow(policy, failures: int, error=ConnectionError, fake: FakeTime | None = None):
    """A workflow whose `work` step fails `failures` times, recording what it saw."""
    seen: list[tuple[int, RetryInfo]] = []

    class Flaky(Workflow):
        @step
        async def begin(self, ev: StartEvent) -> Job:
            return Job(n=7)

        @step(retry_policy=policy)
        async def work(self, ctx: Context, ev: Job) -> StopEvent:
            info = ctx.retry_info()
            seen.append((ev.n, info))
            if info.retry_number < failures:
                raise error(f"failure {info.retry_number + 1}")
            return StopEvent(result=f"ok after {info.retry_number} retries")

    fake = fake or FakeTime()
    return Flaky(clock=fake.clock, sleep=fake.sleep), seen, fake


async def test_step_is_retried_with_the_same_event() -> None:
    """A failing step re-runs on the same input until it succeeds."""
    w, seen, fake = flaky_workflow(retry_policy(wait=wait_fixed(5), stop=stop_after_attempt(3)), 2)
    assert await w.run() == "ok after 2 retries"
    assert [n for n, _ in seen] == [7, 7, 7]
    assert fake.sleeps == [5.0, 5.0]


async def test_retry_info_describes_the_last_failure() -> None:
    """ctx.retry_info() counts retries and carries the previous error and time."""
    w, seen, _ = flaky_workflow(retry_policy(wait=wait_fixed(2), stop=stop_after_attempt(5)), 2)
    await w.run()
    first, second, third = (info for _, info in seen)
    assert first == RetryInfo()
    assert second.retry_number == 1 and str(second.last_exception) == "failure 1"
    assert third.retry_number == 2 and str(third.last_exception) == "failure 2"
    assert third.elapsed_seconds == pytest.approx(2.0)
    assert isinstance(third.last_failed_at, datetime) and third.last_failed_at.tzinfo is not None


async def test_run_fails_with_the_last_exception_when_policy_gives_up() -> None:
    """After maximum_attempts the run raises the step's own last exception."""
    w, seen, fake = flaky_workflow(retry_policy(wait=wait_fixed(1), stop=stop_after_attempt(3)), 10)
    with pytest.raises(ConnectionError, match="^failure 3$"):
        await w.run()
    assert len(seen) == 3 and fake.sleeps == [1.0, 1.0]


async def test_no_policy_means_no_retry() -> None:
    """Without a retry policy the first failure fails the run."""
    w, seen, _ = flaky_workflow(None, 1)
    with pytest.raises(ConnectionError, match="failure 1"):
        await w.run()
    assert len(seen) == 1


async def test_exponential_backoff_delays_in_a_run() -> None:
    """The legacy ExponentialBackoffRetryPolicy warns, and its delays are the ones the run sleeps."""
    with pytest.warns(DeprecationWarning, match="ExponentialBackoffRetryPolicy is deprecated"):
        policy = ExponentialBackoffRetryPolicy(
            initial_delay=1, multiplier=3, max_delay=5, maximum_attempts=5, jitter=False
        )
    w, _, fake = flaky_workflow(policy, 4)
    assert await w.run() == "ok after 4 retries"
    assert fake.sleeps == [1.0, 3.0, 5.0, 5.0]


async def test_jitter_is_seeded_by_run_step_and_attempt() -> None:
    """The run passes next() a seed of (run id, step, attempt): a rerun with the same id waits alike."""
    policy = retry_policy(wait=wait_random(0, 100), stop=stop_after_attempt(5))
    sleeps = []
    for run_id in ("run-a", "run-a", "run-b"):
        w, _, fake = flaky_workflow(policy, 3)
        assert await w.run(run_id=run_id) == "ok after 3 retries"
        sleeps.append(fake.sleeps)
    assert sleeps[0] == sleeps[1]
    assert sleeps[0] != sleeps[2]
    assert len(set(sleeps[0])) == 3  # a fresh draw per attempt
    expected = [wait_random(0, 100)(n - 1, seed=retry_seed("run-a", "work", n)) for n in (1, 2, 3)]
    assert sleeps[0] == expected


async def test_seed_goes_only_to_policies_that_take_it() -> None:
    """next() gets seed= when its signature has it (or **kwargs), and is called without otherwise."""
    calls: list[dict] = []

    class Seeded:
        def next(self, elapsed_time, attempts, error, *, seed=None):
            calls.append({"seed": seed})
            return 0 if attempts < 2 else None

    class Kwargs:
        def next(self, elapsed_time, attempts, error, **kwargs):
            calls.append(kwargs)
            return 0 if attempts < 2 else None

    class Plain:
        def next(self, elapsed_time, attempts, error):
            calls.append({})
            return 0 if attempts < 2 else None

    for policy in (Seeded(), Kwargs(), Plain()):
        w, _, _ = flaky_workflow(policy, 1)
        await w.run(run_id="r1")
    seed = retry_seed("r1", "work", 1)
    assert calls == [{"seed": seed}, {"seed": seed}, {}]


async def test_composed_policy_does_not_retry_rejected_errors() -> None:
    """An error the retry condition rejects fails the run at once."""
    policy = retry_policy(retry=retry_if_exception_type(TimeoutError), wait=wait_fixed(1))
    w, seen, _ = flaky_workflow(policy, 2, error=ValueError)
    with pytest.raises(ValueError, match="failure 1"):
        await w.run()
    assert len(seen) == 1


async def test_composed_policy_stop_after_delay_uses_the_run_clock() -> None:
    """stop_after_delay sees the elapsed time of the step's attempts."""
    policy = retry_policy(wait=wait_fixed(4), stop=stop_after_delay(10) | stop_after_attempt(99))
    w, seen, fake = flaky_workflow(policy, 50)
    with pytest.raises(ConnectionError):
        await w.run()
    assert fake.sleeps == [4.0, 4.0, 4.0]  # gave up once 12 s had passed
    assert len(seen) == 4


async def test_custom_policy_object_is_used() -> None:
    """Any object with next() works as a policy (the seed's Friday policy)."""

    class RetryOnFridayPolicy:
        def __init__(self, today: str) -> None:
            self.today = today
            self.calls: list[tuple[float, int, str]] = []

        def next(self, elapsed_time: float, attempts: int, error: Exception) -> float | None:
            self.calls.append((elapsed_time, attempts, str(error)))
            return 5 if self.today == "Friday" else None

    friday = RetryOnFridayPolicy("Friday")
    w, _, _ = flaky_workflow(friday, 1)
    assert await w.run() == "ok after 1 retries"
    assert friday.calls == [(0.0, 1, "failure 1")]

    monday = RetryOnFridayPolicy("Monday")
    w, _, _ = flaky_workflow(monday, 1)
    with pytest.raises(ConnectionError):
        await w.run()


async def test_step_timeout_is_retried_by_the_policy() -> None:
    """A StepTimeoutError counts as a failure the step's policy can retry."""
    attempts: list[int] = []

    class Slow(Workflow):
        @step(
            timeout=0.05, retry_policy=retry_policy(wait=wait_fixed(0), stop=stop_after_attempt(2))
        )
        async def work(self, ctx: Context, ev: StartEvent) -> StopEvent:
            info = ctx.retry_info()
            attempts.append(info.retry_number)
            if info.retry_number == 0:
                await asyncio.sleep(10)
            return StopEvent(result=type(info.last_exception).__name__)

    assert await Slow().run() == StepTimeoutError.__name__
    assert attempts == [0, 1]


async def test_sync_step_is_retried() -> None:
    """Plain (sync) steps are retried too."""
    calls: list[int] = []
    fake = FakeTime()

    class SyncFlaky(Workflow):
        @step(retry_policy=retry_policy(wait=wait_fixed(1), stop=stop_after_attempt(3)))
        def work(self, ev: StartEvent) -> StopEvent:
            calls.append(1)
            if len(calls) < 3:
                raise OSError("disk busy")
            return StopEvent(result=len(calls))

    assert await SyncFlaky(clock=fake.clock, sleep=fake.sleep).run() == 3


class _NotANumberPolicy:
    def next(self, elapsed_time: float, attempts: int, error: Exception) -> object:
        return "soon"


class _NegativePolicy:
    def next(self, elapsed_time: float, attempts: int, error: Exception) -> float:
        return -1.0


class _BuggyPolicy:
    def next(self, elapsed_time: float, attempts: int, error: Exception) -> float:
        raise KeyError("policy bug")


class _InstanceOnlyPolicy:
    def next(self, elapsed_time: float, attempts: int, error: Exception) -> float | None:
        return None


def _always_failing(policy: object) -> Workflow:
    class Failing(Workflow):
        @step(retry_policy=policy)  # type: ignore[arg-type]
        async def work(self, ev: StartEvent) -> StopEvent:
            raise RuntimeError("step broke")

    return Failing(timeout=5)


async def test_policy_returning_a_non_number_fails_the_run_at_once() -> None:
    """A policy returning something that is not seconds fails the run, chained to the step's
    error (it used to kill an engine task and stall the run until its timeout)."""
    with pytest.raises(
        WorkflowRuntimeError,
        match=r"^Retry policy _NotANumberPolicy\.next\(\) returned 'soon' for step work; it must "
        r"return seconds to wait \(a number >= 0\), or None to stop retrying\.$",
    ) as caught:
        await _always_failing(_NotANumberPolicy()).run()
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert str(caught.value.__cause__) == "step broke"


async def test_policy_returning_a_negative_delay_fails_the_run() -> None:
    """A negative delay is a policy bug too."""
    with pytest.raises(WorkflowRuntimeError, match=r"returned -1\.0 for step work"):
        await _always_failing(_NegativePolicy()).run()


async def test_policy_that_raises_fails_the_run_naming_the_policy() -> None:
    """A policy whose next() raises is reported (it was logged and ignored before)."""
    with pytest.raises(
        WorkflowRuntimeError,
        match=r"^Retry policy _BuggyPolicy\.next\(\) raised KeyError: 'policy bug' while "
        r"deciding whether to retry step work after its RuntimeError: step broke\. Fix the "
        r"policy; it must return seconds to wait, or None to stop retrying\.$",
    ) as caught:
        await _always_failing(_BuggyPolicy()).run()
    assert isinstance(caught.value.__cause__, KeyError)


async def test_policy_passed_as_a_class_is_rejected_at_decoration() -> None:
    """``@step(retry_policy=SomePolicy)`` (the class) says to pass an instance."""
    with pytest.raises(
        WorkflowConfigurationError,
        match=r"^retry_policy=_InstanceOnlyPolicy is a class; pass an instance: "
        r"retry_policy=_InstanceOnlyPolicy\(\.\.\.\)\.$",
    ):
        _always_failing(_InstanceOnlyPolicy)
