"""Median ``GET /health`` on a kept-alive connection, with and without TCP_NODELAY.

Run with ``.venv/bin/python bench/http_edge.py [--requests N]``. Two servers serve the same
app from threads: one on :func:`batonflow.apps.server.bind_socket` (made with IPPROTO_TCP, so
asyncio sets TCP_NODELAY on each connection), one on a socket made the old way (protocol 0,
so Nagle's algorithm holds small writes back for the peer's delayed ACK). Requests alternate
between them, each server on its own kept-alive connection; medians and their ratio print.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import threading
import time
from typing import Any

import httpx
import uvicorn
from batonflow.apps.server import bind_socket, create_app
from batonflow.core import StartEvent, StopEvent, Workflow, step


class Noop(Workflow):
    @step
    async def done(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=None)


def _old_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # protocol 0: the bug
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


def _serve(sock: socket.socket) -> tuple[uvicorn.Server, str]:
    config = uvicorn.Config(create_app({"noop": Noop()}), log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return server, f"http://127.0.0.1:{sock.getsockname()[1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    servers: dict[str, Any] = {
        "TCP_NODELAY (bind_socket)": _serve(bind_socket("127.0.0.1", 0)),
        "proto 0 (before)": _serve(_old_socket()),
    }
    clients = {name: httpx.Client(base_url=url) for name, (_, url) in servers.items()}
    times: dict[str, list[float]] = {name: [] for name in servers}
    for client in clients.values():  # open the kept-alive connections
        client.get("/health")
    for _ in range(args.requests):
        for name, client in clients.items():
            started = time.perf_counter()
            response = client.get("/health")
            times[name].append(time.perf_counter() - started)
            assert response.status_code == 200
    fast = statistics.median(times["TCP_NODELAY (bind_socket)"])
    print(f"median of {args.requests} kept-alive GET /health per server, alternating")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:28} {median * 1000:7.2f} ms  {median / fast:5.1f}x")
    for client in clients.values():
        client.close()
    for server, _ in servers.values():
        server.should_exit = True


if __name__ == "__main__":
    main()
