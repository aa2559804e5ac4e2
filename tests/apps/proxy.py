"""A TCP proxy on 127.0.0.1 that cuts connections, to test clients that reconnect."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class CuttingProxy:
    """Forwards connections to ``127.0.0.1:target_port``, cutting some of them.

    Connection number ``i`` (0-based) gets ``cuts[i]`` bytes of the server's answer and is then
    closed; connections past the end of ``cuts`` (or with ``None``) are forwarded whole.
    """

    def __init__(self, target_port: int, cuts: list[int | None]) -> None:
        self.target_port = target_port
        self.cuts = list(cuts)
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return
            cut = self.cuts[self.connections] if self.connections < len(self.cuts) else None
            self.connections += 1
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            threading.Thread(
                target=self._pipe, args=(downstream, upstream, None), daemon=True
            ).start()
            threading.Thread(
                target=self._pipe, args=(upstream, downstream, cut), daemon=True
            ).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket, cut: int | None) -> None:
        sent = 0
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if cut is not None and sent + len(data) >= cut:
                    sink.sendall(data[: cut - sent])
                    break
                sink.sendall(data)
                sent += len(data)
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def close(self) -> None:
        self._closed = True
        self._listener.close()


@contextmanager
def cutting_proxy(url: str, cuts: list[int | None]) -> Iterator[CuttingProxy]:
    """A :class:`CuttingProxy` in front of the server at ``url``."""
    proxy = CuttingProxy(int(url.rsplit(":", 1)[1]), cuts)
    try:
        yield proxy
    finally:
        proxy.close()
