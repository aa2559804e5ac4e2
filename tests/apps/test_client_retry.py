"""batonflow.client.retry: the policy's waits and budgets, and which failures it retries.

Pure bookkeeping, on a fake clock: no server, no sleeping.
"""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest
from batonflow.client import APIError, ClientTimeoutError, RetryPolicy, ServerUnavailableError
from batonflow.client.retry import (
    Attempts,
    Failure,
    parse_retry_after,
    status_failure,
    transport_failure,
)


class FakeClock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def refused() -> Failure:
    exc = httpx.ConnectError("[Errno 111] Connection refused")
    return transport_failure(exc, "POST", "/workflows/x/runs", "http://h:1")


def attempts(policy: RetryPolicy | None, clock: FakeClock, **kwargs) -> Attempts:
    return Attempts(
        policy,
        subject="No answer from h",
        advice="Check h",
        clock=clock,
        draw=lambda: 0.0,
        **kwargs,
    )


def test_waits_double_up_to_the_cap_with_jitter_below_them():
    """Each wait is first_delay * multiplier**n, capped, scaled down by at most jitter."""
    policy = RetryPolicy(first_delay=0.2, max_delay=1.0, multiplier=2.0, jitter=0.5)
    assert [policy.delay(n, 0.0) for n in (1, 2, 3, 4, 5)] == [0.2, 0.4, 0.8, 1.0, 1.0]
    assert policy.delay(3, 0.999) == pytest.approx(0.8 * 0.5005)


def test_the_time_budget_ends_with_one_last_attempt_then_says_what_was_tried():
    """Past total seconds the client gives up with what it tried, for how long, and the fix."""
    clock = FakeClock()
    tries = attempts(RetryPolicy(total=3.0, first_delay=1.0, jitter=0.0), clock)
    waits = []
    with pytest.raises(ServerUnavailableError) as caught:
        while True:
            wait = tries.pause(refused())
            waits.append(wait)
            clock.now += wait
    assert waits == [1.0, 2.0]  # the second is cut to the end of the budget
    assert str(caught.value) == (
        "No answer from h: 3 attempt(s) over 3.0 s failed, the last with ConnectError: [Errno "
        "111] Connection refused; the retry budget (total=3 s) is spent. Check h, or give the "
        "client a larger budget: Client(..., retry=RetryPolicy(total=...))."
    )
    assert isinstance(caught.value.__cause__, ServerUnavailableError)


def test_the_attempts_budget_counts_the_first_attempt():
    """attempts=3 means the first try and two retries."""
    clock = FakeClock()
    tries = attempts(RetryPolicy(attempts=3, total=None, jitter=0.0), clock)
    tries.pause(refused())
    tries.pause(refused())
    with pytest.raises(ServerUnavailableError, match=r"3 attempt\(s\) .* \(attempts=3\)"):
        tries.pause(refused())


def test_progress_starts_a_fresh_budget():
    """After reset() (an event came) the failures count from zero again."""
    clock = FakeClock()
    tries = attempts(RetryPolicy(attempts=2, total=None), clock)
    tries.pause(refused())
    tries.reset(advice="Resume later")
    tries.pause(refused())
    with pytest.raises(ServerUnavailableError, match="Resume later, or give"):
        tries.pause(refused())


def test_no_policy_raises_the_first_failure_itself():
    """retry=None: the first failure's own error, unchanged."""
    failure = refused()
    with pytest.raises(ServerUnavailableError) as caught:
        attempts(None, FakeClock()).pause(failure)
    assert caught.value is failure.error


def test_a_failure_that_may_have_been_carried_out_is_never_retried():
    """A POST whose connection broke after sending raises at once, whatever the budget."""
    lost = transport_failure(
        httpx.RemoteProtocolError("Server disconnected"), "POST", "/workflows/x/runs", "http://h"
    )
    assert not lost.retryable
    with pytest.raises(ServerUnavailableError, match="may have carried it out"):
        attempts(RetryPolicy(), FakeClock()).pause(lost)


def test_retry_after_replaces_the_wait_and_one_past_the_budget_gives_up():
    """A Retry-After is waited exactly; one longer than the budget left ends the retries."""
    clock = FakeClock()
    tries = attempts(RetryPolicy(total=10.0), clock)
    later = Failure("503 Service Unavailable (Retry-After: 4 s)", True, APIError(503, "x"), 4.0)
    assert tries.pause(later) == 4.0
    clock.now += 4.0
    too_late = Failure("503 (Retry-After: 60 s)", True, APIError(503, "x"), 60.0)
    with pytest.raises(ServerUnavailableError, match=r"the last with 503 \(Retry-After: 60 s\)"):
        tries.pause(too_late)


@pytest.mark.parametrize(
    ("status", "advice"),
    [(429, "run queue is full"), (503, "cannot reach its run store")],
)
def test_a_server_that_kept_answering_is_not_said_to_be_away(status, advice):
    """Spent on a server's own answers, the error says what they meant, not 'check that the
    server runs'."""
    response = httpx.Response(status, headers={"retry-after": "30"}, json={"detail": "busy"})
    failure = status_failure(response, "POST", "/workflows/x/runs")
    assert failure is not None and failure.status == status
    tries = attempts(RetryPolicy(total=10.0), FakeClock())
    with pytest.raises(ServerUnavailableError) as caught:
        tries.pause(failure)
    assert advice in str(caught.value)
    assert "Check h" not in str(caught.value)


