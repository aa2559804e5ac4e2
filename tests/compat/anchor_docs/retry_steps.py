# Ported from the anchor's docs page llamaagents/workflows/retry_steps.md ("Error handling").
# Filled in: `flaky_call`, `llm_call` and `call_api` are scripted failures; `logger` logs to
# stdout; the page's `...` are small bodies and events (FetchedEvent, RetryFetch); the page's
# several `MyWorkflow`/`Pipeline` classes get distinct names. Waits of whole seconds would
# make this program slow, so each page policy is shown twice: as written, by printing the
# delays its `next()` asks for (with a fixed `seed` where it has jitter), and running, with
# waits of hundredths of a second (`wait_fixed(0.01)`) where the step really retries.
# RetryOnFridayPolicy reads a fixed Tuesday, so the output does not depend on the day.
import asyncio
import logging
import sys
import warnings
from datetime import datetime as real_datetime
from typing import Optional

from workflows import Context, Workflow, catch_error, step
from workflows.events import Event, StartEvent, StepFailedEvent, StopEvent
from workflows.retry_policy import (
    ConstantDelayRetryPolicy,
    ExponentialBackoffRetryPolicy,
    retry_any,
    retry_if_exception_message,
    retry_if_exception_type,
    retry_policy,
    stop_after_attempt,
    stop_any,
    stop_before_delay,
    wait_combine,
    wait_exponential_jitter,
    wait_fixed,
    wait_random,
)

logging.basicConfig(stream=sys.stdout, format="%(levelname)s %(message)s")
logger = logging.getLogger("retry_steps")

calls = {"n": 0}


def flaky_call():
    calls["n"] += 1
    if calls["n"] < 3:
        raise ConnectionError(f"reset #{calls['n']}")
    return f"ok after {calls['n']} calls"


async def llm_call():
    return flaky_call()


async def call_api():
    raise ConnectionError("upstream down")


def delays(policy, error, attempts=6, elapsed=0.0):
    return [policy.next(elapsed, n, error, seed=11) for n in range(1, attempts + 1)]


# Basic usage
basic = retry_policy(wait=wait_fixed(5), stop=stop_after_attempt(10))


class BasicWorkflow(Workflow):
    @step(retry_policy=retry_policy(wait=wait_fixed(0.01), stop=stop_after_attempt(10)))
    async def flaky_step(self, ctx: Context, ev: StartEvent) -> StopEvent:
        result = flaky_call()  # this might raise
        return StopEvent(result=result)


# Filtering exceptions
filtering = retry_policy(
    retry=retry_if_exception_type((TimeoutError, ConnectionError))
    | retry_if_exception_message(match="rate limit|temporarily unavailable"),
    wait=wait_fixed(1) + wait_random(0, 1),
    stop=stop_after_attempt(5) | stop_before_delay(30),
)

named = retry_policy(
    retry=retry_any(
        retry_if_exception_type((TimeoutError, ConnectionError)),
        retry_if_exception_message(match="rate limit|temporarily unavailable"),
    ),
    wait=wait_combine(wait_fixed(1), wait_random(0, 1)),
    stop=stop_any(stop_after_attempt(5), stop_before_delay(30)),
)


class FilteringWorkflow(Workflow):
    @step(
        retry_policy=retry_policy(
            retry=retry_if_exception_type((TimeoutError, ConnectionError))
            | retry_if_exception_message(match="rate limit|temporarily unavailable"),
            wait=wait_fixed(0.01),
            stop=stop_after_attempt(5) | stop_before_delay(30),
        )
    )
    async def call_provider(self, ev: StartEvent) -> StopEvent:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("the service is temporarily unavailable")
        raise ValueError("bad request")


# Exponential backoff
exponential = retry_policy(
    wait=wait_exponential_jitter(initial=1, exp_base=2, max=30, jitter=1),
    stop=stop_after_attempt(5),
)


class LLMWorkflow(Workflow):
    @step(retry_policy=retry_policy(wait=wait_fixed(0.01), stop=stop_after_attempt(5)))
    async def call_llm(self, ctx: Context, ev: StartEvent) -> StopEvent:
        result = await llm_call()  # this might raise on rate-limit
        return StopEvent(result=result)


# Custom retry policies
class datetime:  # a fixed Tuesday
    @staticmethod
    def today():
        return real_datetime(2026, 12, 1)


class RetryOnFridayPolicy:
    def next(self, elapsed_time: float, attempts: int, error: Exception) -> Optional[float]:  # noqa: UP045
        if datetime.today().strftime("%A") == "Friday":
            return 5  # retry in 5 seconds
        return None  # don't retry


class FridayWorkflow(Workflow):
    @step(retry_policy=RetryOnFridayPolicy())
    async def once(self, ev: StartEvent) -> StopEvent:
        raise ConnectionError("not on a Tuesday")


