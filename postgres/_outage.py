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

Only reachability is retried (:func:`classify`): a connection that failed before the statement
was sent, a session the server ended (a shutdown, SQLSTATE class 08 or ``57P01``/``57P03``), a
connection lost with no answer. A write whose statement was sent may have committed before its
connection broke: :class:`Calls` makes it again only if it is idempotent, or once its recheck
(:mod:`batonflow.core.durable._rechecks`) found it not committed; the recheck is kept for the caller's
retry of the same write when the call reports the outage.
"""

from __future__ import annotations

import math
import select
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar, cast

import psycopg
from batonflow.core.durable._rechecks import NOT_COMMITTED, Recheck
from batonflow.core.errors import CheckpointError, StoreUnreachableError
from psycopg_pool import ConnectionPool, PoolTimeout

from ._errors import reason, store_error

T = TypeVar("T")
#: The most lost-answer rechecks kept for the callers' retries (the oldest go first).
_UNSURE_KEPT = 1024

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


class Calls:
    """The store's calls to its server, each on a pooled connection, through an outage.

    Args:
        pool: The store's pool (made with :func:`pool_options`).
        outage: The store's :class:`Outage`.
        where: The server as messages name it (its URL without password).
        url: The URL (to take the password out of libpq's reasons).
        busy_seconds: How long a call waits when every connection is busy.
    """

    def __init__(
        self, pool: ConnectionPool, outage: Outage, where: str, url: str, busy_seconds: float
    ) -> None:
        self.pool = pool
        self.outage = outage
        self.where = where
        self.url = url
        self.busy_seconds = busy_seconds
        #: The rechecks of writes whose answer was lost when the outage was reported: the
        #: caller's retry of the same write (same key) makes that recheck first.
        self.unsure: dict[Hashable, Recheck[Any]] = {}

    def run(
        self,
        action: str,
        fn: Callable[[Any], T],
        *,
        idempotent: bool,
        recheck: Recheck[T] | None = None,
    ) -> T:
        """``fn(connection)`` on a pooled connection (``fn`` is ``getconn`` itself for a
        caller's own connection), retried while the server cannot be reached.

        The retries block this thread for at most ``OutagePolicy.blocking``; then
        :class:`StoreUnreachableError` tells the caller when to try again. A write whose
        statement was sent when its connection broke may have committed: before it is made
        again, its ``recheck`` looks for it (in this call, and in the caller's retry of the
        same write after the outage was reported). An ``idempotent`` write is made again.
        """
        outage = self.outage
        key = None if recheck is None else recheck.key
        unsure = None if key is None else self.unsure.get(key)
        deadline = time.monotonic() + outage.policy.blocking
        busy_until = time.monotonic() + self.busy_seconds
        while True:
            if not outage.may_try():
                raise outage.error(action, self.where)
            sent = False
            # A healthy pool hands a connection out at once; an empty one waits for what is
            # left of the blocking time.
            wait = max(deadline - time.monotonic(), 0.05)
            try:
                if fn == self.pool.getconn:
                    result = fn(wait)
                else:
                    with self.pool.connection(timeout=wait) as conn:
                        sent = True
                        result = fn(conn) if unsure is None else _redo(conn, fn, unsure)
            except CheckpointError:
                outage.up()  # the server answered (a conflict, a lost lease)
                self._settled(key)
                raise
            except (psycopg.Error, PoolTimeout) as exc:
                failure = classify(exc, sent=sent, cut_off=outage.pool_cut_off())
                now = time.monotonic()
                if failure is Failure.OTHER:
                    if isinstance(exc, PoolTimeout) and now < busy_until:
                        continue  # every connection is busy: wait as long as the pool would
                    self._settled(key)
                    raise store_error(exc, action, self.where) from exc
                pause = outage.down()
                if sent and unsure is None and recheck is not None:
                    # Even a session the server ended may have committed first (a commit
                    # waiting for a synchronous standby): look before writing again.
                    unsure = recheck
                if failure is Failure.UNANSWERED and unsure is None and not idempotent:
                    raise TypeError(f"The write to {action} has no recheck.") from exc
                if now + pause > deadline or outage.retry_after() is None:
                    if unsure is not None:
                        self._keep(unsure)
                    raise outage.error(action, self.where, reason(exc, self.url)) from exc
                time.sleep(pause)
                continue
            outage.up()
            self._settled(key)
            return result

    def _keep(self, recheck: Recheck[Any]) -> None:
        self.unsure.pop(recheck.key, None)
        if len(self.unsure) >= _UNSURE_KEPT:
            del self.unsure[next(iter(self.unsure))]
        self.unsure[recheck.key] = recheck

    def _settled(self, key: Hashable | None) -> None:
        if key is not None and self.unsure:
            self.unsure.pop(key, None)


def _redo(conn: psycopg.Connection[Any], fn: Callable[[Any], T], recheck: Recheck[T]) -> T:
    """``fn(conn)`` unless ``recheck`` finds it committed already, in one transaction (the
    recheck's row lock keeps what it saw until the write is made)."""
    with conn.transaction():
        found = recheck.committed(conn)
        if found is not NOT_COMMITTED:
            return cast(T, found)
        return fn(conn)


__all__ = ["Calls", "Failure", "Outage", "OutagePolicy", "classify", "pool_options"]