def test_the_calls_deadline_ends_retries_with_its_timeout_error():
    """A wait that would pass the call's deadline raises its ClientTimeoutError instead."""
    clock = FakeClock()
    tries = attempts(
        RetryPolicy(first_delay=5.0, jitter=0.0),
        clock,
        deadline=clock.now + 2.0,
        on_deadline=lambda reason: ClientTimeoutError(f"too late ({reason})"),
    )
    with pytest.raises(ClientTimeoutError, match=r"too late \(ConnectError") as caught:
        tries.pause(refused())
    assert isinstance(caught.value.__cause__, ServerUnavailableError)
    assert tries.timeout(30.0) == 2.0 and tries.timeout(None) == 2.0
    clock.now += 10
    assert tries.timeout(30.0) == 0.5  # the floor: the last look still gets its answer


@pytest.mark.parametrize(
    "status, method, headers, retried",
    [
        pytest.param(503, "POST", {}, True, id="503-post"),
        pytest.param(503, "GET", {"retry-after": "2"}, True, id="503-get"),
        pytest.param(502, "GET", {}, True, id="502-get"),
        pytest.param(504, "GET", {}, True, id="504-get"),
        pytest.param(502, "POST", {}, False, id="502-post"),
        pytest.param(504, "POST", {}, False, id="504-post"),
        pytest.param(429, "POST", {"retry-after": "1"}, True, id="429-with-retry-after"),
        pytest.param(429, "GET", {}, None, id="429-without"),
        pytest.param(500, "GET", {}, None, id="500"),
        pytest.param(404, "GET", {}, None, id="404"),
    ],
)
def test_which_statuses_are_retried(status, method, headers, retried):
    """503 and 429-with-Retry-After always; 502/504 only for GETs; nothing else."""
    response = httpx.Response(status, headers=headers, json={"detail": "d"})
    failure = status_failure(response, method, "/p")
    assert (failure.retryable if failure is not None else None) is retried


@pytest.mark.parametrize(
    "exc, method, retried",
    [
        pytest.param(httpx.ConnectError("refused"), "POST", True, id="refused-post"),
        pytest.param(httpx.ConnectTimeout("t"), "POST", True, id="connect-timeout-post"),
        pytest.param(httpx.PoolTimeout("t"), "POST", True, id="pool-timeout-post"),
        pytest.param(httpx.ReadTimeout("t"), "POST", False, id="read-timeout-post"),
        pytest.param(httpx.ReadError("reset"), "POST", False, id="reset-post"),
        pytest.param(httpx.RemoteProtocolError("closed"), "POST", False, id="closed-post"),
        pytest.param(httpx.ReadTimeout("t"), "GET", True, id="read-timeout-get"),
        pytest.param(httpx.ReadError("reset"), "GET", True, id="reset-get"),
    ],
)
def test_which_connection_failures_are_retried(exc, method, retried):
    """A POST only when it surely was not sent; a GET always."""
    assert transport_failure(exc, method, "/p", "http://h").retryable is retried


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(
            lambda: transport_failure(httpx.ReadTimeout("t"), "POST", "/p", "h", keyed=True),
            id="read-timeout",
        ),
        pytest.param(
            lambda: transport_failure(
                httpx.RemoteProtocolError("closed"), "POST", "/p", "h", keyed=True
            ),
            id="closed",
        ),
        pytest.param(
            lambda: status_failure(httpx.Response(502, json={}), "POST", "/p", keyed=True), id="502"
        ),
        pytest.param(
            lambda: status_failure(httpx.Response(504, json={}), "POST", "/p", keyed=True), id="504"
        ),
    ],
)
def test_a_post_with_an_idempotency_key_is_retried_as_a_get(failure):
    """A start carries an Idempotency-Key: whatever happened to an attempt, sending it again
    gets the run it started, so it is retried after the failures a GET is."""
    assert failure().retryable is True


def test_retry_after_as_seconds_or_a_date():
    """Retry-After is delta-seconds or an HTTP date; anything else is ignored."""
    assert parse_retry_after("7") == 7.0
    soon = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (parse_retry_after(soon) or 0) <= 30
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


@pytest.mark.parametrize(
    "kwargs, named",
    [
        pytest.param({"total": -1}, "total=-1", id="total"),
        pytest.param({"attempts": 0}, "attempts=0", id="attempts"),
        pytest.param({"jitter": 2}, "jitter=2", id="jitter"),
        pytest.param({"multiplier": 0.5}, "multiplier=0.5", id="multiplier"),
        pytest.param({"total": None}, "would retry forever", id="no-limit"),
    ],
)
def test_a_bad_policy_is_refused_naming_the_setting(kwargs, named):
    """RetryPolicy checks its settings and says how to fix them."""
    with pytest.raises(ValueError, match=rf"RetryPolicy got .*{named}.*; fix those, or pass"):
        RetryPolicy(**kwargs)


def test_a_client_refuses_a_retry_that_is_not_a_policy():
    """Client(retry=5) is a TypeError that shows the right call."""
    from batonflow.client import Client

    with pytest.raises(TypeError, match=r"retry=5 is not a RetryPolicy; pass e.g."):
        Client("http://h:1", retry=5)  # type: ignore[arg-type]
