"""Retry conditions: called with the exception, combined with | and &."""

from __future__ import annotations

import re

import pytest
import tenacity
from batonflow.core import (
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


def caused(outer: BaseException, *chain: BaseException) -> BaseException:
    """``outer`` raised ``from`` chain[0], which was raised from chain[1], ..."""
    current = outer
    for cause in chain:
        current.__cause__ = cause
        current = cause
    return outer


@pytest.mark.parametrize(
    ("condition", "error", "expected"),
    [
        pytest.param(retry_if_exception_type(OSError), ConnectionError(), True, id="type-subclass"),
        pytest.param(
            retry_if_exception_type((KeyError, OSError)), KeyError(), True, id="type-tuple"
        ),
        pytest.param(retry_if_exception_type(OSError), ValueError(), False, id="type-other"),
        pytest.param(retry_if_exception_type(), ValueError(), True, id="type-default-exception"),
        pytest.param(retry_if_not_exception_type(ValueError), ValueError(), False, id="not-type"),
        pytest.param(retry_if_not_exception_type(ValueError), OSError(), True, id="not-type-other"),
        pytest.param(retry_unless_exception_type(KeyError), KeyError(), False, id="unless"),
        pytest.param(
            retry_if_exception(lambda e: "busy" in str(e)), OSError("busy"), True, id="pred"
        ),
        pytest.param(
            retry_if_exception(lambda e: "busy" in str(e)), OSError("gone"), False, id="pred-no"
        ),
        pytest.param(
            retry_if_exception_message(message="busy"), OSError("busy"), True, id="msg-exact"
        ),
        pytest.param(
            retry_if_exception_message(message="busy"),
            OSError("busy now"),
            False,
            id="msg-not-prefix",
        ),
        pytest.param(
            retry_if_exception_message(match="rate limit"),
            OSError("429: rate limit exceeded"),
            True,
            id="match-searches-anywhere",
        ),
        pytest.param(
            retry_if_exception_message(match=r"^rate"),
            OSError("429: rate"),
            False,
            id="match-anchored",
        ),
        pytest.param(
            retry_if_exception_message(match=re.compile(r"code=\d+")),
            OSError("code=503"),
            True,
            id="match-compiled",
        ),
        pytest.param(
            retry_if_not_exception_message(match="denied"), OSError("denied!"), False, id="not-msg"
        ),
        pytest.param(
            retry_if_not_exception_message(message="x"), OSError("y"), True, id="not-msg-other"
        ),
        pytest.param(
            retry_if_exception_cause_type(KeyError),
            caused(OSError(), ValueError(), KeyError()),
            True,
            id="cause-deep",
        ),
        pytest.param(
            retry_if_exception_cause_type(KeyError), KeyError(), False, id="cause-not-self"
        ),
        pytest.param(retry_always, ValueError(), True, id="always"),
        pytest.param(retry_never, ValueError(), False, id="never"),
    ],
)
async def test_condition_answers(condition, error: BaseException, expected: bool) -> None:
    """Each condition answers True (retry) or False for an exception."""
    assert condition(error) is expected


async def test_cause_type_ignores_implicit_context() -> None:
    """Only ``raise ... from`` causes count, not the exception being handled (__context__)."""
    try:
        try:
            raise KeyError("inner")
        except KeyError:
            raise OSError("outer")  # noqa: B904
    except OSError as error:
        assert retry_if_exception_cause_type(KeyError)(error) is False


async def test_cause_type_survives_a_cause_cycle() -> None:
    """A cyclic __cause__ chain ends the walk instead of looping forever."""
    a, b = OSError("a"), OSError("b")
    a.__cause__, b.__cause__ = b, a
    assert retry_if_exception_cause_type(KeyError)(a) is False


async def test_always_and_never_are_values_and_calls() -> None:
    """retry_always / retry_never work bare (tenacity) and called with no argument (LlamaIndex)."""
    assert retry_always() is retry_always
    assert retry_never() is retry_never
    assert (retry_never() | retry_if_exception_type(KeyError))(KeyError()) is True
    assert (retry_always & retry_if_exception_type(KeyError))(OSError()) is False


async def test_operators_build_the_named_combinators() -> None:
    """a | b is retry_any(a, b); a & b is retry_all(a, b); chains group left to right."""
    by_type = retry_if_exception_type(KeyError)
    by_text = retry_if_exception_message(match="busy")
    either, both = by_type | by_text, by_type & by_text
    assert isinstance(either, retry_any) and either.retries == (by_type, by_text)
    assert isinstance(both, retry_all) and both.retries == (by_type, by_text)
    three = by_type | by_text | retry_if_exception_cause_type(OSError)
    assert isinstance(three, retry_any) and isinstance(three.retries[0], retry_any)
    assert three(caused(ValueError(), OSError())) is True
    assert three(ValueError("calm")) is False
    assert both(KeyError("busy")) is True and both(KeyError("calm")) is False


async def test_plain_callables_combine_from_either_side() -> None:
    """A plain function of the exception is a condition, on the left or right of | and &."""

    def is_busy(error: BaseException) -> bool:
        return "busy" in str(error)

    assert (is_busy | retry_if_exception_type(KeyError))(OSError("busy")) is True
    assert (retry_if_exception_type(KeyError) & is_busy)(KeyError("busy")) is True
    assert retry_any(is_busy)(OSError("calm")) is False


async def test_tenacity_conditions_mix_in_both_directions() -> None:
    """tenacity's own conditions work inside ours, and ours inside tenacity's."""
    ours_outside = retry_if_exception_type(KeyError) | tenacity.retry_if_exception_type(OSError)
    assert ours_outside(OSError()) is True and ours_outside(ValueError()) is False
    tenacity_outside = tenacity.retry_if_exception_type(OSError) | retry_if_exception_type(KeyError)
    state = tenacity.RetryCallState(tenacity.Retrying(), None, (), {})
    state.outcome = tenacity.Future.construct(1, KeyError(), True)
    assert tenacity_outside(state) is True


@pytest.mark.parametrize(
    ("make", "match"),
    [
        pytest.param(
            lambda: retry_if_exception_message(),
            r"missing 1 required argument 'message' or 'match'; pass message=",
            id="neither",
        ),
        pytest.param(
            lambda: retry_if_exception_message(message="a", match="b"),
            r"takes either 'message' or 'match', not both; keep one",
            id="both",
        ),
        pytest.param(
            lambda: retry_if_exception_type("ValueError"),
            r"retry_if_exception_type\(\) takes an exception class or a tuple of them, got "
            r"'ValueError'; use e\.g\.",
            id="type-as-string",
        ),
        pytest.param(
            lambda: retry_if_not_exception_type((KeyError, 3)),
            r"retry_if_not_exception_type\(\) takes an exception class",
            id="tuple-with-junk",
        ),
        pytest.param(
            lambda: retry_if_exception("busy"),
            r"retry_if_exception\(\) takes a function of the exception, got 'busy'",
            id="predicate-not-callable",
        ),
        pytest.param(
            lambda: retry_any(retry_always, 3),
            r"retry_any\(\) needs a retry condition, got 3; use e\.g\.",
            id="combinator-junk",
        ),
    ],
)
async def test_bad_arguments_say_what_to_pass(make, match: str) -> None:
    """Wrong arguments are a TypeError naming the condition and ending with the fix."""
    with pytest.raises(TypeError, match=match):
        make()


async def test_calling_with_something_else_than_an_exception_is_an_error() -> None:
    """A condition called with a non-exception says how to call it."""
    with pytest.raises(TypeError, match=r"call it as condition\(error\)"):
        retry_if_exception_type(KeyError)(3)  # type: ignore[arg-type]
