"""A counting proxy for PostgreSQL's wire protocol: round trips, statements, notifications.

``bench/scale_model.py`` puts one between the replicas and the server
(``postgresql://...@127.0.0.1:<proxy port>/db?sslmode=disable``) and reads what crossed it.
A *round trip* is one wait of the client for the server: a simple ``Query`` message, or an
extended-protocol batch (``Parse``/``Bind``/``Execute``) ended by ``Sync``, each answered by
one ``ReadyForQuery``. Each round trip is labelled with its first statement's text (a bound
prepared statement is looked up by name in the connection's ``Parse`` messages). The
server's ``NotificationResponse`` messages are the ``NOTIFY`` deliveries the client received.
Connection start-up (no type byte) is counted as a connection, not a round trip.
"""

from __future__ import annotations

import asyncio
import collections
import re
import struct
import threading
from typing import Any


class Counts:
    """What crossed the proxy since the last :meth:`reset` (shared by its connections)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Start counting afresh."""
        self.trips: collections.Counter[str] = collections.Counter()
        self.notifications = 0
        self.connections = 0

    def snapshot(self) -> tuple[collections.Counter[str], int, int]:
        """(round trips by label, notifications delivered, connections opened)."""
        with self.lock:
            return collections.Counter(self.trips), self.notifications, self.connections


def _label(sql: str) -> str:
    """A statement's first words, enough to tell the store's statements apart."""
    words = " ".join(sql.split())
    label = words[:60]
    inserts = re.findall(r"INSERT INTO (\w+)", words)
    if inserts and inserts[0] not in label:
        label += " … INSERT INTO " + inserts[0]  # a checkpoint or a log entry, fenced alike
    return label


async def _pipe_client(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, counts: Counts
) -> None:
    """Client to server: count round trips (``Q``, or ``S`` after ``P``/``B``/``E``)."""
    size = struct.unpack("!I", await reader.readexactly(4))[0]
    writer.write(struct.pack("!I", size) + await reader.readexactly(size - 4))
    with counts.lock:
        counts.connections += 1
    named: dict[str, str] = {}
    first: str | None = None
    while True:
        head = await reader.readexactly(5)
        kind, size = head[:1], struct.unpack("!I", head[1:])[0]
        body = await reader.readexactly(size - 4)
        writer.write(head + body)
        if kind == b"Q":
            with counts.lock:
                counts.trips[_label(body.split(b"\0", 1)[0].decode())] += 1
        elif kind == b"P":
            name, rest = body.split(b"\0", 1)
            sql = rest.split(b"\0", 1)[0].decode()
            if name:
                named[name.decode()] = sql
            first = first or sql
        elif kind == b"B":
            statement = body.split(b"\0", 2)[1].decode()
            if statement:
                first = first or named.get(statement, statement)
        elif kind == b"S":
            with counts.lock:
                counts.trips[_label(first or "?")] += 1
            first = None
        elif kind == b"X":
            writer.close()
            return
        await writer.drain()


async def _pipe_server(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, counts: Counts
) -> None:
    """Server to client: count ``NotificationResponse`` messages."""
    while True:
        head = await reader.readexactly(5)
        size = struct.unpack("!I", head[1:])[0]
        body = await reader.readexactly(size - 4)
        writer.write(head + body)
        if head[:1] == b"A":
            with counts.lock:
                counts.notifications += 1
        await writer.drain()


class WireProxy:
    """A proxy on 127.0.0.1 (a thread of its own) in front of ``host:port``."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.counts = Counts()
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.port = 0

        async def serve() -> None:
            server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            async with server:
                await server.serve_forever()

        self.thread = threading.Thread(
            target=lambda: self.loop.run_until_complete(serve()), daemon=True
        )
        self.thread.start()
        ready.wait(10)

    async def _handle(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        sreader, swriter = await asyncio.open_connection(*self.target)
        pipes: Any = [
            asyncio.ensure_future(_pipe_client(creader, swriter, self.counts)),
            asyncio.ensure_future(_pipe_server(sreader, cwriter, self.counts)),
        ]
        await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        for pipe in pipes:
            pipe.cancel()
        for w in (cwriter, swriter):
            w.close()

    def url(self, user: str, database: str) -> str:
        """The URL a client uses to go through this proxy."""
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}?sslmode=disable"
