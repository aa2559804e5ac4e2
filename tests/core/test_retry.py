"""Retry policies: pure functions of (elapsed_time, attempts, error, seed)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import warnings
from datetime import UTC, datetime

import pytest
import tenacity
from batonflow.core import (
    ConstantDelayRetryPolicy,
    ExponentialBackoffRetryPolicy,
    RetryInfo,
    RetryPolicy,
    retry_always,
    retry_if_exception_message,
    retry_if_exception_type,
    retry_policy,
    stop_after_attempt,
    stop_after_delay,
    stop_before_delay,
    stop_never,
    wait_chain,
    wait_exponential,
    wait_fixed,
    wait_incrementing,
    wait_random,
    wait_random_exponential,
)

ERR = ValueError("boom")


def delays(policy: RetryPolicy, n: int, error: Exception = ERR, elapsed: float = 0.0) -> list:
    """The answers of ``policy`` after failures 1..n."""
    return [policy.next(elapsed, attempts, error) for attempts in range(1, n + 1)]


def legacy(cls, **kwargs):
    """Build a deprecated ready-made policy without the warning reaching the test run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return cls(**kwargs)


# --------------------------------------------------------------------------- retry_policy()


async def test_retry_policy_defaults_retry_everything_three_attempts_five_seconds() -> None:
    """retry_policy() retries any exception 5 s apart for 3 attempts in total."""
    assert delays(retry_policy(), 4, KeyError("x")) == [5.0, 5.0, None, None]


async def test_retry_policy_counts_attempts_from_one() -> None:
    """next() gets failures counted from 1; the wait strategy sees the retry number (from 0)."""
    policy = retry_policy(
        wait=wait_exponential(multiplier=0.5, exp_base=3), stop=stop_after_attempt(4)
    )
    assert delays(policy, 4) == [0.5, 1.5, 4.5, None]
    # A direct caller passing 0 gets the first delay, not wait_chain's last strategy.
    chained = retry_policy(wait=wait_chain(wait_fixed(1), wait_fixed(9)), stop=stop_never)
    assert chained.next(0.0, 0, ERR) == 1.0
    assert delays(chained, 3) == [1.0, 9.0, 9.0]


@pytest.mark.parametrize(
    ("wait", "expected"),
    [
        pytest.param(wait_fixed(2), [2.0, 2.0, 2.0, 2.0], id="fixed"),
        pytest.param(wait_exponential(max=5), [1.0, 2.0, 4.0, 5.0], id="exp"),
        pytest.param(wait_incrementing(start=1, increment=2), [1.0, 3.0, 5.0, 7.0], id="incr"),
        pytest.param(wait_fixed(1) + wait_fixed(2), [3.0, 3.0, 3.0, 3.0], id="combined"),
        pytest.param(
            wait_chain(wait_fixed(1), wait_fixed(1), wait_fixed(9)),
            [1.0, 1.0, 9.0, 9.0],
            id="chain",
        ),
        pytest.param(
            tenacity.wait_exponential(multiplier=1, max=5), [1.0, 2.0, 4.0, 5.0], id="tenacity-exp"
        ),
        pytest.param(
            tenacity.wait_incrementing(start=1, increment=2),
            [1.0, 3.0, 5.0, 7.0],
            id="tenacity-incr",
        ),
    ],
)
async def test_ours_and_tenacitys_waits_give_the_same_delays(wait, expected: list[float]) -> None:
    """Our waits and tenacity's give the same delays after failures 1..4."""
    assert delays(retry_policy(wait=wait, stop=stop_after_attempt(10)), 4) == expected


async def test_retry_condition_filters_exceptions() -> None:
    """An exception the retry condition rejects is not retried."""
    policy = retry_policy(retry=retry_if_exception_type((TimeoutError, ConnectionError)))
    assert policy.next(0.0, 1, TimeoutError()) == 5.0
    assert policy.next(0.0, 1, ValueError()) is None


async def test_conditions_combine_with_operators() -> None:
    """Retry conditions combine with | and &, tenacity's among them."""
    either = retry_if_exception_type(KeyError) | retry_if_exception_message(match="flaky")
    both = tenacity.retry_if_not_exception_type(KeyError) & retry_if_exception_message(
        match="flaky"
    )
    p_either = retry_policy(retry=either, wait=wait_fixed(1))
    p_both = retry_policy(retry=both, wait=wait_fixed(1))
    assert p_either.next(0.0, 1, KeyError()) == 1.0
    assert p_either.next(0.0, 1, ValueError("a flaky thing")) == 1.0
    assert p_either.next(0.0, 1, ValueError("solid")) is None
    assert p_both.next(0.0, 1, KeyError("flaky")) is None
    assert p_both.next(0.0, 1, ValueError("flaky")) == 1.0


