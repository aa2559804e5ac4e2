"""Wait strategies: called with the retry number (0 first) and an optional seed."""

from __future__ import annotations

from datetime import timedelta

import pytest
import tenacity
from batonflow.core import (
    wait_chain,
    wait_combine,
    wait_exponential,
    wait_exponential_jitter,
    wait_fixed,
    wait_full_jitter,
    wait_incrementing,
    wait_none,
    wait_random,
    wait_random_exponential,
)


@pytest.mark.parametrize(
    ("wait", "expected"),
    [
        pytest.param(wait_fixed(2.5), [2.5, 2.5, 2.5, 2.5], id="fixed"),
        pytest.param(wait_fixed(timedelta(milliseconds=1500)), [1.5] * 4, id="fixed-timedelta"),
        pytest.param(wait_none(), [0.0] * 4, id="none"),
        pytest.param(wait_exponential(), [1.0, 2.0, 4.0, 8.0], id="exp-defaults"),
        pytest.param(wait_exponential(multiplier=0.5, exp_base=3), [0.5, 1.5, 4.5, 13.5], id="exp"),
        pytest.param(wait_exponential(max=5), [1.0, 2.0, 4.0, 5.0], id="exp-max"),
        pytest.param(wait_exponential(multiplier=0.5, min=2), [2.0, 2.0, 2.0, 4.0], id="exp-min"),
        pytest.param(
            wait_incrementing(start=1, increment=2, max=6), [1.0, 3.0, 5.0, 6.0], id="incr"
        ),
        pytest.param(
            wait_incrementing(start=-5, increment=-1), [0.0] * 4, id="incr-never-negative"
        ),
        pytest.param(wait_exponential_jitter(jitter=0), [1.0, 2.0, 4.0, 8.0], id="exp-jitter-0"),
        pytest.param(wait_chain(wait_fixed(1), wait_fixed(5)), [1.0, 5.0, 5.0, 5.0], id="chain"),
        pytest.param(wait_fixed(1) + wait_incrementing(0, 1), [1.0, 2.0, 3.0, 4.0], id="plus"),
        pytest.param(sum([wait_fixed(1), wait_fixed(2), wait_none()]), [3.0] * 4, id="sum"),
    ],
)
async def test_deterministic_waits(wait, expected: list[float]) -> None:
    """The delays before retries 0..3."""
    assert [wait(n) for n in range(4)] == expected


@pytest.mark.parametrize(
    ("wait", "bounds"),
    [
        pytest.param(wait_random(1, 3), lambda n: (1, 3), id="random"),
        pytest.param(
            wait_exponential_jitter(initial=1, jitter=0.5, max=100),
            lambda n: (2**n, 2**n + 0.5),
            id="exp-jitter",
        ),
        pytest.param(
            wait_random_exponential(multiplier=1, max=100), lambda n: (0, 2**n), id="full-jitter"
        ),
        pytest.param(
            wait_random_exponential(multiplier=0.5, min=2, max=100),
            lambda n: (2, max(2, 0.5 * 2**n)),
            id="full-jitter-min",
        ),
        pytest.param(wait_full_jitter(multiplier=1, max=100), lambda n: (0, 2**n), id="alias"),
    ],
)
async def test_random_waits_stay_in_bounds_and_follow_the_seed(wait, bounds) -> None:
    """Random waits lie in their range; the same seed gives the same delay, others differ."""
    for n in range(6):
        low, high = bounds(n)
        draws = [wait(n, seed=seed) for seed in range(30)]
        assert all(low <= d <= high for d in draws)
        assert [wait(n, seed=seed) for seed in range(30)] == draws
        if high > low:
            assert len(set(draws)) > 20
    assert len({wait(3) for _ in range(20)}) > 1  # unseeded: fresh draws


async def test_jitter_never_passes_max() -> None:
    """wait_exponential_jitter caps the jittered value at max too."""
    wait = wait_exponential_jitter(initial=10, max=10, jitter=5)
    assert all(wait(3, seed=s) <= 10 for s in range(50))


async def test_combined_waits_pass_the_seed_on() -> None:
    """A sum of random waits is as reproducible as its parts."""
    both = wait_random(0, 1) + wait_random_exponential(max=10)
    assert (
        both(3, seed=9)
        == both(3, seed=9)
        == wait_combine(wait_random(0, 1), wait_random_exponential(max=10))(3, seed=9)
    )


async def test_huge_retry_numbers_hit_the_cap_instead_of_overflowing() -> None:
    """exp_base ** n beyond float range gives max, not OverflowError."""
    assert wait_exponential(max=30)(5000) == 30.0
    assert wait_random_exponential(max=30)(5000, seed=1) <= 30.0


async def test_tenacity_waits_mix_in_both_directions() -> None:
    """A tenacity wait inside ours sees attempt_number n + 1; ours inside tenacity's sees n."""
    mixed = wait_fixed(1) + tenacity.wait_exponential(multiplier=1, max=100)
    assert [mixed(n) for n in range(3)] == [2.0, 3.0, 5.0]
    inside = tenacity.wait_fixed(1) + wait_exponential()
    state = tenacity.RetryCallState(tenacity.Retrying(), None, (), {})
    state.attempt_number = 3
    assert inside(state) == 1 + 4.0


@pytest.mark.parametrize(
    ("make", "match"),
    [
        pytest.param(
            lambda: wait_fixed("5"),
            r"wait must be a number of seconds or a timedelta, got '5'",
            id="str",
        ),
        pytest.param(
            lambda: wait_exponential(multiplier=None), r"multiplier must be a number", id="none"
        ),
        pytest.param(lambda: wait_random(max=True), r"max must be a number of seconds", id="bool"),
        pytest.param(
            lambda: wait_chain(),
            r"wait_chain requires at least one strategy; pass e\.g\.",
            id="empty-chain",
        ),
        pytest.param(
            lambda: wait_combine(wait_fixed(1), 2),
            r"wait_combine\(\) needs a wait strategy, got 2",
            id="combine-junk",
        ),
    ],
)
async def test_bad_arguments_say_what_to_pass(make, match: str) -> None:
    """Wrong arguments are an error naming the parameter and ending with the fix."""
    with pytest.raises((TypeError, ValueError), match=match):
        make()


async def test_calling_with_something_else_than_a_number_is_an_error() -> None:
    """A wait strategy called with a non-int says how to call it."""
    with pytest.raises(TypeError, match=r"call it as wait\(n\)"):
        wait_fixed(1)("3")  # type: ignore[arg-type]
