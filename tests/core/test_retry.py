"""Retry policies: pure functions of (elapsed_time, attempts, error)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest
from batonflow.core.retry import (
    ConstantDelayRetryPolicy,
    ExponentialBackoffRetryPolicy,
    RetryInfo,
    RetryPolicy,
    retry_if_exception_message,
    retry_if_exception_type,
    retry_if_not_exception_type,
    retry_policy,
    stop_after_attempt,
    stop_after_delay,
    stop_before_delay,
    wait_chain,
    wait_exponential,
    wait_fixed,
    wait_incrementing,
    wait_random,
)

ERR = ValueError("boom")


def delays(policy: RetryPolicy, n: int, error: Exception = ERR, elapsed: float = 0.0) -> list:
    """The answers of ``policy`` after failures 1..n."""
    return [policy.next(elapsed, attempts, error) for attempts in range(1, n + 1)]


async def test_constant_delay_retries_until_maximum_attempts() -> None:
    """ConstantDelayRetryPolicy returns the delay until the attempts reach the maximum."""
    policy = ConstantDelayRetryPolicy(delay=5, maximum_attempts=3)
    assert delays(policy, 4) == [5.0, 5.0, None, None]


async def test_constant_delay_defaults() -> None:
    """ConstantDelayRetryPolicy() waits 5 s and allows 3 attempts in total."""
    assert delays(ConstantDelayRetryPolicy(), 3) == [5.0, 5.0, None]


async def test_single_attempt_never_retries() -> None:
    """maximum_attempts=1 means no retry at all."""
    assert ConstantDelayRetryPolicy(delay=0, maximum_attempts=1).next(0.0, 1, ERR) is None


async def test_exponential_backoff_grows_and_caps() -> None:
    """ExponentialBackoffRetryPolicy multiplies the delay and caps it at max_delay."""
    policy = ExponentialBackoffRetryPolicy(
        initial_delay=1, multiplier=3, max_delay=10, maximum_attempts=6
    )
    assert delays(policy, 6) == [1.0, 3.0, 9.0, 10.0, 10.0, None]


async def test_exponential_backoff_defaults() -> None:
    """The defaults give 1, 2, 4, 8 seconds over 5 attempts."""
    assert delays(ExponentialBackoffRetryPolicy(), 5) == [1.0, 2.0, 4.0, 8.0, None]


async def test_exponential_jitter_stays_within_the_exponential_bound() -> None:
    """With jitter every delay lies between 0 and the un-jittered delay."""
    policy = ExponentialBackoffRetryPolicy(
        initial_delay=1, multiplier=2, max_delay=5, maximum_attempts=50, jitter=True
    )
    got = [policy.next(0.0, n, ERR) for n in range(1, 50) for _ in range(5)]
    bounds = [min(2 ** (n - 1), 5) for n in range(1, 50) for _ in range(5)]
    assert all(d is not None and 0 <= d <= b for d, b in zip(got, bounds))
    assert len(set(got)) > 10  # actually random, not the plain exponential


@pytest.mark.parametrize(
    ("make", "match"),
    [
        pytest.param(
            lambda: ConstantDelayRetryPolicy(delay=-1), r"delay must be >= 0", id="neg-delay"
        ),
        pytest.param(
            lambda: ConstantDelayRetryPolicy(maximum_attempts=0),
            r"maximum_attempts must be >= 1 .*pass 1 for no retry",
            id="zero-attempts",
        ),
        pytest.param(
            lambda: ExponentialBackoffRetryPolicy(initial_delay=-0.5),
            r"initial_delay must be >= 0",
            id="neg-initial",
        ),
        pytest.param(
            lambda: ExponentialBackoffRetryPolicy(max_delay=-1),
            r"max_delay must be >= 0",
            id="neg-max",
        ),
        pytest.param(
            lambda: ExponentialBackoffRetryPolicy(multiplier=0.5),
            r"multiplier must be >= 1.*pass 1 for a constant delay",
            id="shrinking-multiplier",
        ),
        pytest.param(
            lambda: ExponentialBackoffRetryPolicy(maximum_attempts=-3),
            r"maximum_attempts must be >= 1",
            id="neg-attempts",
        ),
    ],
)
async def test_bad_arguments_raise_value_error(make, match: str) -> None:
    """Negative delays, shrinking multipliers and fewer than one attempt are rejected."""
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: ConstantDelayRetryPolicy(delay="5"), id="str-delay"),
        pytest.param(lambda: ConstantDelayRetryPolicy(maximum_attempts=2.5), id="float-attempts"),
        pytest.param(lambda: ExponentialBackoffRetryPolicy(max_delay=None), id="none-max"),
    ],
)
async def test_wrong_argument_types_raise_type_error(make) -> None:
    """Non-numeric delays and non-int attempts are a TypeError."""
    with pytest.raises(TypeError, match="must be"):
        make()


async def test_ready_policies_are_frozen() -> None:
    """Policies are immutable records, safe to share between steps."""
    policy = ConstantDelayRetryPolicy()
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.delay = 1  # type: ignore[misc]


async def test_retry_policy_defaults_retry_everything_three_attempts_five_seconds() -> None:
    """retry_policy() retries any exception 5 s apart for 3 attempts in total."""
    policy = retry_policy()
    assert delays(policy, 3, KeyError("x")) == [5.0, 5.0, None]


async def test_retry_policy_retry_condition_filters_exceptions() -> None:
    """An exception the retry condition rejects is not retried."""
    policy = retry_policy(retry=retry_if_exception_type((TimeoutError, ConnectionError)))
    assert policy.next(0.0, 1, TimeoutError()) == 5.0
    assert policy.next(0.0, 1, ValueError()) is None


async def test_retry_policy_conditions_combine_with_operators() -> None:
    """Retry conditions combine with | and &."""
    either = retry_if_exception_type(KeyError) | retry_if_exception_message(match="flaky")
    both = retry_if_not_exception_type(KeyError) & retry_if_exception_message(match="flaky")
    p_either = retry_policy(retry=either, wait=wait_fixed(1))
    p_both = retry_policy(retry=both, wait=wait_fixed(1))
    assert p_either.next(0.0, 1, KeyError()) == 1.0
    assert p_either.next(0.0, 1, ValueError("flaky thing")) == 1.0
    assert p_either.next(0.0, 1, ValueError("solid")) is None
    assert p_both.next(0.0, 1, KeyError("flaky")) is None
    assert p_both.next(0.0, 1, ValueError("flaky")) == 1.0


@pytest.mark.parametrize(
    ("wait", "expected"),
    [
        pytest.param(wait_fixed(2), [2.0, 2.0, 2.0, 2.0], id="fixed"),
        pytest.param(
            wait_exponential(multiplier=1, exp_base=2, max=5), [1.0, 2.0, 4.0, 5.0], id="exp"
        ),
        pytest.param(
            wait_incrementing(start=1, increment=2), [1.0, 3.0, 5.0, 7.0], id="incrementing"
        ),
        pytest.param(wait_fixed(1) + wait_fixed(2), [3.0, 3.0, 3.0, 3.0], id="combined"),
        pytest.param(
            wait_chain(wait_fixed(1), wait_fixed(1), wait_fixed(9)),
            [1.0, 1.0, 9.0, 9.0],
            id="chain",
        ),
    ],
)
async def test_retry_policy_wait_sees_attempt_number(wait, expected: list[float]) -> None:
    """tenacity wait strategies see attempts as their attempt_number (1 after the first failure)."""
    assert delays(retry_policy(wait=wait, stop=stop_after_attempt(10)), 4) == expected


async def test_retry_policy_random_wait_in_range() -> None:
    """wait_random draws within its bounds."""
    policy = retry_policy(wait=wait_random(1, 2), stop=stop_after_attempt(100))
    assert all(1 <= d <= 2 for d in delays(policy, 50))


async def test_retry_policy_stop_after_delay_uses_elapsed_time() -> None:
    """stop_after_delay gives up once elapsed_time reaches the limit."""
    policy = retry_policy(wait=wait_fixed(1), stop=stop_after_delay(10))
    assert policy.next(9.5, 1, ERR) == 1.0
    assert policy.next(10.0, 1, ERR) is None


async def test_retry_policy_stop_before_delay_sees_upcoming_wait() -> None:
    """stop_before_delay gives up when the next wait would cross the limit."""
    policy = retry_policy(wait=wait_fixed(3), stop=stop_before_delay(10))
    assert policy.next(6.0, 1, ERR) == 3.0
    assert policy.next(7.5, 1, ERR) is None


async def test_retry_policy_stops_combine() -> None:
    """Stop conditions combine with |: whichever comes first."""
    policy = retry_policy(wait=wait_fixed(1), stop=stop_after_attempt(5) | stop_after_delay(3))
    assert policy.next(1.0, 2, ERR) == 1.0
    assert policy.next(3.0, 2, ERR) is None
    assert policy.next(0.0, 5, ERR) is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        pytest.param(
            {"retry": 3}, r"retry_policy\(retry=...\) needs a tenacity retry object", id="retry"
        ),
        pytest.param(
            {"wait": 5}, r"needs a tenacity wait object, got 5; use e.g. wait_fixed\(1\)", id="wait"
        ),
        pytest.param({"stop": 3}, r"use e.g. stop_after_attempt\(3\)", id="stop"),
    ],
)
async def test_retry_policy_rejects_non_tenacity_arguments(kwargs, match: str) -> None:
    """Passing a number where a tenacity object belongs is a TypeError saying what to pass."""
    with pytest.raises(TypeError, match=match):
        retry_policy(**kwargs)


async def test_custom_policy_satisfies_protocol() -> None:
    """Any object with a matching next() is a RetryPolicy (the seed's RetryOnFridayPolicy)."""

    class RetryOnFridayPolicy:
        def __init__(self, today: str) -> None:
            self.today = today

        def next(self, elapsed_time: float, attempts: int, error: Exception) -> float | None:
            return 5 if self.today == "Friday" else None

    assert isinstance(RetryOnFridayPolicy("Friday"), RetryPolicy)
    assert RetryOnFridayPolicy("Friday").next(0.0, 1, ERR) == 5
    assert RetryOnFridayPolicy("Monday").next(0.0, 1, ERR) is None
    assert not isinstance(object(), RetryPolicy)


async def test_ready_policies_satisfy_protocol() -> None:
    """All ready-made policies are RetryPolicy instances."""
    for policy in (ConstantDelayRetryPolicy(), ExponentialBackoffRetryPolicy(), retry_policy()):
        assert isinstance(policy, RetryPolicy)


async def test_retry_info_first_attempt_defaults() -> None:
    """RetryInfo() describes a first attempt: retry 0, nothing failed yet."""
    info = RetryInfo()
    assert (info.retry_number, info.elapsed_seconds, info.last_exception, info.last_failed_at) == (
        0,
        0.0,
        None,
        None,
    )


async def test_retry_info_is_frozen_record() -> None:
    """RetryInfo is an immutable record of the last failure."""
    when = datetime(2026, 1, 1, tzinfo=UTC)
    info = RetryInfo(retry_number=2, elapsed_seconds=1.5, last_exception=ERR, last_failed_at=when)
    assert info.last_exception is ERR and info.last_failed_at == when
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.retry_number = 3  # type: ignore[misc]


async def test_retry_policy_module_alias_exports_the_same_names() -> None:
    """batonflow.core.retry_policy re-exports the retry module (LlamaIndex's import path)."""
    import importlib

    from batonflow.core import retry

    retry_policy_module = importlib.import_module("batonflow.core.retry_policy")
    assert retry_policy_module.__all__ == retry.__all__
    for name in retry.__all__:
        assert getattr(retry_policy_module, name) is getattr(retry, name)
