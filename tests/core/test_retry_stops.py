"""Stop conditions: called with (attempts, elapsed_time, upcoming_sleep=...)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import tenacity
from batonflow.core import (
    stop_after_attempt,
    stop_after_delay,
    stop_all,
    stop_any,
    stop_before_delay,
    stop_never,
)


@pytest.mark.parametrize(
    ("stop", "call", "expected"),
    [
        pytest.param(stop_after_attempt(3), (2, 0.0), False, id="attempt-below"),
        pytest.param(stop_after_attempt(3), (3, 0.0), True, id="attempt-reached"),
        pytest.param(stop_after_delay(10), (1, 9.9), False, id="delay-below"),
        pytest.param(stop_after_delay(timedelta(seconds=10)), (1, 10.0), True, id="delay-td"),
        pytest.param(stop_before_delay(10), (1, 9.0), False, id="before-no-sleep"),
        pytest.param(stop_never, (10**6, 1e9), False, id="never"),
        pytest.param(stop_never(), (10**6, 1e9), False, id="never-called"),
        pytest.param(stop_after_attempt(3) | stop_after_delay(10), (1, 10.0), True, id="or"),
        pytest.param(stop_after_attempt(3) & stop_after_delay(10), (3, 1.0), False, id="and"),
        pytest.param(
            stop_all(stop_after_attempt(3), stop_after_delay(10)), (3, 10.0), True, id="all"
        ),
        pytest.param(stop_any(), (3, 10.0), False, id="any-empty"),
    ],
)
async def test_stop_answers(stop, call: tuple[int, float], expected: bool) -> None:
    """Each stop condition answers True (give up) or False."""
    assert stop(*call) is expected


async def test_stop_before_delay_counts_the_upcoming_sleep() -> None:
    """stop_before_delay gives up when the next wait would reach the limit."""
    stop = stop_before_delay(10)
    assert stop(1, 8.0, upcoming_sleep=1.9) is False
    assert stop(1, 8.0, upcoming_sleep=2.0) is True
    assert (stop | stop_after_attempt(99))(1, 8.0, upcoming_sleep=2.0) is True


async def test_operators_build_the_named_combinators() -> None:
    """a | b is stop_any(a, b), a & b is stop_all(a, b)."""
    a, b = stop_after_attempt(3), stop_after_delay(5)
    assert isinstance(a | b, stop_any) and (a | b).stops == (a, b)
    assert isinstance(a & b, stop_all) and (a & b).stops == (a, b)


async def test_tenacity_stops_mix_in_both_directions() -> None:
    """tenacity's stop conditions work in ours, and ours inside tenacity's."""
    mixed = stop_after_attempt(99) | tenacity.stop_before_delay(10)
    assert mixed(1, 8.0, upcoming_sleep=1.0) is False
    assert mixed(1, 8.0, upcoming_sleep=2.5) is True
    inside = tenacity.stop_after_attempt(99) | stop_after_delay(5)
    state = tenacity.RetryCallState(tenacity.Retrying(), None, (), {})
    state.attempt_number, state.start_time, state.outcome_timestamp = 1, 0.0, 6.0
    assert inside(state) is True


@pytest.mark.parametrize(
    ("make", "match"),
    [
        pytest.param(
            lambda: stop_after_attempt(2.5),
            r"max_attempt_number must be an int, got 2\.5; pass e\.g\. stop_after_attempt\(3\)",
            id="float-attempts",
        ),
        pytest.param(
            lambda: stop_after_delay("1m"), r"max_delay must be a number of seconds", id="str"
        ),
        pytest.param(
            lambda: stop_any(stop_never, 1),
            r"stop_any\(\) needs a stop condition, got 1",
            id="junk",
        ),
    ],
)
async def test_bad_arguments_say_what_to_pass(make, match: str) -> None:
    """Wrong arguments are a TypeError naming the parameter and ending with the fix."""
    with pytest.raises(TypeError, match=match):
        make()
