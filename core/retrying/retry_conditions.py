"""Retry conditions: which exceptions a step retries.

A retry condition is called with the exception a step attempt raised and answers whether the
step may run again: ``retry_if_exception_type(ConnectionError)(err) -> bool``. Conditions
combine with ``|`` (any of them) and ``&`` (all of them), or with the named :class:`retry_any`
and :class:`retry_all`; any plain ``callable(error) -> bool`` fits in as well.

These follow LlamaIndex Workflows' call convention, not tenacity's (whose conditions take a
``RetryCallState``). That is why they are written here rather than re-exported from tenacity;
tenacity's own conditions are still accepted wherever a condition is, and ours work inside
tenacity's combinators.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

from .._public import publish
from ._tenacity import call_state, is_call_state, state_error, tenacity_kind


class RetryCondition(Protocol):
    """Decides whether an exception is worth another attempt."""

    def __call__(self, error: BaseException) -> bool: ...


ExceptionTypes = type[BaseException] | tuple[type[BaseException], ...]


class _Condition:
    """Base of the ready-made conditions: the calling convention and the ``|``/``&`` operators."""

    __slots__ = ()

    def __call__(self, error: BaseException) -> bool:
        """Whether ``error`` should be retried.

        Args:
            error: The exception the failed attempt raised (a ``tenacity.RetryCallState`` also
                works, for use inside tenacity).

        Returns:
            True to retry.
        """
        if not isinstance(error, BaseException):
            error = _error_of(error)
        return self._matches(error)

    def _matches(self, error: BaseException) -> bool:
        raise NotImplementedError

    def __or__(self, other: RetryCondition) -> retry_any:
        return retry_any(self, other)

    def __ror__(self, other: RetryCondition) -> retry_any:
        return retry_any(other, self)

    def __and__(self, other: RetryCondition) -> retry_all:
        return retry_all(self, other)

    def __rand__(self, other: RetryCondition) -> retry_all:
        return retry_all(other, self)


def _error_of(value: object) -> BaseException:
    if is_call_state(value):
        return state_error(value)
    raise TypeError(
        f"A retry condition is called with the exception a step raised, got {value!r}; "
        "call it as condition(error)."
    )


class _TenacityCondition(_Condition):
    """One of tenacity's retry conditions, called the batonflow way."""

    __slots__ = ("wrapped",)

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def _matches(self, error: BaseException) -> bool:
        return bool(self.wrapped(call_state(1, error)))

    def __repr__(self) -> str:
        return f"{self.wrapped!r}"


def as_condition(value: object, where: str = "retry") -> RetryCondition:
    """``value`` as a batonflow retry condition (tenacity's are wrapped).

    Raises:
        TypeError: ``value`` is not callable.
    """
    if isinstance(value, _Condition):
        return value
    if tenacity_kind(value) == "retry":
        return _TenacityCondition(value)
    if not callable(value):
        raise TypeError(
            f"{where} needs a retry condition, got {value!r}; "
            "use e.g. retry_if_exception_type(ValueError)."
        )
    return value  # type: ignore[return-value]


def _check_types(name: str, exception_types: object) -> ExceptionTypes:
    types = exception_types if isinstance(exception_types, tuple) else (exception_types,)
    if not types or not all(isinstance(t, type) and issubclass(t, BaseException) for t in types):
        raise TypeError(
            f"{name}() takes an exception class or a tuple of them, got {exception_types!r}; "
            f"use e.g. {name}((TimeoutError, ConnectionError))."
        )
    return exception_types  # type: ignore[return-value]


class retry_if_exception(_Condition):
    """Retry when ``predicate(error)`` is true.

    ``retry_if_exception(lambda e: "rate limit" in str(e).lower())``

    Args:
        predicate: Called with the exception; a true result retries.

    Raises:
        TypeError: ``predicate`` is not callable.
    """

    __slots__ = ("predicate",)

    def __init__(self, predicate: Callable[[BaseException], bool]) -> None:
        if not callable(predicate):
            raise TypeError(
                f"retry_if_exception() takes a function of the exception, got {predicate!r}; "
                "use e.g. retry_if_exception(lambda error: 'busy' in str(error))."
            )
        self.predicate = predicate

    def _matches(self, error: BaseException) -> bool:
        return bool(self.predicate(error))


class retry_if_exception_type(_Condition):
    """Retry when the exception is an instance of one of ``exception_types`` (subclasses too).

    ``retry_if_exception_type((TimeoutError, ConnectionError))``

    Args:
        exception_types: An exception class or a tuple of them (default: every ``Exception``).

    Raises:
        TypeError: Something other than exception classes was given.
    """

    __slots__ = ("exception_types",)

    def __init__(self, exception_types: ExceptionTypes = Exception) -> None:
        self.exception_types = _check_types(type(self).__name__, exception_types)

    def _matches(self, error: BaseException) -> bool:
        return isinstance(error, self.exception_types)