async def test_stop_after_delay_uses_elapsed_time() -> None:
    """stop_after_delay gives up once elapsed_time reaches the limit."""
    policy = retry_policy(wait=wait_fixed(1), stop=stop_after_delay(10))
    assert policy.next(9.5, 100, ERR) == 1.0
    assert policy.next(10.0, 1, ERR) is None


@pytest.mark.parametrize(
    "stop",
    [
        pytest.param(stop_before_delay(10), id="ours"),
        pytest.param(tenacity.stop_before_delay(10), id="tenacity"),
    ],
)
async def test_stop_before_delay_sees_the_upcoming_wait(stop) -> None:
    """stop_before_delay gives up when the next wait would cross the limit."""
    policy = retry_policy(wait=wait_fixed(3), stop=stop)
    assert policy.next(6.0, 1, ERR) == 3.0
    assert policy.next(7.0, 1, ERR) is None


async def test_tenacity_objects_are_accepted_as_they_are() -> None:
    """retry_policy() takes tenacity's own retry, wait and stop objects (and their operators)."""
    policy = retry_policy(
        retry=tenacity.retry_if_exception_type(OSError)
        | tenacity.retry_if_exception_message(match="busy"),
        wait=tenacity.wait_fixed(2) + tenacity.wait_fixed(1),
        stop=tenacity.stop_after_attempt(3) | tenacity.stop_after_delay(60),
    )
    assert delays(policy, 3, OSError()) == [3.0, 3.0, None]
    assert policy.next(0.0, 1, ValueError("busy now")) == 3.0
    assert policy.next(0.0, 1, ValueError("calm")) is None
    assert policy.next(60.0, 1, OSError()) is None
    assert retry_policy(retry=tenacity.retry_always).next(0.0, 1, ERR) == 5.0


async def test_seed_makes_jitter_reproducible() -> None:
    """The same seed gives the same delay; retry_policy(seed=) seeds calls that pass none."""
    policy = retry_policy(wait=wait_random_exponential(max=100), stop=stop_never)
    assert policy.next(0.0, 4, ERR, seed=42) == policy.next(0.0, 4, ERR, seed=42)
    assert len({policy.next(0.0, 4, ERR, seed=s) for s in range(20)}) > 10
    seeded = retry_policy(wait=wait_random(0, 10), stop=stop_never, seed=7)
    again = retry_policy(wait=wait_random(0, 10), stop=stop_never, seed=7)
    assert delays(seeded, 5) == delays(again, 5)
    assert len(set(delays(seeded, 5))) == 5  # a different draw per attempt
    assert seeded.next(0.0, 1, ERR, seed=3) == wait_random(0, 10)(0, seed=3)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        pytest.param(
            {"retry": 3},
            r"^retry_policy\(retry=...\) needs a retry condition, got 3; use e\.g\. retry_if_exception_type",
            id="retry",
        ),
        pytest.param(
            {"wait": 5}, r"needs a wait strategy, got 5; use e\.g\. wait_fixed\(1\)", id="wait"
        ),
        pytest.param(
            {"stop": 3},
            r"needs a stop condition, got 3; use e\.g\. stop_after_attempt\(3\)",
            id="stop",
        ),
        pytest.param(
            {"wait": stop_after_attempt(3)},
            r"retry_policy\(wait=...\) needs a wait strategy, got stop_after_attempt\(3\)",
            id="stop-as-wait",
        ),
        pytest.param(
            {"stop": tenacity.wait_fixed(1)},
            r"retry_policy\(stop=...\) needs a stop condition",
            id="tenacity-wait-as-stop",
        ),
        pytest.param(
            {"retry": retry_if_exception_type},
            r"retry_policy\(retry=retry_if_exception_type\) is a class; pass an instance",
            id="class",
        ),
        pytest.param({"seed": "7"}, r"retry_policy\(seed=...\) must be an int, got '7'", id="seed"),
    ],
)
async def test_retry_policy_rejects_wrong_parts(kwargs, match: str) -> None:
    """A part of the wrong kind is a TypeError saying what to pass."""
    with pytest.raises(TypeError, match=match):
        retry_policy(**kwargs)


