"""A scripted HTTP server on 127.0.0.1: it answers each connection with bytes a test writes.

For what a real server never does: stay silent, send a malformed event stream, pause longer
than a client's timeout between two messages.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: A script: given the connection's number (0, 1, ...) and its request head, what to send,
#: as a list of bytes (sent in turn) and pauses in seconds (floats).
Script = Callable[[int, bytes], list[bytes | float]]

SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-store\r\n"
    b"connection: close\r\n\r\n"
)


class FakeServer:
    """Accepts connections and plays :data:`Script` on each; ``None`` from it: stay silent."""

    def __init__(self, script: Script | None) -> None:
        self.script = script
        self.requests: list[bytes] = []
        self._socks: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self._socks.append(conn)
            threading.Thread(target=self._play, args=(conn,), daemon=True).start()

    def _play(self, conn: socket.socket) -> None:
        head = b""
        try:
            while b"\r\n\r\n" not in head:
                data = conn.recv(65536)
                if not data:
                    return
                head += data
            number = len(self.requests)
            self.requests.append(head)
            if self.script is None:
                return  # silent: the connection stays open, unanswered, until close()
            for part in self.script(number, head):
                if isinstance(part, float):
                    time.sleep(part)
                else:
                    conn.sendall(part)
            conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        except OSError:
            pass

    def close(self) -> None:
        self._listener.close()
        for sock in self._socks:
            try:
                sock.close()
            except OSError:
                pass


@contextmanager
def fake_server(script: Script | None) -> Iterator[FakeServer]:
    """A :class:`FakeServer` playing ``script`` (``None``: one that never answers)."""
    server = FakeServer(script)
    try:
        yield server
    finally:
        server.close()


def sse(seq: int | None, kind: str | None, data: str) -> bytes:
    """One SSE message; ``None`` leaves its id or event line out."""
    lines = []
    if seq is not None:
        lines.append(f"id: {seq}")
    if kind is not None:
        lines.append(f"event: {kind}")
    lines.append(f"data: {data}")
    return ("\n".join(lines) + "\n\n").encode()
