"""Riding out a PostgreSQL outage: which errors are about reachability, and how long to wait.

A server restart (``pg_ctl restart``, a failover, a killed postmaster) or a network failure
makes every store call fail for a while. :class:`Outage` is the store's memory of it: the
first call that finds the server gone retries with backoff for at most ``blocking`` seconds
(short blips stay invisible), and from then on, until a call succeeds, calls fail at once with
:class:`~batonflow.core.errors.StoreUnreachableError` carrying ``retry_after`` (only one call
per backoff interval tries the server again). Once the server has been unreachable for
``seconds`` (the budget), the error's ``retry_after`` is ``None``: callers give up.

Why so little blocking: the engine calls the store synchronously on the event loop at step
boundaries, and the server does for its requests. A call that slept through the outage would
freeze the loop (no 503s, no heartbeats, no other run). The waiting is done instead where it
can be asynchronous: a run waits at its step boundary (``await`` ``retry_after``), an HTTP
request gets ``503`` with ``Retry-After``, the heartbeat tries at its next beat.

Only reachability is retried (:func:`classify`). A write is retried when it cannot have
committed: the connection failed before the statement was sent, or the server answered it
with an error that ends the session (a shutdown, SQLSTATE class 08 or ``57P01``/``57P03``: a
backend ends the session between statements, or aborts the transaction it was in). A
connection lost with no answer may have committed: only writes marked idempotent are retried
then; the others report that they may or may not have been written.
"""

from __future__ import annotations

import math
import select
import threading
import time
from dataclasses import dataclass
from enum import Enum
from typing import Any

import psycopg
from batonflow.core.errors import StoreUnreachableError
from psycopg_pool import PoolTimeout

#: SQLSTATEs of a session the server ended (or would not start) because it shuts down,
#: restarts or lost its postmaster: the statement in flight did not commit.
_SESSION_ENDED = frozenset({"57P01", "57P03"})


class Failure(Enum):
    """What a failed store call tells about the server."""

    #: Not about reachability (a constraint, a full disk, bad SQL...): not retried.
    OTHER = "other"
    #: The server cannot be reached and the call did not commit anything: retried.
    UNSENT = "unsent"
    #: The connection was lost with no answer: a write may have committed.
    UNANSWERED = "unanswered"


def classify(exc: BaseException, *, sent: bool, cut_off: bool) -> Failure:
    """Whether ``exc``, raised by a call that had (``sent``) or had not sent its statement,
    is about reachability, and whether that call may have committed.

    ``cut_off``: the pool's last connection attempt failed (see :meth:`Outage.pool_cut_off`);
    a ``PoolTimeout`` is then the server's absence, else a pool whose connections are busy.
    """
    if isinstance(exc, PoolTimeout):
        return Failure.UNSENT if cut_off else Failure.OTHER
    if not isinstance(exc, psycopg.OperationalError):
        return Failure.OTHER
    state = exc.sqlstate
    if state is None:
        # libpq's own errors: a refused or failed connection, a connection that broke.
        return Failure.UNANSWERED if sent else Failure.UNSENT
    if state in _SESSION_ENDED or state.startswith("08"):
        return Failure.UNSENT
    if state == "57P02":  # crash shutdown: the commit may have been flushed before it
        return Failure.UNANSWERED
    return Failure.OTHER  # a full disk, a lock timeout, a cancelled query...


