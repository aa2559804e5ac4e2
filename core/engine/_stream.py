"""The event stream of one run: a shared log consumed through one cursor.

Written events are appended; every consumer pops from the same log, so a second consumer, or a
consumer that stopped and starts again, gets exactly the events nobody has seen yet. Closing
the stream wakes every waiting consumer; they drain what is left and end, so a consumer never
hangs on a run that failed, timed out or was cancelled.

The in-memory buffer is bounded (:data:`DEFAULT_LIMIT` unread events): when nobody reads, the
oldest unread events are dropped to make room, counted in :attr:`EventStream.dropped`, and one
warning is logged per run. A durable run records every event in its store's event log when it
is written (the ``recorder``), so nothing is lost there; read it with ``store.events(run_id)``.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..data.events import Event, InternalDispatchEvent
from ..errors import ContextStateError

logger = logging.getLogger("batonflow.core")

#: How many unread events a run's stream keeps in memory before it drops the oldest.
DEFAULT_LIMIT = 10_000


class EventStream:
    """A single-cursor event log with async consumption."""

    __slots__ = (
        "_buffer",
        "_closed",
        "_loop",
        "_waiters",
        "dropped",
        "has_internal",
        "limit",
        "position",
        "recorder",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int = DEFAULT_LIMIT) -> None:
        self._loop = loop
        self._buffer: deque[Any] = deque()
        self._waiters: list[asyncio.Future[None]] = []
        self._closed = False
        #: How many events consumers have taken so far.
        self.position = 0
        #: Whether internal events were ever written (consumers then filter them).
        self.has_internal = False
        #: At most this many unread events are kept; older ones are dropped.
        self.limit = limit
        #: How many unread events were dropped because nobody read them.
        self.dropped = 0
        #: Called with each event as it is written (a durable run's event log), or ``None``.
        self.recorder: Callable[[Any], None] | None = None

    @property
    def closed(self) -> bool:
        """Whether no more events will be written."""
        return self._closed

    def put(self, event: Any) -> None:
        """Append ``event``; wakes waiting consumers."""
        if self._closed:
            return
        if self.recorder is not None:
            self.recorder(event)
        buffer = self._buffer
        if len(buffer) >= self.limit:
            self._drop_oldest()
        buffer.append(event)
        if self._waiters:
            self._wake()

    def _drop_oldest(self) -> None:
        if not self.dropped:
            logger.warning(
                "A run's event stream holds %d unread events: the oldest are dropped from "
                "memory. Read handler.stream_events() while the run goes on (a durable run "
                "keeps every event in its store: store.events(run_id)).",
                self.limit,
            )
        self._buffer.popleft()
        self.dropped += 1
        self.position += 1

    def close(self) -> None:
        """Mark the end of the stream; consumers drain the log and stop."""
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def pending(self) -> list[Any]:
        """The events written but not consumed yet, oldest first."""
        return list(self._buffer)

    async def consume(self, internal: bool = False) -> AsyncIterator[Any]:
        """Yield events as they come until the stream is closed and drained.

        Args:
            internal: Also yield the engine's internal events; other consumers skip them.
        """
        buffer = self._buffer
        while True:
            while buffer:
                event = buffer.popleft()
                self.position += 1
                if self.has_internal and not internal and isinstance(event, InternalDispatchEvent):
                    continue
                yield event
            if self._closed:
                return
            # One future per waiting consumer: cancelling one consumer leaves the others alone.
            waiter = self._loop.create_future()
            self._waiters.append(waiter)
            await waiter

    def next_now(self) -> Any:
        """The next (non-internal) event if one is waiting, else ``None``."""
        buffer = self._buffer
        while buffer:
            event = buffer.popleft()
            self.position += 1
            if self.has_internal and isinstance(event, InternalDispatchEvent):
                continue
            return event
        return None

    async def next_event(self) -> Any:
        """The next (non-internal) event, waiting for one; ``None`` once closed and drained."""
        while True:
            event = self.next_now()
            if event is not None:
                return event
            if self._closed:
                return None
            waiter = self._loop.create_future()
            self._waiters.append(waiter)
            await waiter

    def size(self) -> int:
        """How many events are waiting to be read."""
        return len(self._buffer)


class StreamQueue:
    """What the deprecated ``ctx.streaming_queue`` returns: the run's stream as a read queue.

    It shares the one cursor of ``handler.stream_events()``. ``await queue.get()`` waits for the
    next event; the last one is the ``StopEvent`` (or a ``WorkflowFailedEvent``, ...).

    Args:
        stream: The run's event stream.
    """

    def __init__(self, stream: EventStream) -> None:
        self._stream = stream

    async def get(self) -> Event:
        """The next event, waiting for it.

        Raises:
            ContextStateError: The stream ended and every event was read.
        """
        event = await self._stream.next_event()
        if event is None:
            raise ContextStateError(
                "The run's stream has ended and every event was read; stop reading after the "
                "StopEvent."
            )
        return event  # type: ignore[no-any-return]

    def get_nowait(self) -> Event:
        """The next event if one is waiting.

        Raises:
            asyncio.QueueEmpty: No event is waiting.
        """
        event = self._stream.next_now()
        if event is None:
            raise asyncio.QueueEmpty
        return event  # type: ignore[no-any-return]

    def empty(self) -> bool:
        """Whether no event is waiting."""
        return not self._stream.size()

    def qsize(self) -> int:
        """How many events are waiting."""
        return self._stream.size()
