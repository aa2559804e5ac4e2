"""Stop conditions: when a step stops retrying.

A stop condition is called with the attempts made so far (1 after the first failure), the
seconds since the first attempt started and, as ``upcoming_sleep``, the delay the wait strategy
chose; it answers True to give up: ``stop_after_attempt(3)(3, 0.0) is True``. Conditions
combine with ``|`` (whichever comes first) and ``&`` (all of them).

These follow LlamaIndex Workflows' call convention, not tenacity's (whose conditions take a
``RetryCallState``); tenacity's own stop conditions are still accepted wherever one is.
"""

from __future__ import annotations

from typing import Any, Protocol

from .._public import publish
from ._tenacity import call_state, is_call_state, state_elapsed, tenacity_kind
from .retry_waits import Seconds, seconds


class StopCondition(Protocol):
    """Decides whether to give up retrying."""

    def __call__(
        self, attempts: int, elapsed_time: float, *, upcoming_sleep: float = 0.0
    ) -> bool: ...


class _Stop:
    """Base of the ready-made stop conditions: the calling convention and ``|``/``&``."""

    __slots__ = ()

    def __call__(
        self, attempts: int, elapsed_time: float = 0.0, *, upcoming_sleep: float = 0.0
    ) -> bool:
        """Whether to give up.

        Args:
            attempts: Attempts made so far, the failed one included (a
                ``tenacity.RetryCallState`` also works, for use inside tenacity).
            elapsed_time: Seconds since the first attempt started.
            upcoming_sleep: The delay before the next attempt, if it happens.

        Returns:
            True to stop retrying.
        """
        if not isinstance(attempts, int):
            if not is_call_state(attempts):
                raise TypeError(
                    f"A stop condition is called with the attempts made, got {attempts!r}; "
                    "call it as stop(attempts, elapsed_time)."
                )
            state: Any = attempts
            attempts = state.attempt_number
            elapsed_time = state_elapsed(state)
            upcoming_sleep = float(state.upcoming_sleep or 0.0)
        return self._stops(attempts, elapsed_time, upcoming_sleep)

    def _stops(self, attempts: int, elapsed_time: float, upcoming_sleep: float) -> bool:
        raise NotImplementedError

    def __or__(self, other: StopCondition) -> stop_any:
        return stop_any(self, other)

    def __ror__(self, other: StopCondition) -> stop_any:
        return stop_any(other, self)

    def __and__(self, other: StopCondition) -> stop_all:
        return stop_all(self, other)

    def __rand__(self, other: StopCondition) -> stop_all:
        return stop_all(other, self)


class _TenacityStop(_Stop):
    """One of tenacity's stop conditions, called the batonflow way."""

    __slots__ = ("wrapped",)

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def _stops(self, attempts: int, elapsed_time: float, upcoming_sleep: float) -> bool:
        return bool(self.wrapped(call_state(attempts, None, elapsed_time, upcoming_sleep)))

    def __repr__(self) -> str:
        return f"{self.wrapped!r}"


def as_stop(value: object, where: str = "stop") -> StopCondition:
    """``value`` as a batonflow stop condition (tenacity's are wrapped).

    Raises:
        TypeError: ``value`` is not callable.
    """
    if isinstance(value, _Stop):
        return value
    if tenacity_kind(value) == "stop":
        return _TenacityStop(value)
    if not callable(value):
        raise TypeError(
            f"{where} needs a stop condition, got {value!r}; use e.g. stop_after_attempt(3)."
        )
    return value  # type: ignore[return-value]


class stop_after_attempt(_Stop):
    """Give up once ``max_attempt_number`` attempts were made (the first one included).

    ``stop_after_attempt(3)`` runs a step at most three times: once and two retries.

    Raises:
        TypeError: ``max_attempt_number`` is not an int.
    """

    __slots__ = ("max_attempt_number",)

    def __init__(self, max_attempt_number: int) -> None:
        if isinstance(max_attempt_number, bool) or not isinstance(max_attempt_number, int):
            raise TypeError(
                f"max_attempt_number must be an int, got {max_attempt_number!r}; "
                "pass e.g. stop_after_attempt(3)."
            )
        self.max_attempt_number = max_attempt_number

    def _stops(self, attempts: int, elapsed_time: float, upcoming_sleep: float) -> bool:
        return attempts >= self.max_attempt_number

    def __repr__(self) -> str:
        return f"stop_after_attempt({self.max_attempt_number})"


class stop_after_delay(_Stop):
    """Give up once ``max_delay`` seconds have passed since the first attempt started."""

    __slots__ = ("max_delay",)

    def __init__(self, max_delay: Seconds) -> None:
        self.max_delay = seconds("max_delay", max_delay)

    def _stops(self, attempts: int, elapsed_time: float, upcoming_sleep: float) -> bool:
        return elapsed_time >= self.max_delay


class stop_before_delay(_Stop):
    """Give up when waiting for the next attempt would reach ``max_delay`` seconds.

    Unlike :class:`stop_after_delay` it counts the upcoming wait too, so a step never starts
    an attempt past the limit.
    """

    __slots__ = ("max_delay",)

    def __init__(self, max_delay: Seconds) -> None:
        self.max_delay = seconds("max_delay", max_delay)

    def _stops(self, attempts: int, elapsed_time: float, upcoming_sleep: float) -> bool:
        return elapsed_time + upcoming_sleep >= self.max_delay


class stop_any(_Stop):
    """Give up when any of the conditions says so (what ``a | b`` builds)."""

    __slots__ = ("stops",)

    def __init__(self, *stops: StopCondition) -> None:
        self.stops = tuple(as_stop(s, "stop_any()") for s in stops)

    def _stops(self, attempts: int, elapsed_time: float, upcoming_sleep: float) -> bool:
        return any(s(attempts, elapsed_time, upcoming_sleep=upcoming_sleep) for s in self.stops)


class stop_all(_Stop):
    """Give up when all of the conditions say so (what ``a & b`` builds)."""

    __slots__ = ("stops",)

    def __init__(self, *stops: StopCondition) -> None:
        self.stops = tuple(as_stop(s, "stop_all()") for s in stops)

    def _stops(self, attempts: int, elapsed_time: float, upcoming_sleep: float) -> bool:
        return all(s(attempts, elapsed_time, upcoming_sleep=upcoming_sleep) for s in self.stops)


class _StopNever(_Stop):
    """Never give up; calling it with no argument returns itself.

    Both LlamaIndex's ``stop_never()`` and tenacity's bare ``stop_never`` work. Pair it with a
    retry condition or the workflow's timeout, which then bound the retries.
    """

    __slots__ = ()

    def __call__(  # type: ignore[override]
        self, attempts: int | None = None, elapsed_time: float = 0.0, *, upcoming_sleep: float = 0.0
    ) -> Any:
        if attempts is None:
            return self
        return super().__call__(attempts, elapsed_time, upcoming_sleep=upcoming_sleep)

    def _stops(self, attempts: int, elapsed_time: float, upcoming_sleep: float) -> bool:
        return False

    def __repr__(self) -> str:
        return "stop_never"


#: Never stop retrying (``stop_never`` and ``stop_never()`` are the same condition).
stop_never = _StopNever()


__all__ = [
    "StopCondition",
    "stop_after_attempt",
    "stop_after_delay",
    "stop_all",
    "stop_any",
    "stop_before_delay",
    "stop_never",
]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