class retry_if_not_exception_type(retry_if_exception_type):
    """Retry unless the exception is an instance of one of ``exception_types``.

    ``retry_if_not_exception_type((ValueError, PermissionError))`` retries everything but
    those permanent errors.
    """

    __slots__ = ()

    def _matches(self, error: BaseException) -> bool:
        return not isinstance(error, self.exception_types)


class retry_unless_exception_type(retry_if_not_exception_type):
    """tenacity's name for :class:`retry_if_not_exception_type`."""

    __slots__ = ()


class retry_if_exception_message(_Condition):
    """Retry when ``str(error)`` equals ``message``, or when the regex ``match`` occurs in it.

    ``match`` is searched for anywhere in the message (``re.search``), so
    ``match="rate limit"`` matches ``"429: rate limit exceeded"``; anchor it with ``^`` to
    match the start only.

    Args:
        message: The exact message to retry on.
        match: A regular expression (string or compiled) to look for in the message.

    Raises:
        TypeError: Neither or both of ``message`` and ``match`` were given.
    """

    __slots__ = ("_pattern", "match", "message")

    def __init__(
        self, message: str | None = None, match: str | re.Pattern[str] | None = None
    ) -> None:
        name = type(self).__name__
        if message is None and match is None:
            raise TypeError(
                f"{name}() missing 1 required argument 'message' or 'match'; pass "
                "message='exact text' or match=r'regex'."
            )
        if message is not None and match is not None:
            raise TypeError(
                f"{name}() takes either 'message' or 'match', not both; keep one of them."
            )
        self.message = message
        self.match = match
        self._pattern = re.compile(match) if isinstance(match, str) else match

    def _matches(self, error: BaseException) -> bool:
        text = str(error)
        if self.message is not None:
            return text == self.message
        pattern = self._pattern
        return pattern is not None and pattern.search(text) is not None


class retry_if_not_exception_message(retry_if_exception_message):
    """Retry unless the message equals ``message`` or contains the regex ``match``."""

    __slots__ = ()

    def _matches(self, error: BaseException) -> bool:
        return not super()._matches(error)


class retry_if_exception_cause_type(_Condition):
    """Retry when an exception in the ``raise ... from ...`` chain (``__cause__``) matches.

    Only explicit causes are followed, not the implicit ``__context__`` (as in tenacity); use
    :class:`retry_if_exception` with your own walk for those.

    Args:
        exception_types: An exception class or a tuple of them.
    """

    __slots__ = ("exception_types",)

    def __init__(self, exception_types: ExceptionTypes = Exception) -> None:
        self.exception_types = _check_types(type(self).__name__, exception_types)

    def _matches(self, error: BaseException) -> bool:
        cause = error.__cause__
        seen: set[int] = set()
        while cause is not None and id(cause) not in seen:
            if isinstance(cause, self.exception_types):
                return True
            seen.add(id(cause))
            cause = cause.__cause__
        return False


class retry_any(_Condition):
    """Retry when any of the conditions says so (what ``a | b`` builds)."""

    __slots__ = ("retries",)

    def __init__(self, *retries: RetryCondition) -> None:
        self.retries = tuple(as_condition(r, "retry_any()") for r in retries)

    def _matches(self, error: BaseException) -> bool:
        return any(retry(error) for retry in self.retries)


class retry_all(_Condition):
    """Retry when all of the conditions say so (what ``a & b`` builds)."""

    __slots__ = ("retries",)

    def __init__(self, *retries: RetryCondition) -> None:
        self.retries = tuple(as_condition(r, "retry_all()") for r in retries)

    def _matches(self, error: BaseException) -> bool:
        return all(retry(error) for retry in self.retries)


class _Constant(_Condition):
    """A condition with a fixed answer; calling it with no argument returns itself.

    That makes both spellings work: LlamaIndex's ``retry_always()`` and tenacity's bare
    ``retry_always``.
    """

    __slots__ = ("answer", "name")

    def __init__(self, answer: bool, name: str) -> None:
        self.answer = answer
        self.name = name

    def __call__(self, error: BaseException | None = None) -> Any:
        if error is None:
            return self
        return super().__call__(error)

    def _matches(self, error: BaseException) -> bool:
        return self.answer

    def __repr__(self) -> str:
        return self.name


#: Retry every exception (``retry_always`` and ``retry_always()`` are the same condition).
retry_always = _Constant(True, "retry_always")
#: Retry no exception (``retry_never`` and ``retry_never()`` are the same condition).
retry_never = _Constant(False, "retry_never")


__all__ = [
    "RetryCondition",
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
    "retry_unless_exception_type",
]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