# --------------------------------------------------------------------------- legacy policies


@pytest.mark.parametrize(
    ("cls", "match"),
    [
        pytest.param(
            ConstantDelayRetryPolicy,
            r"^ConstantDelayRetryPolicy is deprecated, use retry_policy\(wait=wait_fixed\(delay\)",
            id="constant",
        ),
        pytest.param(
            ExponentialBackoffRetryPolicy,
            r"^ExponentialBackoffRetryPolicy is deprecated, use retry_policy\(wait=wait_exponential",
            id="exponential",
        ),
    ],
)
async def test_legacy_policies_warn_at_the_callers_line(cls, match: str) -> None:
    """The ready-made policies still work and warn DeprecationWarning pointing at the caller."""
    with pytest.warns(DeprecationWarning, match=match) as record:
        cls()
    assert record[0].filename == __file__


async def test_constant_delay_retries_until_maximum_attempts() -> None:
    """ConstantDelayRetryPolicy returns the delay until the attempts reach the maximum."""
    policy = legacy(ConstantDelayRetryPolicy, delay=5, maximum_attempts=3)
    assert delays(policy, 4) == [5.0, 5.0, None, None]
    assert delays(legacy(ConstantDelayRetryPolicy), 3) == [5.0, 5.0, None]


async def test_legacy_positional_order_is_llamaindexs() -> None:
    """Positional arguments are LlamaIndex's: maximum_attempts first."""
    with pytest.warns(DeprecationWarning):
        constant = ConstantDelayRetryPolicy(2, 0.5)
        backoff = ExponentialBackoffRetryPolicy(3, 0.5, 4.0, 100.0, False)
    assert (constant.maximum_attempts, constant.delay) == (2, 0.5)
    assert delays(constant, 2) == [0.5, None]
    assert delays(backoff, 3) == [0.5, 2.0, None]


async def test_exponential_backoff_grows_and_caps() -> None:
    """ExponentialBackoffRetryPolicy multiplies the delay and caps it at max_delay."""
    policy = legacy(
        ExponentialBackoffRetryPolicy,
        initial_delay=1,
        multiplier=3,
        max_delay=10,
        maximum_attempts=6,
        jitter=False,
    )
    assert delays(policy, 6) == [1.0, 3.0, 9.0, 10.0, 10.0, None]


