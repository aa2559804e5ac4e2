"""Wait strategies: how long a step waits before its next attempt.

A wait strategy is called with the retry number ``n`` (0 before the first retry, 1 before the
second, ...) and an optional ``seed``, and returns seconds: ``wait_exponential()(2) == 4.0``.
Random strategies draw from ``random.Random(seed)`` when a seed is given, so the same seed
always gives the same delay; the run loop passes a seed made of the run id, the step name and
the attempt, which makes a resumed run wait exactly as the original would have. Strategies add
up with ``+``, :class:`wait_combine` or ``sum([...])``.

These follow LlamaIndex Workflows' call convention, not tenacity's (whose strategies take a
``RetryCallState`` and draw from the global random generator, so they cannot be seeded). That is
why they are written here rather than re-exported from tenacity; tenacity's own strategies are
still accepted wherever a strategy is (their jitter is then not seeded).
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any, Protocol

from .._public import publish
from ._tenacity import call_state, is_call_state, tenacity_kind

Seconds = int | float | timedelta


class WaitStrategy(Protocol):
    """Computes the delay before the next attempt."""

    def __call__(self, attempts: int, *, seed: int | None = None) -> float: ...


def seconds(name: str, value: object) -> float:
    """``value`` (a number or a ``timedelta``) in seconds.

    Raises:
        TypeError: ``value`` is neither.
    """
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{name} must be a number of seconds or a timedelta, got {value!r}; "
            f"pass e.g. {name}=1.5."
        )
    return float(value)


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {value!r}; pass e.g. {name}=2.")
    return float(value)


def _rng(seed: int | None) -> random.Random | Any:
    return random if seed is None else random.Random(seed)


def _power(multiplier: float, base: float, n: int, cap: float) -> float:
    """``multiplier * base ** n``, or ``cap`` when that overflows a float."""
    try:
        return multiplier * base**n
    except OverflowError:
        return cap


class _Wait:
    """Base of the ready-made strategies: the calling convention and ``+``/``sum()``."""

    __slots__ = ()

    def __call__(self, attempts: int, *, seed: int | None = None) -> float:
        """Seconds to wait before retry number ``attempts`` (0 for the first retry).

        Args:
            attempts: Retries made before this one (a ``tenacity.RetryCallState`` also works,
                for use inside tenacity).
            seed: Makes random strategies deterministic.

        Returns:
            The delay in seconds.
        """
        if not isinstance(attempts, int):
            if not is_call_state(attempts):
                raise TypeError(
                    f"A wait strategy is called with the retry number, got {attempts!r}; "
                    "call it as wait(n) or wait(n, seed=...)."
                )
            attempts = attempts.attempt_number - 1  # type: ignore[attr-defined]
        return self._delay(attempts, seed)

    def _delay(self, n: int, seed: int | None) -> float:
        raise NotImplementedError

    def __add__(self, other: WaitStrategy) -> wait_combine:
        return wait_combine(self, other)

    def __radd__(self, other: object) -> Any:
        if other == 0:  # sum() starts from 0
            return self
        if callable(other):
            return wait_combine(other, self)  # type: ignore[arg-type]
        return NotImplemented


class _TenacityWait(_Wait):
    """One of tenacity's wait strategies, called the batonflow way (its jitter is unseeded)."""

    __slots__ = ("wrapped",)

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def _delay(self, n: int, seed: int | None) -> float:
        # tenacity's attempt_number is 1 after the first failure, i.e. retry 0.
        return float(self.wrapped(call_state(n + 1)))

    def __repr__(self) -> str:
        return f"{self.wrapped!r}"


def as_wait(value: object, where: str = "wait") -> WaitStrategy:
    """``value`` as a batonflow wait strategy (tenacity's are wrapped).

    Raises:
        TypeError: ``value`` is not callable.
    """
    if isinstance(value, _Wait):
        return value
    if tenacity_kind(value) == "wait":
        return _TenacityWait(value)
    if not callable(value):
        raise TypeError(f"{where} needs a wait strategy, got {value!r}; use e.g. wait_fixed(1).")
    return value  # type: ignore[return-value]


class wait_fixed(_Wait):
    """Wait the same ``wait`` seconds before every retry: ``wait_fixed(5)``."""

    __slots__ = ("wait",)

    def __init__(self, wait: Seconds) -> None:
        self.wait = seconds("wait", wait)

    def _delay(self, n: int, seed: int | None) -> float:
        return self.wait

    def __repr__(self) -> str:
        return f"wait_fixed({self.wait})"


