"""How :mod:`batonflow.client` retries: :class:`RetryPolicy` and the bookkeeping of one call.

Both clients, :class:`~batonflow.client.Client` and :class:`~batonflow.client.AsyncClient`,
ask this module the same two questions after each failed attempt: may this request be sent
again (:func:`transport_failure`, :func:`status_failure`), and if so, how long to wait first
(:meth:`Attempts.pause`, which raises the final error once the budget is spent). They differ
only in how they sleep.

What is retried, and why:

============================================  ==============  ===========================
failure                                        ``GET`` (and    ``POST`` (start, answer,
                                               event streams)  send_event, cancel)
============================================  ==============  ===========================
connection refused, connect or pool timeout    yes             yes: nothing was sent
connection reset or closed, read timeout       yes             no: it may have been done
``503`` (the server did not take it)           yes             yes
``429`` with ``Retry-After``                   yes             yes
``502``, ``504`` (a proxy's)                   yes             no: it may have been done
anything else (``4xx``, ``500``)               no              no
============================================  ==============  ===========================

A ``POST`` whose answer was lost may have started a run or delivered an answer; sending it
again could start a second run, so the client raises instead and the caller checks with
``get()`` or ``list()``. A start is the exception: the client sends it with an
``Idempotency-Key`` header (one key per call, the same on every attempt), and the server
answers a key it has seen with the run that key started, so a start is retried after every
failure in the table, as a ``GET`` is. A ``502`` or ``504`` is a proxy's answer after it may
have passed the request on; a ``503`` says the request was not processed (RFC 9110, and what
``batonflow serve`` means by it: "nothing was recorded or run").

The loops are written here rather than with tenacity (a dependency of batonflow's core): an
event stream starts a fresh budget each time it makes progress, and it yields events from
inside its attempt, which tenacity's attempt context (it swallows every exception, the
generator's own exit included) is not made for.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from .errors import ClientTimeoutError, ServerUnavailableError, api_error

#: Methods that may be sent again whatever happened to the first try: they change nothing.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: The header that makes a start safe to send again (see :mod:`batonflow.client.retry`).
IDEMPOTENCY_HEADER = "Idempotency-Key"

#: What to say about a status the client retries.
RETRIED_STATUSES = {
    429: "429 Too Many Requests",
    502: "502 Bad Gateway",
    503: "503 Service Unavailable",
    504: "504 Gateway Timeout",
}


#: The shortest timeout an attempt gets near its call's deadline: a call with ``timeout=``
#: ends at most this much after it.
ATTEMPT_FLOOR = 0.5


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When and how long a client retries a request that failed for a passing reason.

    Between attempts the client waits ``first_delay``, then ``multiplier`` times longer each
    time, at most ``max_delay``; ``jitter`` draws each wait at random between
    ``(1 - jitter)`` and 1 times that, so clients that lost the same server do not come back
    in step. A ``Retry-After`` header (on ``429``, ``502``, ``503``, ``504``) replaces the wait.
    The client gives up when either budget is spent: ``total`` seconds since the first
    failure (the last attempt is made at the end of it), or ``attempts`` attempts in all.
    The default rides out a server that is down for 15-20 s (a restart, a replica replaced
    behind a load balancer).

    Which failures are retried does not depend on the policy: see :mod:`batonflow.client.retry`.
    ``Client(url, retry=None)`` turns retrying off.

    Attributes:
        total: Seconds of retrying after the first failure; ``None``: no time limit.
        attempts: Most attempts per call, the first included; ``None``: no count limit.
        first_delay: Seconds before the first retry.
        max_delay: The longest wait between two attempts (``Retry-After`` excepted).
        multiplier: How much longer each wait is than the one before.
        jitter: The random share of each wait, 0 (none) to 1.

    Raises:
        ValueError: A negative or out-of-range setting, or no limit at all.
    """

    total: float | None = 30.0
    attempts: int | None = None
    first_delay: float = 0.2
    max_delay: float = 5.0
    multiplier: float = 2.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        problems = []
        if self.total is not None and self.total < 0:
            problems.append(f"total={self.total} (seconds, >= 0)")
        if self.attempts is not None and self.attempts < 1:
            problems.append(f"attempts={self.attempts} (>= 1; 1 means no retry)")
        if self.first_delay < 0 or self.max_delay < 0:
            problems.append(f"first_delay={self.first_delay}, max_delay={self.max_delay} (>= 0)")
        if self.multiplier < 1:
            problems.append(f"multiplier={self.multiplier} (>= 1)")
        if not 0 <= self.jitter <= 1:
            problems.append(f"jitter={self.jitter} (0 to 1)")
        if self.total is None and self.attempts is None:
            problems.append("total=None with attempts=None (it would retry forever)")
        if problems:
            raise ValueError(
                f"RetryPolicy got {'; '.join(problems)}; fix those, or pass retry=None to "
                "the client to turn retrying off."
            )

    def delay(self, retry: int, draw: float) -> float:
        """Seconds to wait before retry number ``retry`` (1, 2, ...), ``draw`` in [0, 1)."""
        base = min(self.max_delay, self.first_delay * self.multiplier ** (retry - 1))
        return base * (1.0 - self.jitter * draw)


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed attempt, as the retry bookkeeping sees it.

    Attributes:
        reason: What happened, for the final error ("connection refused (ConnectError: ...)").
        retryable: Whether this request may be sent again after it.
        error: The error to raise when it is not retried.
        retry_after: The server's ``Retry-After``, in seconds, when it sent one.
    """

    reason: str
    retryable: bool
    error: Exception
    retry_after: float | None = None
    status: int | None = None


#: What to do when the server kept answering with one of these statuses.
_ANSWERED = {
    429: "The server is up but turned the request away: the workflow's run queue is full "
    "(batonflow serve --max-queued). Send it again later, once queued runs have started",
    503: "The server is up but cannot reach its run store (a database restart or outage): "
    "check the database",
}


def transport_failure(
    exc: httpx.TransportError, method: str, path: str, base_url: str, *, keyed: bool = False
) -> Failure:
    """A failure to connect, send or receive, retryable when the request surely did nothing
    or doing it again is harmless (a ``GET``; a request with an ``Idempotency-Key``, ``keyed``).
    """
    reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    unsent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
    if unsent or keyed or method in IDEMPOTENT_METHODS:
        error = ServerUnavailableError(
            f"No answer from the batonflow server at {base_url} to {method} {path} ({reason}); "
            "check the URL and that 'batonflow serve' runs there."
        )
        return Failure(reason, True, error)
    error = ServerUnavailableError(
        f"The connection to the batonflow server at {base_url} broke after {method} {path} "
        f"was sent ({reason}), so the server may have carried it out; it is not retried "
        "automatically. Check with get() or list() whether it took effect before sending it "
        "again."
    )
    return Failure(reason, False, error)


def status_failure(
    response: httpx.Response, method: str, path: str, *, keyed: bool = False
) -> Failure | None:
    """A ``429``/``502``/``503``/``504`` answer as a failure, ``None`` for any other status.

    The response body must have been read. ``keyed``: the request carries an
    ``Idempotency-Key``, so a proxy's ``502``/``504`` is retried too.
    """
    status = response.status_code
    if status not in RETRIED_STATUSES:
        return None
    retry_after = parse_retry_after(response.headers.get("retry-after"))
    reason = RETRIED_STATUSES[status] + (
        f" (Retry-After: {retry_after:g} s)" if retry_after is not None else ""
    )
    try:
        body = response.json()
    except ValueError:
        body = None
    cause = api_error(status, body, response.text)
    if status == 429 and retry_after is None:
        return None  # a rate limit that does not say when: retrying blindly makes it worse
    if status in (502, 504) and not keyed and method not in IDEMPOTENT_METHODS:
        error = ServerUnavailableError(
            f"{method} {path} got {RETRIED_STATUSES[status]} from a proxy, which may have "
            "passed it on to the server before it failed, so it is not retried automatically. "
            "Check with get() or list() whether it took effect before sending it again."
        )
        error.__cause__ = cause
        return Failure(reason, False, error, retry_after, status)
    return Failure(reason, True, cause, retry_after, status)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date), ``None`` if bad."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


class Attempts:
    """The retries of one call: counts failures, paces the next attempt, raises at the end.

    Args:
        policy: The client's policy; ``None`` gives up at the first failure.
        subject: What the call does, for the final error ("GET /runs/x at http://...").
        advice: What the caller can do when the server stays away (ends the final error).
        deadline: A ``time.monotonic()`` by which the call must end (its ``timeout=``).
        on_deadline: The error to raise at the deadline, given the last failure's reason.
        clock: The monotonic clock (tests pass a fake one).
        draw: Random numbers in [0, 1) for the jitter.
    """

    def __init__(
        self,
        policy: RetryPolicy | None,
        *,
        subject: str,
        advice: str,
        deadline: float | None = None,
        on_deadline: Callable[[str], ClientTimeoutError] | None = None,
        clock: Callable[[], float] = time.monotonic,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self.policy = policy
        self.subject = subject
        self.advice = advice
        self.deadline = deadline
        self.on_deadline = on_deadline
        self.clock = clock
        self.draw = draw
        self.failures = 0
        self.first_failure = 0.0

    def reset(self, advice: str | None = None) -> None:
        """The call made progress (an event came): the next failure starts a fresh budget.

        Args:
            advice: New advice for the final error (a stream's resume point moved on).
        """
        self.failures = 0
        if advice is not None:
            self.advice = advice

    def remaining(self) -> float | None:
        """Seconds left before the deadline (``None``: no deadline); never negative."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - self.clock())

    def timeout(self, seconds: float | None) -> float | None:
        """A timeout of one attempt, cut so the attempt ends by the deadline.

        An attempt keeps at least ``ATTEMPT_FLOOR`` seconds, so the last look just before the
        deadline (``wait()``'s last poll) can still get its answer.
        """
        left = self.remaining()
        if left is None:
            return seconds
        left = max(left, ATTEMPT_FLOOR)
        return left if seconds is None else min(seconds, left)

    def pause(self, failure: Failure) -> float:
        """Seconds to wait before the next attempt after ``failure``.

        Raises:
            ClientError: ``failure``'s own error when it may not be retried; the deadline's
                :class:`ClientTimeoutError`; or, once the budget is spent, a
                :class:`ServerUnavailableError` saying what was tried for how long.
        """
        now = self.clock()
        if self.failures == 0:
            self.first_failure = now
        self.failures += 1
        if self.deadline is not None and now >= self.deadline:
            raise self._timed_out(failure)
        if not failure.retryable:
            raise failure.error
        policy = self.policy
        if policy is None:
            raise failure.error  # retrying is off: the first failure's own error, as it was
        elapsed = now - self.first_failure
        wait = policy.delay(self.failures, self.draw())
        if failure.retry_after is not None:
            wait = failure.retry_after
        if policy.attempts is not None and self.failures >= policy.attempts:
            raise self._exhausted(failure, f"attempts={policy.attempts}", "attempts")
        if policy.total is not None and elapsed + wait > policy.total:
            if failure.retry_after is not None or elapsed >= policy.total:
                raise self._exhausted(failure, f"total={policy.total:g} s", "total")
            wait = policy.total - elapsed  # one last attempt at the end of the budget
        if self.deadline is not None and now + wait >= self.deadline:
            # Sleeping past the deadline would only delay the same error.
            raise self._timed_out(failure)
        return wait

    def _timed_out(self, failure: Failure) -> Exception:
        if self.on_deadline is None:
            return failure.error
        error = self.on_deadline(failure.reason)
        error.__cause__ = failure.error
        return error

    def _exhausted(self, failure: Failure, budget: str, knob: str) -> ServerUnavailableError:
        elapsed = self.clock() - self.first_failure
        # The server answered: the advice to check that it runs would mislead.
        advice = _ANSWERED.get(failure.status or 0, self.advice)
        error = ServerUnavailableError(
            f"{self.subject}: {self.failures} attempt(s) over {elapsed:.1f} s failed, the last "
            f"with {failure.reason}; the retry budget ({budget}) is spent. {advice}, or "
            f"give the client a larger budget: Client(..., retry=RetryPolicy({knob}=...))."
        )
        error.__cause__ = failure.error
        return error


__all__ = [
    "ATTEMPT_FLOOR",
    "IDEMPOTENCY_HEADER",
    "IDEMPOTENT_METHODS",
    "RETRIED_STATUSES",
    "Attempts",
    "Failure",
    "RetryPolicy",
    "parse_retry_after",
    "status_failure",
    "transport_failure",
]