async def test_exponential_backoff_jitters_by_default_and_follows_the_seed() -> None:
    """By default (jitter=True) each delay is in [0, exponential] and reproducible for a seed."""
    policy = legacy(ExponentialBackoffRetryPolicy, maximum_attempts=50, max_delay=5)
    for n in range(1, 50):
        got = [policy.next(0.0, n, ERR, seed=s) for s in range(5)]
        assert all(d is not None and 0 <= d <= min(2 ** (n - 1), 5) for d in got)
        assert got == [policy.next(0.0, n, ERR, seed=s) for s in range(5)]
    assert len({policy.next(0.0, 10, ERR) for _ in range(20)}) > 10


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        pytest.param(
            lambda: ConstantDelayRetryPolicy(delay=-1),
            ValueError,
            r"delay must be >= 0",
            id="neg-delay",
        ),
        pytest.param(
            lambda: ConstantDelayRetryPolicy(maximum_attempts=0),
            ValueError,
            r"maximum_attempts must be >= 1 .*pass 1 for no retry",
            id="zero-attempts",
        ),
        pytest.param(
            lambda: ExponentialBackoffRetryPolicy(initial_delay=-0.5),
            ValueError,
            r"initial_delay must be >= 0",
            id="neg-initial",
        ),
        pytest.param(
            lambda: ExponentialBackoffRetryPolicy(multiplier=0.5),
            ValueError,
            r"multiplier must be >= 1.*pass 1 for a constant delay",
            id="shrinking",
        ),
        pytest.param(
            lambda: ConstantDelayRetryPolicy(delay="5"),
            TypeError,
            r"delay must be a number",
            id="str-delay",
        ),
        pytest.param(
            lambda: ConstantDelayRetryPolicy(maximum_attempts=2.5),
            TypeError,
            r"maximum_attempts must be an int",
            id="float-attempts",
        ),
        pytest.param(
            lambda: ExponentialBackoffRetryPolicy(max_delay=None),
            TypeError,
            r"max_delay must be a number",
            id="none-max",
        ),
    ],
)
async def test_legacy_bad_arguments_fail_at_once(make, error: type, match: str) -> None:
    """Negative delays, shrinking multipliers, fewer than one attempt, wrong types are rejected."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(error, match=match):
            make()


async def test_legacy_policies_are_frozen_records() -> None:
    """Policies are immutable, safe to share between steps, and compare by their settings."""
    policy = legacy(ConstantDelayRetryPolicy)
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.delay = 1  # type: ignore[misc]
    assert policy == legacy(ConstantDelayRetryPolicy)
    assert repr(policy) == "ConstantDelayRetryPolicy(maximum_attempts=3, delay=5.0)"


# --------------------------------------------------------------------------- protocol and records


async def test_custom_policy_satisfies_protocol() -> None:
    """Any object with a matching next() is a RetryPolicy (the seed's RetryOnFridayPolicy)."""

    class RetryOnFridayPolicy:
        def __init__(self, today: str) -> None:
            self.today = today

        def next(self, elapsed_time: float, attempts: int, error: Exception) -> float | None:
            return 5 if self.today == "Friday" else None

    assert isinstance(RetryOnFridayPolicy("Friday"), RetryPolicy)
    assert RetryOnFridayPolicy("Monday").next(0.0, 1, ERR) is None
    assert not isinstance(object(), RetryPolicy)
    ready = (
        legacy(ConstantDelayRetryPolicy),
        legacy(ExponentialBackoffRetryPolicy),
        retry_policy(),
    )
    assert all(isinstance(p, RetryPolicy) for p in ready)


async def test_retry_info_records() -> None:
    """RetryInfo() describes a first attempt; it is an immutable record."""
    assert RetryInfo() == RetryInfo(0, 0.0, None, None)
    when = datetime(2026, 1, 1, tzinfo=UTC)
    info = RetryInfo(retry_number=2, elapsed_seconds=1.5, last_exception=ERR, last_failed_at=when)
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.retry_number = 3  # type: ignore[misc]


# --------------------------------------------------------------------------- import paths


async def test_retry_policy_module_holds_the_vocabulary() -> None:
    """batonflow.core.retry_policy (LlamaIndex's path) holds the same names as batonflow.core."""
    import importlib

    import batonflow.core
    from batonflow.core import retry

    module = importlib.import_module("batonflow.core.retry_policy")
    assert module is sys.modules["batonflow.core.retry_policy"]
    assert module.__all__ == retry.__all__
    for name in retry.__all__:
        assert getattr(module, name) is getattr(retry, name)
        if name != "ComposedRetryPolicy":
            assert getattr(batonflow.core, name) is getattr(retry, name)
    # The package attribute is the function, as `from batonflow.core import retry_policy` expects.
    assert batonflow.core.retry_policy is retry.retry_policy


async def test_importing_the_module_keeps_the_function() -> None:
    """After `import batonflow.core.retry_policy`, batonflow.core.retry_policy is still callable."""
    code = (
        "import batonflow.core.retry_policy\n"
        "import batonflow.core\n"
        "from batonflow.core.retry_policy import retry_policy, wait_fixed\n"
        "assert batonflow.core.retry_policy is retry_policy, batonflow.core.retry_policy\n"
        "print(batonflow.core.retry_policy(wait=wait_fixed(1)).next(0.0, 1, ValueError()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1.0"


async def test_import_does_not_load_tenacity() -> None:
    """import batonflow.core leaves tenacity unloaded until the user imports it."""
    code = "import sys, batonflow.core; print('tenacity' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_retry_always_value_works_in_a_policy() -> None:
    """retry_always (bare) and retry_always() are the same condition inside a policy."""
    assert retry_policy(retry=retry_always).next(0.0, 1, ERR) == retry_policy(
        retry=retry_always()
    ).next(0.0, 1, ERR)


async def test_ask_policy_reads_each_policys_own_signature() -> None:
    """ask_policy passes seed= per the policy's next(): class-wide, or the instance's own next."""
    from types import SimpleNamespace

    from batonflow.core.retry import ask_policy

    with_seed = SimpleNamespace(next=lambda elapsed, attempts, error, seed=None: seed)
    without = SimpleNamespace(next=lambda elapsed, attempts, error: "no seed")
    assert ask_policy(with_seed, 0.0, 1, ERR, 11) == 11
    assert ask_policy(without, 0.0, 1, ERR, 11) == "no seed"
    seeded = retry_policy(wait=wait_random(0, 10), stop=stop_never)
    assert ask_policy(seeded, 0.0, 1, ERR, 11) == wait_random(0, 10)(0, seed=11)