class wait_none(wait_fixed):
    """Retry at once."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(0)

    def __repr__(self) -> str:
        return "wait_none()"


class wait_exponential(_Wait):
    """Wait ``multiplier * exp_base ** n`` seconds before retry ``n``, kept within [min, max].

    ``wait_exponential(multiplier=1, exp_base=2, max=60)`` waits 1, 2, 4, 8, ... up to 60.

    Args:
        multiplier: The first delay.
        exp_base: Growth factor between delays.
        max: Longest delay.
        min: Shortest delay.
    """

    __slots__ = ("exp_base", "max", "min", "multiplier")

    def __init__(
        self,
        multiplier: float = 1.0,
        exp_base: float = 2.0,
        max: Seconds = 60.0,
        min: Seconds = 0.0,
    ) -> None:
        self.multiplier = _number("multiplier", multiplier)
        self.exp_base = _number("exp_base", exp_base)
        self.max = seconds("max", max)
        self.min = seconds("min", min)

    def _delay(self, n: int, seed: int | None) -> float:
        bounded = min(_power(self.multiplier, self.exp_base, n, self.max), self.max)
        return max(max(0.0, self.min), bounded)


class wait_incrementing(_Wait):
    """Wait ``start + increment * n`` seconds before retry ``n``, within [0, max].

    ``wait_incrementing(start=1, increment=2, max=10)`` waits 1, 3, 5, 7, 9, 10, 10, ...
    """

    __slots__ = ("increment", "max", "start")

    def __init__(
        self, start: Seconds = 0.0, increment: Seconds = 100.0, max: Seconds = float("inf")
    ) -> None:
        self.start = seconds("start", start)
        self.increment = seconds("increment", increment)
        self.max = seconds("max", max)

    def _delay(self, n: int, seed: int | None) -> float:
        return max(0.0, min(self.start + self.increment * n, self.max))


class wait_random(_Wait):
    """Wait a uniformly random time between ``min`` and ``max`` seconds (seeded when asked)."""

    __slots__ = ("max", "min")

    def __init__(self, min: Seconds = 0.0, max: Seconds = 1.0) -> None:
        self.min = seconds("min", min)
        self.max = seconds("max", max)

    def _delay(self, n: int, seed: int | None) -> float:
        return float(_rng(seed).uniform(self.min, self.max))


class wait_exponential_jitter(_Wait):
    """Exponential backoff plus a random extra of up to ``jitter`` seconds, at most ``max``.

    The delay before retry ``n`` is ``initial * exp_base ** n`` (capped at ``max``) plus a
    uniform draw from [0, jitter], capped at ``max`` again.
    """

    __slots__ = ("exp_base", "initial", "jitter", "max")

    def __init__(
        self, initial: float = 1.0, exp_base: float = 2.0, max: float = 60.0, jitter: float = 1.0
    ) -> None:
        self.initial = _number("initial", initial)
        self.exp_base = _number("exp_base", exp_base)
        self.max = seconds("max", max)
        self.jitter = seconds("jitter", jitter)

    def _delay(self, n: int, seed: int | None) -> float:
        base = min(_power(self.initial, self.exp_base, n, self.max), self.max)
        return min(base + _rng(seed).uniform(0, self.jitter), self.max)


class wait_random_exponential(_Wait):
    """Exponential backoff with full jitter: a random delay between ``min`` and the exponential.

    The upper bound before retry ``n`` is ``multiplier * exp_base ** n`` kept within
    [min, max]; the delay is drawn uniformly between ``min`` and it.
    """

    __slots__ = ("exp_base", "max", "min", "multiplier")

    def __init__(
        self,
        multiplier: float = 1.0,
        exp_base: float = 2.0,
        max: Seconds = 60.0,
        min: Seconds = 0.0,
    ) -> None:
        self.multiplier = _number("multiplier", multiplier)
        self.exp_base = _number("exp_base", exp_base)
        self.max = seconds("max", max)
        self.min = seconds("min", min)

    def _delay(self, n: int, seed: int | None) -> float:
        bounded = min(_power(self.multiplier, self.exp_base, n, self.max), self.max)
        upper = max(max(0.0, self.min), bounded)
        return float(_rng(seed).uniform(self.min, upper))


def wait_full_jitter(
    multiplier: float = 1.0,
    exp_base: float = 2.0,
    max: Seconds = 60.0,
    min: Seconds = 0.0,
) -> wait_random_exponential:
    """Another name for :class:`wait_random_exponential` ("full jitter")."""
    return wait_random_exponential(multiplier=multiplier, exp_base=exp_base, max=max, min=min)


class wait_chain(_Wait):
    """Use the first strategy before the first retry, the second before the second, and so on.

    Once the list runs out the last strategy is used for every further retry:
    ``wait_chain(wait_fixed(1), wait_fixed(5))`` waits 1, 5, 5, 5, ...

    Raises:
        ValueError: No strategy was given.
    """

    __slots__ = ("strategies",)

    def __init__(self, *strategies: WaitStrategy) -> None:
        if not strategies:
            raise ValueError(
                "wait_chain requires at least one strategy; pass e.g. "
                "wait_chain(wait_fixed(1), wait_fixed(5))."
            )
        self.strategies = tuple(as_wait(s, "wait_chain()") for s in strategies)

    def _delay(self, n: int, seed: int | None) -> float:
        strategy = self.strategies[max(0, min(n, len(self.strategies) - 1))]
        return strategy(n, seed=seed)


class wait_combine(_Wait):
    """Wait the sum of the strategies' delays (what ``a + b`` builds)."""

    __slots__ = ("strategies",)

    def __init__(self, *strategies: WaitStrategy) -> None:
        self.strategies = tuple(as_wait(s, "wait_combine()") for s in strategies)

    def _delay(self, n: int, seed: int | None) -> float:
        return float(sum(strategy(n, seed=seed) for strategy in self.strategies))


__all__ = [
    "WaitStrategy",
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
