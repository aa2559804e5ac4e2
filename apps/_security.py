"""ASGI middleware of the server: bearer-token auth and the request body limit."""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

logger = logging.getLogger("batonflow.apps.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Routes that answer without a token: liveness probes, and the console and API-docs pages,
#: which hold no data (a browser cannot send a bearer header when it opens a page; the pages
#: ask for the token and send it with every API call).
PUBLIC_PATHS = frozenset({"/health", "/", "/docs", "/redoc"})
#: Path prefixes that answer without a token: those pages' static files.
PUBLIC_PREFIXES = ("/assets/",)


async def send_json(
    send: Send, status: int, body: dict[str, Any], headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """Send a complete JSON response."""
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class BearerAuth:
    """Require ``Authorization: Bearer <token>`` on every route but :data:`PUBLIC_PATHS`.

    The comparison is constant-time (:func:`hmac.compare_digest`).
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                given = value
                break
        if not hmac.compare_digest(given, self._expected):
            detail = (
                "Missing or wrong bearer token; send the header 'Authorization: Bearer <token>' "
                "with the token the server was started with (--token / BATONFLOW_API_TOKEN)."
            )
            await send_json(
                send, 401, {"detail": detail}, [(b"www-authenticate", b'Bearer realm="batonflow"')]
            )
            return
        await self.app(scope, receive, send)


class BodyLimit:
    """Answer 413 to requests whose body is larger than ``max_bytes``.

    A declared ``Content-Length`` is checked first; a chunked body is read (at most
    ``max_bytes + 1`` bytes) and replayed to the application.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _too_large(self, send: Send) -> None:
        await send_json(
            send,
            413,
            {
                "detail": f"Request body is larger than {self.max_bytes} bytes; send less data "
                "or raise the server's limit (BATONFLOW_MAX_BODY_BYTES)."
            },
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await self._too_large(send)
                    return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._too_large(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
