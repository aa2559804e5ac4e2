"""Step options at run time: retry policies, per-step timeouts, resource injection."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Annotated, Any

import pytest
from batonflow.core import (
    ConstantDelayRetryPolicy,
    Context,
    Event,
    ExponentialBackoffRetryPolicy,
    HumanResponseEvent,
    InputRequiredEvent,
    Resource,
    ResourceError,
    RetryInfo,
    StartEvent,
    StepTimeoutError,
    StopEvent,
    Workflow,
    retry_policy,
    step,
    stop_after_attempt,
    wait_fixed,
)


class FakeTime:
    """A clock and a sleep that advance instantly."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.mark.filterwarnings("ignore:ConstantDelayRetryPolicy is deprecated:DeprecationWarning")
async def test_constant_delay_retry_reruns_with_same_event() -> None:
    """A failing step is retried on the same input event after the (seed's) policy's delay."""
    fake = FakeTime()
    inputs: list[Any] = []
    infos: list[RetryInfo] = []

    class Flaky(Workflow):
        @step(retry_policy=ConstantDelayRetryPolicy(delay=5, maximum_attempts=10))
        async def flaky_step(self, ctx: Context, ev: StartEvent) -> StopEvent:
            inputs.append(ev)
            infos.append(ctx.retry_info())
            if len(inputs) < 3:
                raise ConnectionError(f"try {len(inputs)}")
            return StopEvent(result="ok")

    assert await Flaky(clock=fake.clock, sleep=fake.sleep).run(x=1) == "ok"
    assert fake.sleeps == [5, 5]
    assert len({id(e) for e in inputs}) == 1
    assert [i.retry_number for i in infos] == [0, 1, 2]
    assert str(infos[2].last_exception) == "try 2"
    assert infos[2].elapsed_seconds == 5


@pytest.mark.filterwarnings("ignore:ExponentialBackoffRetryPolicy is deprecated:DeprecationWarning")
async def test_retry_gives_up_with_last_exception() -> None:
    """When the policy gives up the run fails with the step's last exception."""
    fake = FakeTime()
    attempts = 0

    class Flaky(Workflow):
        @step(
            retry_policy=ExponentialBackoffRetryPolicy(
                initial_delay=1, multiplier=2, max_delay=10, maximum_attempts=4, jitter=False
            )
        )
        async def always_fails(self, ev: StartEvent) -> StopEvent:
            nonlocal attempts
            attempts += 1
            raise ValueError(f"attempt {attempts}")

    with pytest.raises(ValueError, match="attempt 4"):
        await Flaky(clock=fake.clock, sleep=fake.sleep).run()
    assert attempts == 4
    assert fake.sleeps == [1, 2, 4]


async def test_custom_retry_policy_friday() -> None:
    """A custom policy object with ``next`` decides; None means give up at once."""

    class RetryOnFridayPolicy:
        def __init__(self, friday: bool) -> None:
            self.friday = friday

        def next(self, elapsed_time: float, attempts: int, error: Exception) -> float | None:
            if self.friday and attempts < 2:
                return 5
            return None

    calls = 0

    def make(friday: bool) -> Workflow:
        class W(Workflow):
            @step(retry_policy=RetryOnFridayPolicy(friday))
            async def s(self, ev: StartEvent) -> StopEvent:
                nonlocal calls
                calls += 1
                if calls % 2 == 1:
                    raise RuntimeError("flaky")
                return StopEvent(result="ok")

        fake = FakeTime()
        return W(clock=fake.clock, sleep=fake.sleep)

    assert await make(True).run() == "ok"
    calls = 0
    with pytest.raises(RuntimeError, match="flaky"):
        await make(False).run()


async def test_step_timeout_cancels_and_is_retryable() -> None:
    """An attempt over its timeout fails with StepTimeoutError, and the policy retries it."""
    attempts = 0

    class Slow(Workflow):
        @step(
            timeout=0.02, retry_policy=retry_policy(wait=wait_fixed(0), stop=stop_after_attempt(3))
        )
        async def slow(self, ev: StartEvent) -> StopEvent:
            nonlocal attempts
            attempts += 1
            if attempts < 3:
                await asyncio.sleep(10)
            return StopEvent(result=attempts)

    assert await Slow().run() == 3


async def test_step_timeout_without_retry_fails_the_run() -> None:
    """Without a policy, StepTimeoutError (a TimeoutError) fails the run, naming the step."""

    class Slow(Workflow):
        @step(timeout=0.02)
        async def slow(self, ev: StartEvent) -> StopEvent:
            await asyncio.sleep(10)
            return StopEvent()

    with pytest.raises(
        StepTimeoutError, match=r"Step slow took longer than its timeout of 0.02 seconds"
    ) as info:
        await Slow().run()
    assert isinstance(info.value, TimeoutError)


