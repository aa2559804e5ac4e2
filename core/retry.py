"""Retry policies: how often, and after how long, a failed step runs again.

A retry policy is any object with a ``next`` method (the :class:`RetryPolicy` protocol). When a
step attempt raises, the run loop calls ``policy.next(elapsed_time, attempts, error)``: a number
is the delay in seconds before the next attempt, ``None`` means give up (the run then fails
with the step's last exception). Policies are pure functions of their arguments, so they are
tested without sleeping.

``attempts`` is the number of attempts made so far, *including the one that just failed*: it is
1 after the first failure. A policy that allows ``maximum_attempts=3`` therefore runs the step at
most three times (the first run and two retries) and returns ``None`` when ``attempts == 3``.

Three ready-made ways to build a policy:

* :func:`retry_policy` composes tenacity's retry conditions, wait strategies and stop
  conditions (re-exported here, e.g. ``retry_if_exception_type``, ``wait_exponential``,
  ``stop_after_attempt``), combined with tenacity's operators (``|``, ``&``, ``+``).
* :class:`ConstantDelayRetryPolicy` waits the same delay between attempts.
* :class:`ExponentialBackoffRetryPolicy` doubles (``multiplier``) the delay up to ``max_delay``,
  optionally with full jitter.

A custom policy is any class with a matching ``next`` method.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

import tenacity
from tenacity import (
    retry_all,
    retry_always,
    retry_any,
    retry_if_exception,
    retry_if_exception_cause_type,
    retry_if_exception_message,
    retry_if_exception_type,
    retry_if_not_exception_message,
    retry_if_not_exception_type,
    retry_never,
    retry_unless_exception_type,
    stop_after_attempt,
    stop_after_delay,
    stop_all,
    stop_any,
    stop_before_delay,
    stop_never,
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
from tenacity.retry import retry_base
from tenacity.stop import stop_base
from tenacity.wait import wait_base

#: A tenacity retry condition, or any callable taking a ``tenacity.RetryCallState``.
RetryCondition = retry_base | Callable[[tenacity.RetryCallState], bool]
#: A tenacity wait strategy, or any callable returning seconds for a call state.
WaitStrategy = wait_base | Callable[[tenacity.RetryCallState], float | int]
#: A tenacity stop condition, or any callable taking a ``tenacity.RetryCallState``.
StopCondition = stop_base | Callable[[tenacity.RetryCallState], bool]


@runtime_checkable
class RetryPolicy(Protocol):
    """What the run loop asks after a step attempt fails.

    Any object with this ``next`` method is a policy; it does not need to inherit from anything::

        class RetryOnFridayPolicy:
            def next(self, elapsed_time, attempts, error):
                return 5 if datetime.today().strftime("%A") == "Friday" else None
    """

    def next(self, elapsed_time: float, attempts: int, error: Exception) -> float | None:
        """Decide whether to retry and after how long.

        Args:
            elapsed_time: Seconds since the step's first attempt started.
            attempts: Attempts made so far, including the one that just failed (1 after the
                first failure).
            error: The exception the failed attempt raised.

        Returns:
            Seconds to wait before the next attempt, or ``None`` to give up.
        """
        ...


@dataclass(frozen=True, slots=True)
class RetryInfo:
    """Where the current step stands in its retries; returned by ``ctx.retry_info()``.

    On the first attempt ``retry_number`` is 0, ``elapsed_seconds`` is 0.0 and the last-failure
    fields are ``None``; on a retry they describe the most recent failed attempt.

    Attributes:
        retry_number: 0 on the first attempt, 1 on the first retry, and so on.
        elapsed_seconds: Seconds since the step's first attempt started.
        last_exception: The exception of the most recent failed attempt, or ``None``.
        last_failed_at: When that attempt failed (timezone-aware UTC), or ``None``.
    """

    retry_number: int = 0
    elapsed_seconds: float = 0.0
    last_exception: Exception | None = None
    last_failed_at: datetime | None = None


def _check_delay(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {value!r}.")
    if math.isnan(value) or value < 0:
        raise ValueError(f"{name} must be >= 0 seconds, got {value!r}; pass a non-negative delay.")
    return float(value)


def _check_attempts(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"maximum_attempts must be an int, got {value!r}.")
    if value < 1:
        raise ValueError(
            f"maximum_attempts must be >= 1 (it counts the first attempt too), got {value}; "
            "pass 1 for no retry."
        )
    return value


@dataclass(frozen=True, slots=True)
class ConstantDelayRetryPolicy:
    """Retry after the same delay, up to ``maximum_attempts`` attempts in total.

    ``ConstantDelayRetryPolicy(delay=5, maximum_attempts=10)`` runs the step at most ten times,
    five seconds apart. Every exception is retried.

    Args:
        delay: Seconds to wait between attempts (>= 0).
        maximum_attempts: Attempts in total, the first one included (>= 1).

    Raises:
        ValueError: A negative delay or fewer than one attempt.
    """

    delay: float = 5
    maximum_attempts: int = 3

    def __post_init__(self) -> None:
        object.__setattr__(self, "delay", _check_delay("delay", self.delay))
        _check_attempts(self.maximum_attempts)

    def next(self, elapsed_time: float, attempts: int, error: Exception) -> float | None:
        """Return ``delay`` while fewer than ``maximum_attempts`` attempts were made, else None."""
        if attempts >= self.maximum_attempts:
            return None
        return self.delay


@dataclass(frozen=True, slots=True)
class ExponentialBackoffRetryPolicy:
    """Retry after a delay that grows by ``multiplier`` each time, capped at ``max_delay``.

    The delay after the n-th failed attempt is ``initial_delay * multiplier ** (n - 1)``, at most
    ``max_delay``: 1, 2, 4, 8, ... for the defaults. With ``jitter=True`` the delay is drawn
    uniformly between 0 and that value ("full jitter", tenacity's ``wait_random_exponential``),
    which spreads out clients that failed together. Every exception is retried.

    Args:
        initial_delay: Seconds to wait after the first failure (>= 0).
        multiplier: Growth factor between consecutive delays (>= 1).
        max_delay: Upper bound of any delay, in seconds (>= 0).
        maximum_attempts: Attempts in total, the first one included (>= 1).
        jitter: Randomise each delay between 0 and its exponential value.

    Raises:
        ValueError: A negative delay, a multiplier below 1 or fewer than one attempt.
    """

    initial_delay: float = 1
    multiplier: float = 2
    max_delay: float = 30
    maximum_attempts: int = 5
    jitter: bool = False
    _wait: wait_base = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        initial = _check_delay("initial_delay", self.initial_delay)
        cap = _check_delay("max_delay", self.max_delay)
        multiplier = _check_delay("multiplier", self.multiplier)
        if multiplier < 1:
            raise ValueError(
                f"multiplier must be >= 1, got {self.multiplier!r}; pass 1 for a constant delay."
            )
        _check_attempts(self.maximum_attempts)
        wait: wait_base
        if self.jitter:
            wait = wait_random_exponential(multiplier=initial, exp_base=multiplier, max=cap)
        else:
            wait = wait_exponential(multiplier=initial, exp_base=multiplier, min=0, max=cap)
        object.__setattr__(self, "_wait", wait)

    def next(self, elapsed_time: float, attempts: int, error: Exception) -> float | None:
        """Return the backoff delay after ``attempts`` failures, or None once all are used."""
        if attempts >= self.maximum_attempts:
            return None
        return float(self._wait(_call_state(elapsed_time, attempts, error)))


_RETRYING = tenacity.Retrying()


def _call_state(elapsed_time: float, attempts: int, error: Exception) -> tenacity.RetryCallState:
    """A tenacity call state describing "attempt ``attempts`` failed with ``error``"."""
    state = tenacity.RetryCallState(_RETRYING, None, (), {})
    state.attempt_number = max(attempts, 1)
    state.outcome = tenacity.Future.construct(state.attempt_number, error, True)
    # seconds_since_start is outcome_timestamp - start_time.
    state.start_time = 0.0
    state.outcome_timestamp = float(elapsed_time)
    return state


@dataclass(frozen=True, slots=True)
class ComposedRetryPolicy:
    """A :class:`RetryPolicy` made of tenacity retry, wait and stop objects; see :func:`retry_policy`.

    Attributes:
        retry: Which exceptions are retried (``None``: all of them).
        wait: How long to wait before the next attempt.
        stop: When to give up; checked after ``wait`` so ``stop_before_delay`` sees the
            upcoming delay.
    """

    retry: RetryCondition | None
    wait: WaitStrategy
    stop: StopCondition

    def next(self, elapsed_time: float, attempts: int, error: Exception) -> float | None:
        """Ask the retry condition, then the wait strategy, then the stop condition."""
        state = _call_state(elapsed_time, attempts, error)
        if self.retry is not None and not self.retry(state):
            return None
        delay = float(self.wait(state))
        state.upcoming_sleep = delay
        if self.stop(state):
            return None
        return delay


def retry_policy(
    retry: RetryCondition | None = None,
    wait: WaitStrategy = wait_fixed(5),
    stop: StopCondition = stop_after_attempt(3),
) -> RetryPolicy:
    """Build a retry policy from tenacity's retry, wait and stop objects.

    ::

        policy = retry_policy(
            retry=retry_if_exception_type((TimeoutError, ConnectionError)),
            wait=wait_exponential(multiplier=1, exp_base=2, max=30),
            stop=stop_after_attempt(5) | stop_after_delay(60),
        )

    With no arguments every exception is retried, 5 seconds apart, for 3 attempts in total.
    tenacity's ``attempt_number`` is our ``attempts`` (1 after the first failure), so
    ``stop_after_attempt(n)`` allows ``n`` attempts in total and ``wait_exponential`` starts at
    its ``multiplier``.

    Args:
        retry: A tenacity retry condition (``retry_if_exception_type(...)``, combined with ``|``
            and ``&``); ``None`` retries every exception.
        wait: A tenacity wait strategy (combined with ``+``).
        stop: A tenacity stop condition (combined with ``|`` and ``&``).

    Returns:
        A policy whose ``next`` applies the three in that order.

    Raises:
        TypeError: An argument that is not a tenacity retry/wait/stop object.
    """
    examples = {
        "retry": "retry_if_exception_type(ValueError)",
        "wait": "wait_fixed(1)",
        "stop": "stop_after_attempt(3)",
    }
    for name, value in (("retry", retry), ("wait", wait), ("stop", stop)):
        if value is not None and not callable(value):
            raise TypeError(
                f"retry_policy({name}=...) needs a tenacity {name} object, got {value!r}; "
                f"use e.g. {examples[name]}."
            )
    return ComposedRetryPolicy(retry=retry, wait=wait, stop=stop)


__all__ = [
    "ComposedRetryPolicy",
    "ConstantDelayRetryPolicy",
    "ExponentialBackoffRetryPolicy",
    "RetryCondition",
    "RetryInfo",
    "RetryPolicy",
    "StopCondition",
    "WaitStrategy",
    "retry_all",
    "retry_always",
    "retry_any",
    "retry_if_exception",
    "retry_if_exception_cause_type",
    "retry_if_exception_message",
    "retry_if_exception_type",
    "retry_if_not_exception_message",
    "retry_if_not_exception_type",
    "retry_never",
    "retry_policy",
    "retry_unless_exception_type",
    "stop_after_attempt",
    "stop_after_delay",
    "stop_all",
    "stop_any",
    "stop_before_delay",
    "stop_never",
    "wait_chain",
    "wait_combine",
    "wait_exponential",
    "wait_exponential_jitter",
    "wait_fixed",
    "wait_full_jitter",
    "wait_incrementing",
    "wait_none",
    "wait_random",
    "wait_random_exponential",
]
