"""TCP proxies on 127.0.0.1 that cut connections or answer 502/503, to test clients that retry."""

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


class GatewayProxy:
    """A load balancer in front of ``127.0.0.1:target_port`` that can lose its server.

    While :attr:`down` is set it answers every new connection with ``status`` (and
    ``Retry-After`` when given) and closes it, as a load balancer does right after its replica
    died; setting it also cuts the connections it is forwarding. Otherwise it forwards whole
    connections. When the server itself refuses, it answers ``502`` (as nginx does).
    """

    def __init__(self, target_port: int, status: int = 503, retry_after: int | None = None):
        self.target_port = target_port
        self.status = status
        self.retry_after = retry_after
        self.answered: list[str] = []  # "503 GET /runs/..." for each canned answer
        self._down = False
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def down(self) -> bool:
        """Whether it answers ``status`` instead of forwarding."""
        return self._down

    @down.setter
    def down(self, value: bool) -> None:
        with self._lock:
            self._down = value
            if value:
                for sock in self._open:
                    _close(sock)
                self._open.clear()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(downstream,), daemon=True).start()

    def _serve(self, downstream: socket.socket) -> None:
        head = b""
        try:
            while b"\r\n\r\n" not in head:
                data = downstream.recv(65536)
                if not data:
                    return _close(downstream)
                head += data
        except OSError:
            return _close(downstream)
        with self._lock:
            status = self.status if self._down else None
            upstream = None
            if status is None:
                try:
                    upstream = socket.create_connection(("127.0.0.1", self.target_port))
                except OSError:
                    status = 502
                else:
                    self._open += [downstream, upstream]
        if upstream is None:
            self._answer(downstream, head, status or 502)
            return
        try:
            upstream.sendall(head)  # the body, if any, follows through the pipe
        except OSError:
            return _close(downstream)
        threading.Thread(
            target=CuttingProxy._pipe, args=(downstream, upstream, None), daemon=True
        ).start()
        CuttingProxy._pipe(upstream, downstream, None)

    def _answer(self, downstream: socket.socket, head: bytes, status: int) -> None:
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        self.answered.append(f"{status} {request_line.rsplit(' ', 1)[0]}")
        body = f"<html><body>{status} from the proxy</body></html>".encode()
        extra = f"Retry-After: {self.retry_after}\r\n" if self.retry_after is not None else ""
        answer = (
            f"HTTP/1.1 {status} Unavailable\r\nContent-Type: text/html\r\n{extra}"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode() + body
        try:
            downstream.sendall(answer)
        except OSError:
            pass
        _close(downstream)

    def close(self) -> None:
        self._listener.close()
        self.down = True


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


@contextmanager
def gateway_proxy(
    url: str, status: int = 503, retry_after: int | None = None
) -> Iterator[GatewayProxy]:
    """A :class:`GatewayProxy` in front of the server at ``url``."""
    proxy = GatewayProxy(int(url.rsplit(":", 1)[1]), status, retry_after)
    try:
        yield proxy
    finally:
        proxy.close()
