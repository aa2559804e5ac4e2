"""Serving an app with uvicorn: on a port until Ctrl-C, or from a thread on a free port."""

from __future__ import annotations

import errno
import socket
import threading
import time
from typing import Any


class PortInUseError(OSError):
    """The port to serve on is taken by another process."""


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port=0`` picks a free one).

    Raises:
        PortInUseError: Another process listens on ``port``.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only when the
    # socket says it is TCP; with proto 0 every small response waited ~40 ms for Nagle.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUseError(
                f"Port {port} on {host} is already in use by another process; stop it, choose "
                "another with --port, or pass --port 0 for any free port."
            ) from None
        raise
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
    access_log: bool = True,
    sock: socket.socket | None = None,
) -> None:
    """Serve ``app`` with uvicorn until interrupted (Ctrl-C or SIGTERM).

    On SIGINT or SIGTERM uvicorn stops accepting connections, lets requests in flight finish
    (5 s at most) and runs the app's shutdown, which leaves runs in progress checkpointed
    for the next start.

    Args:
        app: An app from :func:`create_app`.
        host: Interface to bind; ``127.0.0.1`` keeps the server private to this machine.
        port: TCP port; ``0`` picks a free one.
        log_level: uvicorn's log level (for its own messages).
        on_ready: Called with the base URL once the socket is bound (before serving).
        access_log: Log one line per request (uvicorn's access log), whatever ``log_level``.
        sock: A socket from :func:`bind_socket` to serve on instead of binding ``host:port``.

    Raises:
        PortInUseError: ``port`` is taken.
    """
    import logging

    import uvicorn

    if sock is None:
        sock = bind_socket(host, port)
    bound = sock.getsockname()[1]
    url = f"http://{host if ':' not in host else f'[{host}]'}:{bound}"
    if on_ready is not None:
        on_ready(url)
    import copy

    from uvicorn.config import LOGGING_CONFIG

    # uvicorn writes its access log to stdout; a command line keeps stdout for results.
    log_config = copy.deepcopy(LOGGING_CONFIG)
    log_config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    config = uvicorn.Config(
        app,
        log_level=log_level,
        lifespan="on",
        timeout_graceful_shutdown=5,
        access_log=access_log,
        log_config=log_config,
    )
    if access_log:  # uvicorn gives its access log the level of its other messages
        logging.getLogger("uvicorn.access").setLevel(logging.INFO)
    uvicorn.Server(config).run(sockets=[sock])


class BackgroundServer:
    """Run an app with uvicorn in a background thread on an ephemeral port.

    ::

        with BackgroundServer(create_app({"flow": MyFlow()})) as server:
            httpx.get(f"{server.url}/health")

    Args:
        app: An app from :func:`create_app`.
        host: Interface to bind (``127.0.0.1``).
        port: The port (0: any free one).
        start_timeout: Seconds :meth:`start` waits for the server to accept requests (its
            lifespan start-up resumes durable runs and opens stores, which takes longer on
            a loaded machine).
    """

    def __init__(
        self, app: Any, host: str = "127.0.0.1", port: int = 0, *, start_timeout: float = 30.0
    ) -> None:
        import uvicorn

        if not start_timeout > 0:
            raise ValueError(
                f"start_timeout must be a positive number of seconds, got {start_timeout!r}."
            )
        self._start_timeout = start_timeout

        self._sock = bind_socket(host, port)
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
        deadline = time.monotonic() + self._start_timeout
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("The server thread stopped during start-up; see its log.")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"The server did not start within {self._start_timeout:g} seconds; "
                    "pass a larger start_timeout= if start-up is slow here."
                )
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Ask the server to shut down and wait for it."""
        self._server.should_exit = True
        self._thread.join(10)
        self._sock.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["BackgroundServer", "PortInUseError", "bind_socket", "serve"]
