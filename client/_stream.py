"""Following a run's event stream, free of I/O: what both clients' ``events()`` share.

An :class:`EventStream` is one call of ``events()``. It says how to (re)open the stream
(``Last-Event-ID`` after the last event yielded, timeouts cut to the call's deadline), reads
each SSE message into a :class:`~batonflow.client.RunEvent` or an :class:`EventStreamError`,
skips what was already yielded, and turns every break into a retry :class:`Failure` for the
shared :class:`Attempts`, whose budget starts afresh each time an event comes.

Timeouts: the client's ``timeout`` bounds connecting and the server's answer to the stream
request (its headers); once the stream is open it may stay silent for ``STREAM_IDLE_TIMEOUT``
seconds (or ``timeout``, if longer), since an idle run's stream only carries keep-alive
comments (every 15 s from ``batonflow serve``). ``events(timeout=)`` bounds the whole call,
reconnects included.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import httpx
from httpx_sse import ServerSentEvent

from ._base import Options, decode
from .errors import ClientTimeoutError, EventStreamError, ServerUnavailableError
from .models import RunEvent
from .retry import Attempts, Failure, status_failure, transport_failure

logger = logging.getLogger("batonflow.client")

#: Seconds an open event stream may stay silent before it counts as broken (the server sends a
#: keep-alive comment every 15 s by default).
STREAM_IDLE_TIMEOUT = 60.0

#: The message kinds a run's stream carries: its events, then one end.
KINDS = frozenset({"event", "end"})


class EventStream:
    """One call of ``events()``: its resume point, its deadline and its retries.

    Args:
        opts: The client's settings.
        run_id: The run followed.
        after: The sequence number to start after.
        reconnect: Whether a broken stream is reopened (through the client's retry policy).
        timeout: Seconds the whole call may take; ``None``: no limit.
    """

    def __init__(
        self, opts: Options, run_id: str, after: int, reconnect: bool, timeout: float | None
    ) -> None:
        self.opts = opts
        self.run_id = run_id
        self.path = f"/runs/{run_id}/events"
        self.last = after
        self.timeout = timeout
        self._previous_id = ""
        deadline = None if timeout is None else time.monotonic() + timeout
        self.attempts = Attempts(
            opts.retry if reconnect else None,
            subject=f"The event stream of run {run_id!r} at {opts.base_url} could not be reopened",
            advice=self._advice(),
            deadline=deadline,
            on_deadline=self._timed_out,
        )

    def _advice(self) -> str:
        return f"Resume it later with events({self.run_id!r}, after={self.last})"

    def _timed_out(self, reason: str) -> ClientTimeoutError:
        return ClientTimeoutError(
            f"The event stream of run {self.run_id!r} did not reach the run's end within "
            f"{self.timeout} s (last event read: {self.last}; the last problem: {reason}). "
            f"Resume with events({self.run_id!r}, after={self.last}) or pass a longer timeout."
        )

    def headers(self) -> dict[str, str]:
        """Headers of the next request: resume after the last event yielded."""
        return {"Last-Event-ID": str(self.last)} if self.last > 0 else {}

    def open_timeout(self) -> httpx.Timeout:
        """Timeouts of opening the stream: the client's, cut to the call's deadline."""
        return httpx.Timeout(self.attempts.timeout(self.opts.timeout))

    def opened(self, response: httpx.Response) -> Failure | None:
        """Check the answer to the stream request; a failure to retry, or ``None``: read on.

        A response with an error status must have been read.

        Raises:
            APIError: A refusal that is not retried (404: no such run, 401, ...).
            EventStreamError: The answer is not an event stream.
        """
        failure = status_failure(response, "GET", self.path)
        if failure is not None:
            return failure
        if response.status_code >= 400:
            decode(response)
        kind = response.headers.get("content-type", "")
        if not kind.startswith("text/event-stream"):
            raise EventStreamError(
                f"GET {self.path} at {self.opts.base_url} answered {kind or 'no content-type'}"
                " where an event stream (text/event-stream) was expected; is the URL a "
                "batonflow server, with no proxy rewriting its answers?"
            )
        self._previous_id = ""
        # The headers came within the client's timeout; from now on the server may be silent
        # between keep-alives. httpcore reads the request's "timeout" extension when the body
        # starts, so raising its read timeout here applies to the body only.
        allowance = self.attempts.timeout(max(self.opts.timeout, STREAM_IDLE_TIMEOUT))
        timeouts = response.request.extensions.get("timeout")
        if isinstance(timeouts, dict):
            timeouts["read"] = allowance
        return None

    def take(self, sse: ServerSentEvent) -> RunEvent | None:
        """The next event to yield from one SSE message, ``None`` to skip it.

        Keep-alives, settings and messages already yielded are skipped; a message of a kind
        this client does not know is logged (``batonflow.client`` logger) and skipped.

        Raises:
            EventStreamError: A message without its own id, with data that is not a JSON
                object, or whose ``seq`` disagrees with its id.
            ClientTimeoutError: The call's deadline passed.
        """
        if not sse.data:
            return None  # a keep-alive or the stream's settings
        event = self._decode(sse)
        self._previous_id = sse.id
        if self.attempts.deadline is not None and time.monotonic() >= self.attempts.deadline:
            raise self._timed_out("events kept coming")
        if event is None or event.seq <= self.last:
            return None
        self.last = event.seq
        self.attempts.reset(self._advice())
        return event

    def _decode(self, sse: ServerSentEvent) -> RunEvent | None:
        # SSE keeps the last id for a message that has none, so an id seen on the message
        # before is this message's missing one (the server never repeats an id).
        problem = ""
        body: Any = None
        if not sse.id or sse.id == self._previous_id:
            problem = "it has no id of its own"
        elif not sse.id.isdigit():
            problem = f"its id {sse.id!r} is not a sequence number"
        else:
            try:
                body = json.loads(sse.data)
            except ValueError as exc:
                problem = f"its data is not JSON ({exc})"
            else:
                if not isinstance(body, dict):
                    problem = "its data is not a JSON object"
                elif body.get("seq", int(sse.id)) != int(sse.id):
                    problem = f"its data's seq {body.get('seq')!r} is not its id {sse.id}"
        if problem:
            raise EventStreamError(
                f"The event stream of run {self.run_id!r} at {self.opts.base_url} sent a "
                f"message that is not a run's event: {problem} (id: {sse.id!r}, event: "
                f"{sse.event!r}, data: {sse.data[:200]!r}). The last event read is "
                f"{self.last}; check that no proxy rewrites the stream, then resume with "
                f"events({self.run_id!r}, after={self.last})."
            )
        if sse.event not in KINDS:
            logger.warning(
                "The event stream of run %r sent a message of unknown kind %r (id %s, data "
                "%.200r); skipped. A newer server may send it: upgrade batonflow to read it.",
                self.run_id,
                sse.event,
                sse.id,
                sse.data,
            )
            self.last = max(self.last, int(sse.id))
            return None
        return RunEvent(seq=int(sse.id), kind=sse.event, data=body)

    def closed_early(self) -> Failure:
        """The failure of a stream that ended before the run's end message."""
        reason = "the stream closed before the run's end"
        error = ServerUnavailableError(
            f"The event stream of run {self.run_id!r} at {self.opts.base_url} closed before "
            f"the run's end; resume it with events({self.run_id!r}, after={self.last})."
        )
        return Failure(reason, True, error)

    def broken(self, exc: httpx.TransportError) -> Failure:
        """The failure of a connection that broke or never opened (a ``GET``: retryable)."""
        reason = transport_failure(exc, "GET", self.path, self.opts.base_url).reason
        error = ServerUnavailableError(
            f"The event stream of run {self.run_id!r} at {self.opts.base_url} broke ({reason});"
            f" resume it with events({self.run_id!r}, after={self.last})."
        )
        return Failure(reason, True, error)


__all__ = ["KINDS", "STREAM_IDLE_TIMEOUT", "EventStream"]