async def test_sync_step_timeout_abandons_the_thread() -> None:
    """A sync step over its timeout fails the attempt; the run goes on without the thread."""
    release = threading.Event()
    attempts = 0

    class SyncSlow(Workflow):
        @step(
            timeout=0.05, retry_policy=retry_policy(wait=wait_fixed(0), stop=stop_after_attempt(2))
        )
        def slow(self, ev: StartEvent) -> StopEvent:
            nonlocal attempts
            attempts += 1
            if attempts == 1:
                release.wait(5)
            return StopEvent(result=attempts)

    try:
        assert await SyncSlow().run() == 2
    finally:
        release.set()


async def test_wait_for_event_is_not_charged_to_step_timeout() -> None:
    """Time spent waiting for a human does not count against the step's timeout."""

    class Ask(Workflow):
        @step(timeout=0.05)
        async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
            answer = await ctx.wait_for_event(
                HumanResponseEvent, waiter_event=InputRequiredEvent(prefix="?")
            )
            return StopEvent(result=answer.response)

    handler = Ask().run()
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            await asyncio.sleep(0.15)
            handler.ctx.send_event(HumanResponseEvent(response="slow human"))
    assert await handler == "slow human"


class Memory:
    def __init__(self) -> None:
        self.items: list[str] = []


made: list[Memory] = []


def get_memory(*args: Any, **kwargs: Any) -> Memory:
    memory = Memory()
    made.append(memory)
    return memory


class SecondEvent(Event):
    msg: str


async def test_resource_is_shared_between_steps() -> None:
    """Seed: a cached Resource is made once per workflow and injected into both steps."""
    made.clear()

    class WorkflowWithResource(Workflow):
        @step
        async def first_step(
            self, ev: StartEvent, memory: Annotated[Memory, Resource(get_memory)]
        ) -> SecondEvent:
            memory.items.append("first")
            return SecondEvent(msg="This is an input for step 2")

        @step
        async def second_step(
            self, ev: SecondEvent, memory: Annotated[Memory, Resource(get_memory)]
        ) -> StopEvent:
            memory.items.append(ev.msg)
            return StopEvent(result=list(memory.items))

    w = WorkflowWithResource()
    assert await w.run() == ["first", "This is an input for step 2"]
    assert len(made) == 1
    await w.run()
    assert len(made) == 1


async def test_uncached_resource_is_fresh_per_injection() -> None:
    """``Resource(factory, cache=False)`` calls the factory for every injection."""
    made.clear()

    class W(Workflow):
        @step
        async def first_step(
            self, ev: StartEvent, memory: Annotated[Memory, Resource(get_memory, cache=False)]
        ) -> SecondEvent:
            return SecondEvent(msg=str(id(memory)))

        @step
        async def second_step(
            self, ev: SecondEvent, memory: Annotated[Memory, Resource(get_memory, cache=False)]
        ) -> StopEvent:
            return StopEvent(result=ev.msg != str(id(memory)))

    assert await W().run() is True
    assert len(made) == 2


async def test_async_factory_and_sync_step_with_resource() -> None:
    """Async factories work and sync steps receive resources too."""

    async def make_client() -> dict[str, str]:
        await asyncio.sleep(0)
        return {"name": "client"}

    class W(Workflow):
        @step
        def only(
            self, ev: StartEvent, client: Annotated[dict[str, str], Resource(make_client)]
        ) -> StopEvent:
            return StopEvent(result=client["name"])

    assert await W().run() == "client"


async def test_failing_factory_names_resource_and_step() -> None:
    """A factory that raises fails the run with ResourceError naming resource and step."""

    def broken() -> Memory:
        raise OSError("no database")

    class W(Workflow):
        @step
        async def needs_db(
            self, ev: StartEvent, db: Annotated[Memory, Resource(broken)]
        ) -> StopEvent:
            return StopEvent()

    with pytest.raises(ResourceError, match=r"(?s)broken.*needs_db"):
        await W().run()


async def test_retry_elapsed_uses_real_clock_by_default() -> None:
    """Without injection, retries use the real monotonic clock and asyncio.sleep."""
    seen: list[float] = []

    class W(Workflow):
        @step(retry_policy=retry_policy(wait=wait_fixed(0.001), stop=stop_after_attempt(2)))
        async def s(self, ctx: Context, ev: StartEvent) -> StopEvent:
            info = ctx.retry_info()
            seen.append(info.elapsed_seconds)
            if info.retry_number == 0:
                raise RuntimeError("once")
            return StopEvent(result=time.monotonic() > 0)

    assert await W().run() is True
    assert seen[0] == 0 and seen[1] > 0