def pool_options(outage: Outage) -> dict[str, Any]:
    """The ``ConnectionPool`` options that drop dead connections and tell ``outage`` of
    connections that could not be made (so a ``PoolTimeout`` says which it was: the server
    is unreachable, or the pool is busy)."""

    class Connection(psycopg.Connection[Any]):
        @classmethod
        def connect(cls, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            try:
                conn = super().connect(*args, **kwargs)
            except psycopg.OperationalError:
                outage.unreachable()
                raise
            outage.reached()
            return conn

    def check(conn: psycopg.Connection[Any]) -> None:
        # Drop a connection the server closed while it sat in the pool. An idle connection
        # receives nothing unless the server ended it (a shutdown message, then EOF), so it
        # costs a round trip only when its socket is readable: none on the hot path.
        try:
            if conn.closed:
                raise psycopg.OperationalError("the connection is closed")
            readable, _, _ = select.select([conn.fileno()], [], [], 0)
            if readable:
                conn.execute("")
        except psycopg.Error:
            outage.unreachable()
            raise

    return {
        "connection_class": Connection,
        "check": check,
        # The pool gives up a reconnection after this long and starts afresh (at once) at
        # the next request: a server back from an outage is found within about as long,
        # not after the pool's backoff grew to minutes.
        "reconnect_timeout": 2.0,
    }


@dataclass(frozen=True, slots=True)
class OutagePolicy:
    """How long a store rides out an unreachable PostgreSQL server, and how.

    Attributes:
        seconds: The budget: for how long calls report the outage as passing
            (``StoreUnreachableError.retry_after`` set). Runs wait at their step boundary
            that long; then the error surfaces as any store error (a run is interrupted).
        blocking: The most one call blocks its thread retrying before it reports the outage.
        first_delay: The first pause between two tries; doubled after each failed one.
        max_delay: The longest pause between two tries.
    """

    seconds: float = 60.0
    blocking: float = 0.5
    first_delay: float = 0.05
    max_delay: float = 1.0

    def __post_init__(self) -> None:
        if not (self.seconds >= 0 and math.isfinite(self.seconds)):
            raise ValueError(
                f"outage_seconds={self.seconds!r} must be a number of seconds, 0 or more, e.g. 60."
            )


class Outage:
    """The store's state of reachability, shared by its threads (the loop and ``to_thread``).

    Args:
        policy: The budget and the backoff.
        clock: ``time.monotonic`` unless tests pass another.
    """

    def __init__(self, policy: OutagePolicy, clock: Any = time.monotonic) -> None:
        self.policy = policy
        self._clock = clock
        self._lock = threading.Lock()
        #: When the current outage began (``None``: the server answers).
        self.since: float | None = None
        self._delay = policy.first_delay
        self._next_try = 0.0
        # When a connection last failed to be made (or was found dead), and last was made.
        self._failed_at = -math.inf
        self._made_at = -math.inf

    def unreachable(self) -> None:
        """The pool could not make a connection, or found one dead."""
        self._failed_at = self._clock()

    def reached(self) -> None:
        """The pool made a connection."""
        self._made_at = self._clock()

    def pool_cut_off(self) -> bool:
        """Whether the pool's latest connection attempt failed (a ``PoolTimeout`` then means
        the server is unreachable, not that every connection is busy)."""
        return self._failed_at >= self._made_at

    def up(self) -> None:
        """A call succeeded: the outage, if any, is over."""
        if self.since is not None:
            with self._lock:
                self.since = None
                self._delay = self.policy.first_delay
                self._next_try = 0.0

    def down(self) -> float:
        """A call found the server unreachable; return the pause before the next try."""
        with self._lock:
            now = self._clock()
            if self.since is None:
                self.since = now
                self._delay = self.policy.first_delay
            delay = self._delay
            self._delay = min(delay * 2, self.policy.max_delay)
            self._next_try = now + delay
            return delay

    def may_try(self) -> bool:
        """Whether a call should try the server now: always while it answers; during an
        outage, once per backoff pause (the others report the outage without waiting)."""
        if self.since is None:
            return True
        with self._lock:
            now = self._clock()
            if now < self._next_try:
                return False
            self._next_try = now + self._delay  # this caller probes; the others wait for it
            return True

    def retry_after(self) -> float | None:
        """Seconds until the next try, or ``None`` once the budget is spent."""
        since = self.since
        now = self._clock()
        if since is not None and now - since >= self.policy.seconds:
            return None
        return max(self._next_try - now, self.policy.first_delay)

    def lasted(self) -> float:
        """For how many seconds the server has been unreachable."""
        since = self.since
        return 0.0 if since is None else self._clock() - since

    def error(self, action: str, where: str, reason: str | None = None) -> StoreUnreachableError:
        """The error of a call that could not ``action`` on the server at ``where``."""
        retry_after = self.retry_after()
        why = "" if reason is None else f" ({reason})"
        if retry_after is None:
            return StoreUnreachableError(
                f"Could not {action}: the PostgreSQL server at {where} has been unreachable "
                f"for {self.lasted():.0f} s{why}, longer than the store waits "
                f"(outage_seconds={self.policy.seconds:g}); check that it runs and the URL is "
                "right, or wait longer (batonflow serve --outage-seconds, "
                "BATONFLOW_OUTAGE_SECONDS)."
            )
        return StoreUnreachableError(
            f"Could not {action}: the PostgreSQL server at {where} cannot be reached now{why}; "
            f"nothing was written. Retry in {retry_after:.1f} s (the store waits for it up to "
            f"{self.policy.seconds:g} s).",
            retry_after=retry_after,
        )


__all__ = ["Failure", "Outage", "OutagePolicy", "classify", "pool_options"]