# Inspecting retry state inside a step
class InspectingWorkflow(Workflow):
    @step(retry_policy=retry_policy(stop=stop_after_attempt(3), wait=wait_fixed(0.01)))
    async def flaky(self, ctx: Context, ev: StartEvent) -> StopEvent:
        info = ctx.retry_info()
        if info.last_exception is not None:
            logger.warning("retry %d after %s", info.retry_number, str(info.last_exception))
        print("attempt", info.retry_number, "failed_at set:", info.last_failed_at is not None)
        return StopEvent(result=flaky_call())


# Recovering when retries are exhausted
class Pipeline(Workflow):
    @step(retry_policy=retry_policy(wait=wait_fixed(0.01), stop=stop_after_attempt(3)))
    async def fetch(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=await call_api())

    @catch_error
    async def on_failure(self, ctx: Context, ev: StepFailedEvent) -> StopEvent:
        return StopEvent(result={"failed_step": ev.step_name, "error": str(ev.exception)})


class FetchedEvent(Event):
    body: str


class ScopedPipeline(Workflow):
    @step(retry_policy=retry_policy(wait=wait_fixed(0.01), stop=stop_after_attempt(2)))
    async def fetch(self, ev: StartEvent) -> FetchedEvent:
        if ev.get("fail_fetch"):
            await call_api()
        return FetchedEvent(body="<html>")

    @step(retry_policy=retry_policy(wait=wait_fixed(0.01), stop=stop_after_attempt(2)))
    async def parse(self, ev: FetchedEvent) -> StopEvent:
        raise ValueError(f"cannot parse {ev.body}")

    @catch_error(for_steps=["fetch"])
    async def on_fetch_failure(self, ctx: Context, ev: StepFailedEvent) -> StopEvent:
        return StopEvent(result={"fallback": True})

    @catch_error  # wildcard — covers `parse` and anything else
    async def on_any_failure(self, ctx: Context, ev: StepFailedEvent) -> StopEvent:
        return StopEvent(result={"aborted": ev.step_name})


class RetryFetch(Event):
    pass


class BudgetPipeline(Workflow):
    @step
    async def fetch(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=await call_api())

    @step
    async def retry_fetch(self, ev: RetryFetch) -> StopEvent:
        print("retry_fetch runs")
        return StopEvent(result=await call_api())

    @catch_error(for_steps=["fetch", "retry_fetch"], max_recoveries=2)
    async def on_failure(self, ctx: Context, ev: StepFailedEvent) -> RetryFetch:
        print("recovering", ev.step_name)
        return RetryFetch()


async def outcome(workflow, **kwargs):
    calls["n"] = 0
    try:
        return repr(await workflow.run(**kwargs))
    except Exception as error:
        return f"raised {type(error).__name__}: {error}"


async def main():
    reset = ConnectionError("reset")
    print("basic:", delays(basic, reset, attempts=11))
    print("no arguments:", delays(retry_policy(), ValueError("any")))
    print("filtering, reset:", delays(filtering, reset))
    print("filtering, rate limit:", delays(filtering, RuntimeError("hit the rate limit")))
    print("filtering, ValueError:", delays(filtering, ValueError("bad request")))
    print("filtering after 31 s:", filtering.next(31.0, 1, reset, seed=11))
    print("named same as operators:", delays(named, reset) == delays(filtering, reset))
    print("exponential:", delays(exponential, reset))
    print("friday policy:", RetryOnFridayPolicy().next(0.0, 1, reset))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        constant = ConstantDelayRetryPolicy(delay=5, maximum_attempts=10)
        backoff = ExponentialBackoffRetryPolicy(
            initial_delay=1,
            multiplier=2,
            max_delay=30,
            maximum_attempts=5,
        )
    print("deprecated warns:", sorted({w.category.__name__ for w in caught}))
    print("constant:", [constant.next(0.0, n, reset) for n in range(1, 12)])
    print("backoff stops after:", [backoff.next(0.0, n, reset) is None for n in range(1, 7)])
    print("backoff, seeded:", [backoff.next(0.0, n, reset, seed=11) for n in range(1, 6)])

    print("BasicWorkflow:", await outcome(BasicWorkflow()))
    print("FilteringWorkflow:", await outcome(FilteringWorkflow()), "calls:", calls["n"])
    print("LLMWorkflow:", await outcome(LLMWorkflow()))
    print("FridayWorkflow:", await outcome(FridayWorkflow()))
    print("InspectingWorkflow:", await outcome(InspectingWorkflow()))
    print("Pipeline:", await outcome(Pipeline()))
    print("ScopedPipeline fetch:", await outcome(ScopedPipeline(), fail_fetch=True))
    print("ScopedPipeline parse:", await outcome(ScopedPipeline()))
    print("BudgetPipeline:", await outcome(BudgetPipeline()))


asyncio.run(main())
