"""Serving an app with uvicorn: on a port until Ctrl-C, or from a thread on a free port."""

from __future__ import annotations

import socket
import threading
from typing import Any


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port=0`` picks a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def serve(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    log_level: str = "info",
    on_ready: Any = None,
) -> None:
    """Serve ``app`` with uvicorn until interrupted (Ctrl-C).

    Args:
        app: An app from :func:`create_app`.
        host: Interface to bind; ``127.0.0.1`` keeps the server private to this machine.
        port: TCP port; ``0`` picks a free one.
        log_level: uvicorn's log level.
        on_ready: Called with the base URL once the socket is bound (before serving).
    """
    import uvicorn

    sock = bind_socket(host, port)
    bound = sock.getsockname()[1]
    url = f"http://{host if ':' not in host else f'[{host}]'}:{bound}"
    if on_ready is not None:
        on_ready(url)
    config = uvicorn.Config(app, log_level=log_level, lifespan="on", timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock])


class BackgroundServer:
    """Run an app with uvicorn in a background thread on an ephemeral port.

    ::

        with BackgroundServer(create_app({"flow": MyFlow()})) as server:
            httpx.get(f"{server.url}/health")

    Args:
        app: An app from :func:`create_app`.
        host: Interface to bind (``127.0.0.1``).
    """

    def __init__(self, app: Any, host: str = "127.0.0.1") -> None:
        import uvicorn

        self._sock = bind_socket(host, 0)
        self.url = f"http://{host}:{self._sock.getsockname()[1]}"
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._sock]},
            daemon=True,
            name="batonflow-server",
        )

    def start(self) -> BackgroundServer:
        """Start serving; returns once the server accepts requests."""
        self._thread.start()
        for _ in range(500):
            if self._server.started:
                return self
            if not self._thread.is_alive():
                raise RuntimeError("The server thread stopped during start-up; see its log.")
            threading.Event().wait(0.01)
        raise RuntimeError("The server did not start within 5 seconds.")

    def stop(self) -> None:
        """Ask the server to shut down and wait for it."""
        self._server.should_exit = True
        self._thread.join(10)
        self._sock.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["BackgroundServer", "bind_socket", "serve"]
