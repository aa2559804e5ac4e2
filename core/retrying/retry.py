"""Retry policies: how often, and after how long, a failed step runs again.

A retry policy is any object with a ``next`` method (the :class:`RetryPolicy` protocol). When a
step attempt raises, the run loop calls ``policy.next(elapsed_time, attempts, error, seed=...)``:
a number is the delay in seconds before the next attempt, ``None`` means give up (the run then
fails with the step's last exception, unless a ``@catch_error`` step takes over). Policies are
pure functions of their arguments, so they are tested without sleeping.

``attempts`` counts failures from 1: it is 1 after the first failure. ``seed`` makes random
jitter reproducible; the run loop derives it from the run id, the step name and ``attempts``, so
a resumed run waits as the original would have. Policies whose ``next`` has no ``seed``
parameter are called without it.

The usual way to build one is :func:`retry_policy`, out of three parts (all importable from
``batonflow.core`` and ``batonflow.core.retry_policy``):

* a retry condition (:mod:`~batonflow.core.retry_conditions`): which errors to retry;
* a wait strategy (:mod:`~batonflow.core.retry_waits`): how long to wait;
* a stop condition (:mod:`~batonflow.core.retry_stops`): when to give up.

:class:`ConstantDelayRetryPolicy` and :class:`ExponentialBackoffRetryPolicy` are the older
ready-made policies; they still work and warn ``DeprecationWarning``, as in LlamaIndex.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import warnings
import weakref
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from .._public import publish
from ._tenacity import tenacity_kind
from .retry_conditions import (
    RetryCondition,
    _Condition,
    as_condition,
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
)
from .retry_stops import (
    StopCondition,
    _Stop,
    as_stop,
    stop_after_attempt,
    stop_after_delay,
    stop_all,
    stop_any,
    stop_before_delay,
    stop_never,
)
from .retry_waits import (
    WaitStrategy,
    _Wait,
    as_wait,
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


@runtime_checkable
class RetryPolicy(Protocol):
    """What the run loop asks after a step attempt fails.

    Any object with this ``next`` method is a policy; it does not need to inherit from anything,
    and ``seed`` may be left out of its signature::

        class RetryOnFridayPolicy:
            def next(self, elapsed_time, attempts, error):
                return 5 if datetime.today().strftime("%A") == "Friday" else None
    """

    def next(
        self, elapsed_time: float, attempts: int, error: Exception, *, seed: int | None = None
    ) -> float | None:
        """Decide whether to retry and after how long.

        Args:
            elapsed_time: Seconds since the step's first attempt started.
            attempts: Failures so far, counted from 1 (1 after the first failure).
            error: The exception the failed attempt raised.
            seed: Seeds random jitter, so the same seed gives the same delay.

        Returns:
            Seconds to wait before the next attempt, or ``None`` to give up.
        """
        ...


@runtime_checkable
class RetryPolicyWithoutSeed(Protocol):
    """A policy whose ``next`` has no ``seed`` parameter (the seeds' and older LlamaIndex's).

    Steps accept these too; the run then calls ``next(elapsed_time, attempts, error)``.
    """

    def next(self, elapsed_time: float, attempts: int, error: Exception) -> float | None:
        """See :meth:`RetryPolicy.next`."""
        ...


#: What ``@step(retry_policy=...)`` takes: a policy with or without ``seed``.
AnyRetryPolicy = RetryPolicy | RetryPolicyWithoutSeed


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


def _attempt_seed(seed: int, attempts: int) -> int:
    return _digest(f"{seed}:{attempts}")


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) & 0xFFFF_FFFF


@dataclass(frozen=True, slots=True)
class ComposedRetryPolicy:
    """The :class:`RetryPolicy` :func:`retry_policy` builds; see there.

    Attributes:
        retry: Which exceptions are retried (``None``: all of them).
        wait: How long to wait before the next attempt.
        stop: When to give up; asked after ``wait`` so it sees the upcoming delay.
        seed: Seed used when ``next`` is called without one (``None``: unseeded).
    """

    retry: RetryCondition | None
    wait: WaitStrategy
    stop: StopCondition
    seed: int | None = None

    def next(
        self, elapsed_time: float, attempts: int, error: Exception, *, seed: int | None = None
    ) -> float | None:
        """Ask the retry condition, then the wait strategy, then the stop condition.

        The wait strategy sees the retry number, ``attempts - 1`` (0 before the first retry).
        """
        if self.retry is not None and not self.retry(error):
            return None
        if seed is None and self.seed is not None:
            seed = _attempt_seed(self.seed, attempts)
        delay = float(self.wait(max(attempts - 1, 0), seed=seed))
        if self.stop(attempts, elapsed_time, upcoming_sleep=delay):
            return None
        return delay


_EXAMPLES = {
    "retry": ("retry condition", "retry_if_exception_type(ValueError)", _Condition),
    "wait": ("wait strategy", "wait_fixed(1)", _Wait),
    "stop": ("stop condition", "stop_after_attempt(3)", _Stop),
}


def _check_part(part: str, value: object) -> None:
    what, example, base = _EXAMPLES[part]
    if isinstance(value, type) and issubclass(value, (_Condition, _Wait, _Stop)):
        raise TypeError(
            f"retry_policy({part}={value.__name__}) is a class; pass an instance, "
            f"e.g. {part}={example}."
        )
    kind = tenacity_kind(value)
    wrong_kind = (kind is not None and kind != part) or (
        isinstance(value, (_Condition, _Wait, _Stop)) and not isinstance(value, base)
    )
    if wrong_kind or not callable(value):
        raise TypeError(
            f"retry_policy({part}=...) needs a {what}, got {value!r}; use e.g. {example}."
        )


def retry_policy(
    retry: RetryCondition | None = None,
    wait: WaitStrategy = wait_fixed(5),
    stop: StopCondition = stop_after_attempt(3),
    *,
    seed: int | None = None,
) -> RetryPolicy:
    """Build a retry policy from a retry condition, a wait strategy and a stop condition.

    ::

        policy = retry_policy(
            retry=retry_if_exception_type((TimeoutError, ConnectionError)),
            wait=wait_exponential(multiplier=1, exp_base=2, max=30),
            stop=stop_after_attempt(5) | stop_after_delay(60),
        )

    With no arguments every exception is retried, 5 seconds apart, for 3 attempts in total.
    tenacity's own conditions, waits and stops work here too (``tenacity.wait_fixed(1)``).

    Args:
        retry: Which exceptions to retry (combine with ``|`` and ``&``); ``None`` retries all.
        wait: How long to wait before each retry (combine with ``+``).
        stop: When to give up (combine with ``|`` and ``&``).
        seed: Makes random waits reproducible when the caller of ``next`` passes no seed.

    Returns:
        A policy whose ``next`` applies the three in that order.

    Raises:
        TypeError: An argument that is not a condition, strategy or stop of the right kind.
    """
    for part, value in (("retry", retry), ("wait", wait), ("stop", stop)):
        if value is not None:
            _check_part(part, value)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise TypeError(f"retry_policy(seed=...) must be an int, got {seed!r}; pass e.g. seed=7.")
    return ComposedRetryPolicy(
        retry=None if retry is None else as_condition(retry),
        wait=as_wait(wait),
        stop=as_stop(stop),
        seed=seed,
    )


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


def _deprecated(name: str, instead: str) -> None:
    # stacklevel 4: _deprecated <- __post_init__ <- the dataclass __init__ <- the caller.
    warnings.warn(f"{name} is deprecated, use {instead} instead", DeprecationWarning, stacklevel=4)


@dataclass(frozen=True, slots=True)
class ConstantDelayRetryPolicy:
    """Retry after the same delay, up to ``maximum_attempts`` attempts in total (deprecated).

    ``ConstantDelayRetryPolicy(delay=5, maximum_attempts=10)`` runs the step at most ten times,
    five seconds apart; every exception is retried. It warns ``DeprecationWarning``: write
    ``retry_policy(wait=wait_fixed(delay), stop=stop_after_attempt(maximum_attempts))``.

    Args:
        maximum_attempts: Attempts in total, the first one included (>= 1).
        delay: Seconds to wait between attempts (>= 0).

    Raises:
        ValueError: A negative delay or fewer than one attempt.
    """

    maximum_attempts: int = 3
    delay: float = 5
    _policy: ComposedRetryPolicy = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _deprecated(
            "ConstantDelayRetryPolicy",
            "retry_policy(wait=wait_fixed(delay), stop=stop_after_attempt(n))",
        )
        delay = _check_delay("delay", self.delay)
        attempts = _check_attempts(self.maximum_attempts)
        object.__setattr__(self, "delay", delay)
        policy = ComposedRetryPolicy(None, wait_fixed(delay), stop_after_attempt(attempts))
        object.__setattr__(self, "_policy", policy)

    def next(
        self, elapsed_time: float, attempts: int, error: Exception, *, seed: int | None = None
    ) -> float | None:
        """Return ``delay`` while fewer than ``maximum_attempts`` attempts were made, else None."""
        return self._policy.next(elapsed_time, attempts, error, seed=seed)


@dataclass(frozen=True, slots=True)
class ExponentialBackoffRetryPolicy:
    """Retry after a delay growing by ``multiplier`` each time, capped at ``max_delay`` (deprecated).

    The delay after the n-th failure is ``initial_delay * multiplier ** (n - 1)``, at most
    ``max_delay``: 1, 2, 4, 8, ... for the defaults. With ``jitter=True`` (the default) the
    delay is drawn uniformly between 0 and that value ("full jitter"), which spreads out
    clients that failed together. Every exception is retried. It warns ``DeprecationWarning``:
    write ``retry_policy(wait=wait_exponential(...), stop=stop_after_attempt(n))``.

    Args:
        maximum_attempts: Attempts in total, the first one included (>= 1).
        initial_delay: Seconds to wait after the first failure (>= 0).
        multiplier: Growth factor between consecutive delays (>= 1).
        max_delay: Upper bound of any delay, in seconds (>= 0).
        jitter: Randomise each delay between 0 and its exponential value.

    Raises:
        ValueError: A negative delay, a multiplier below 1 or fewer than one attempt.
    """

    maximum_attempts: int = 5
    initial_delay: float = 1.0
    multiplier: float = 2.0
    max_delay: float = 60.0
    jitter: bool = True
    _policy: ComposedRetryPolicy = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _deprecated(
            "ExponentialBackoffRetryPolicy",
            "retry_policy(wait=wait_exponential(...), stop=stop_after_attempt(n))",
        )
        initial = _check_delay("initial_delay", self.initial_delay)
        cap = _check_delay("max_delay", self.max_delay)
        multiplier = _check_delay("multiplier", self.multiplier)
        if multiplier < 1:
            raise ValueError(
                f"multiplier must be >= 1, got {self.multiplier!r}; pass 1 for a constant delay."
            )
        attempts = _check_attempts(self.maximum_attempts)
        wait: WaitStrategy
        if self.jitter:
            wait = wait_random_exponential(multiplier=initial, exp_base=multiplier, max=cap)
        else:
            wait = wait_exponential(multiplier=initial, exp_base=multiplier, max=cap)
        policy = ComposedRetryPolicy(None, wait, stop_after_attempt(attempts))
        object.__setattr__(self, "_policy", policy)

    def next(
        self, elapsed_time: float, attempts: int, error: Exception, *, seed: int | None = None
    ) -> float | None:
        """Return the backoff delay after ``attempts`` failures, or None once all are used."""
        return self._policy.next(elapsed_time, attempts, error, seed=seed)


def retry_seed(run_id: str, step_name: str, attempts: int) -> int:
    """The jitter seed the run loop passes for ``attempts`` failures of a step in a run.

    The same run, step and attempt always give the same seed, so a resumed run waits as the
    original did, while different runs spread out.
    """
    return _digest(f"{run_id}:{step_name}:{attempts}")


def ask_policy(
    policy: AnyRetryPolicy, elapsed_time: float, attempts: int, error: Exception, seed: int
) -> Any:
    """Call ``policy.next``, passing ``seed`` only when its signature takes one."""
    if _takes_seed(policy):
        return policy.next(elapsed_time, attempts, error, seed=seed)  # type: ignore[call-arg]
    return policy.next(elapsed_time, attempts, error)


# Whether a policy class's next() takes seed=, so the signature is read once per class and not
# on every failure (inspect.signature costs ~50 us). Weak keys: classes defined in a function
# (a workflow per test, say) are not kept alive by this cache.
_TAKES_SEED: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def _takes_seed(policy: object) -> bool:
    own = getattr(policy, "__dict__", None)
    if own is not None and "next" in own:  # next set on the instance: no class-wide answer
        return _signature_takes_seed(own["next"])
    cls = type(policy)
    known = _TAKES_SEED.get(cls)
    if known is None:
        known = _TAKES_SEED[cls] = _signature_takes_seed(policy.next)  # type: ignore[attr-defined]
    return known


def _signature_takes_seed(method: Any) -> bool:
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):  # builtins without a signature
        return False
    return "seed" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


__all__ = [
    "AnyRetryPolicy",
    "ComposedRetryPolicy",
    "ConstantDelayRetryPolicy",
    "ExponentialBackoffRetryPolicy",
    "RetryCondition",
    "RetryInfo",
    "RetryPolicy",
    "RetryPolicyWithoutSeed",
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

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
