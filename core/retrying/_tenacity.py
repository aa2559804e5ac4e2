"""Bridges between tenacity's retry objects and batonflow's retry vocabulary.

batonflow's retry conditions, wait strategies and stop conditions follow LlamaIndex's call
conventions (``cond(error)``, ``wait(n, seed=...)``, ``stop(attempts, elapsed_time)``); tenacity's
take one ``tenacity.RetryCallState``. This module converts between the two so that tenacity's own
objects still work inside :func:`batonflow.core.retry_policy`, and ours inside tenacity's
combinators.

tenacity is never imported here: an object can only be a tenacity object if the user imported
tenacity first, so looking it up in ``sys.modules`` is enough and keeps ``import batonflow.core``
from paying for it.
"""

from __future__ import annotations

import sys
from typing import Any


def _tenacity() -> Any:
    return sys.modules.get("tenacity")


def tenacity_kind(obj: object) -> str | None:
    """``"retry"``, ``"wait"`` or ``"stop"`` when ``obj`` is one of tenacity's objects, else None."""
    if _tenacity() is None:
        return None
    # The submodules, not attributes of the package: ``tenacity.retry`` is the decorator.
    for kind, module, base in (
        ("retry", "tenacity.retry", "retry_base"),
        ("wait", "tenacity.wait", "wait_base"),
        ("stop", "tenacity.stop", "stop_base"),
    ):
        if isinstance(obj, getattr(sys.modules[module], base)):
            return kind
    return None


def is_call_state(obj: object) -> bool:
    """Whether ``obj`` is a ``tenacity.RetryCallState`` (ours was called by tenacity)."""
    tenacity = _tenacity()
    return tenacity is not None and isinstance(obj, tenacity.RetryCallState)


def call_state(
    attempt_number: int,
    error: BaseException | None = None,
    elapsed_time: float = 0.0,
    upcoming_sleep: float = 0.0,
) -> Any:
    """A tenacity call state saying "attempt ``attempt_number`` failed with ``error``"."""
    tenacity = _tenacity()
    state = tenacity.RetryCallState(_retrying(tenacity), None, (), {})
    state.attempt_number = attempt_number
    if error is not None:
        state.outcome = tenacity.Future.construct(attempt_number, error, True)
    # tenacity derives seconds_since_start from these two.
    state.start_time = 0.0
    state.outcome_timestamp = float(elapsed_time)
    state.upcoming_sleep = upcoming_sleep
    return state


_RETRYING: list[Any] = []


def _retrying(tenacity: Any) -> Any:
    if not _RETRYING:
        _RETRYING.append(tenacity.Retrying())
    return _RETRYING[0]


def state_error(state: Any) -> BaseException:
    """The exception a tenacity call state carries.

    Raises:
        TypeError: The state has no failed outcome (tenacity asked before any attempt failed).
    """
    outcome = state.outcome
    error = outcome.exception() if outcome is not None and outcome.failed else None
    if error is None:
        raise TypeError(
            "A batonflow retry condition was called by tenacity without a failed attempt; "
            "use it in batonflow's retry_policy(...) or after an attempt raised."
        )
    return error  # type: ignore[no-any-return]


def state_elapsed(state: Any) -> float:
    """Seconds since the first attempt, as tenacity counts them (0.0 when unknown)."""
    elapsed = state.seconds_since_start
    return 0.0 if elapsed is None else float(elapsed)
