"""ASGI middleware of the server: bearer-token auth, host checks, the body limit, JSON bodies.

Without a token, a server on ``127.0.0.1`` is still reachable from any web page the user opens:
a page may POST ``text/plain`` or no body at all to it (no CORS preflight), from another site or
from another port of the same machine (a dev server, a notebook), or, through DNS rebinding, talk
to it under a name of its own. :class:`HostGuard` and :class:`JsonBody` close these doors: only
the bound address (or a configured allowed host) is served, cross-site ``Origin`` headers are
refused, a request that changes something is taken from a browser only when it comes from the
server's own origin (scheme, host and port), and bodies must be JSON. Every check answers a 4xx
naming the fix, so a client mistake never reaches the application as a 500.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from batonflow.core.durable._text import first_text_problem

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
        await self.app(scope, replaying(b"".join(chunks), receive), send)


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body, or ``None`` when the client disconnected first."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then defers to the real one."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value)
    return None


#: How deep a request's JSON may nest (objects and arrays); deeper is refused with 422.
MAX_JSON_DEPTH = 100


class _NotJson(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity``: Python reads them, JSON has no such thing."""


def _reject_constant(name: str) -> Any:
    raise _NotJson(name)


def _depth(value: Any) -> int:
    """How deep ``value`` nests, without recursion (it came from a client)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_JSON_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def json_problem(raw: bytes) -> str | None:
    """Why ``raw`` is not an acceptable JSON body, or ``None`` when it is.

    Refused: text that is not JSON, ``NaN`` / ``Infinity`` (not JSON, and they cannot be sent
    back), nesting deeper than :data:`MAX_JSON_DEPTH`, and a lone surrogate in a string
    (``"\\ud800"``: not Unicode text, so it could be neither stored nor sent back). A NUL
    character (``"\\u0000"``) is data, and is kept.
    """
    try:
        data = json.loads(raw, parse_constant=_reject_constant)
    except RecursionError:
        return f"The request body nests deeper than {MAX_JSON_DEPTH} levels; send flatter JSON."
    except _NotJson as exc:
        return f"The request body contains {exc}, which is not JSON; send a number or null."
    except ValueError as exc:
        return f"The request body is not valid JSON ({exc}); send a JSON object."
    if _depth(data) > MAX_JSON_DEPTH:
        return f"The request body nests deeper than {MAX_JSON_DEPTH} levels; send flatter JSON."
    # A lone surrogate comes as a "\ud800" escape, or as its bytes (which json reads too).
    if b"\\u" in raw or b"\xed" in raw:
        found = first_text_problem(data, nul=False)
        if found is not None:
            return (
                f"The request body holds {found[1]} in the text {found[0][:40]!r}, which is "
                "not Unicode text; send the character itself, or both halves of a surrogate "
                "pair."
            )
    return None


class JsonBody:
    """Check that request bodies are JSON the application can take.

    A non-empty body that is not valid JSON, holds ``NaN``/``Infinity``, or nests deeper than
    :data:`MAX_JSON_DEPTH` gets a 422. With ``require_content_type`` (a server without a
    token), a non-empty body must also be declared ``application/json`` (or ``+json``), else
    415: web pages can send ``text/plain`` cross-site without asking, but not JSON.
    """

    def __init__(self, app: ASGIApp, require_content_type: bool = True) -> None:
        self.app = app
        self.require_content_type = require_content_type

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        if body is None:
            return
        if body.strip():
            kind = (_header(scope, b"content-type") or b"").split(b";")[0].strip().lower()
            is_json = kind == b"application/json" or kind.endswith(b"+json")
            if self.require_content_type and not is_json:
                given = kind.decode("latin-1") or "none"
                await send_json(
                    send,
                    415,
                    {
                        "detail": f"The request body must be JSON, sent with 'Content-Type: "
                        f"application/json' (got {given})."
                    },
                )
                return
            problem = json_problem(body)
            if problem is not None:
                await send_json(send, 422, {"detail": problem})
                return
        await self.app(scope, replaying(body, receive), send)


_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
#: Methods that change nothing; every other one is taken from a browser only from the same origin.
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
#: ``Sec-Fetch-Site`` values of a request a page of another origin made.
_FOREIGN_SITES = frozenset({b"cross-site", b"same-site"})


def _split_host(value: str) -> tuple[str, str]:
    """``"[::1]:8000"`` → ``("::1", "8000")``; ``"example.org"`` → ``("example.org", "")``."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        return name, rest.removeprefix(":")
    name, _, port = value.partition(":") if value.count(":") == 1 else (value, "", "")
    return name, port


def _is_loopback(name: str) -> bool:
    return name in _LOOPBACK_NAMES or name.startswith("127.")


def _port(text: str, scheme: str) -> int | None:
    """A URL's port, or its scheme's default port; ``None`` when it is not a port."""
    if not text:
        return _DEFAULT_PORTS.get(scheme)
    return int(text) if text.isdigit() else None


def _same_origin(origin: str, scope: Scope, host: str) -> bool:
    """Whether a browser's ``Origin`` is this request's own origin: same scheme, host and port.

    The loopback names (``127.0.0.1``, ``localhost``, ``[::1]``) count as one host; ``null``
    (a sandboxed frame, a file) is never the same origin.
    """
    scheme, sep, rest = origin.strip().lower().partition("://")
    if not sep:
        return False
    own_scheme = str(scope.get("scheme") or "http").lower()
    name, port = _split_host(rest.partition("/")[0])
    own_name, own_port = _split_host(host)
    if scheme != own_scheme or _port(port, scheme) != _port(own_port, own_scheme):
        return False
    return name == own_name or (_is_loopback(name) and _is_loopback(own_name))


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostGuard:
    """Serve only requests addressed to this server: a defence against DNS rebinding.

    The ``Host`` header must name the address the server is bound to (for a loopback
    address: ``127.0.0.1``, ``localhost`` or ``[::1]``; for a wildcard bind such as
    ``0.0.0.0``: any IP address) or one of ``allowed_hosts``; else 400. A browser's ``Origin``
    header, when sent, must name an allowed host too; else 403 (a cross-site request).

    A request that may change something (any method but GET, HEAD and OPTIONS, with or without
    a body) that a browser sends must come from the server's own origin: its ``Origin`` must
    have the request's scheme, host and port (``null`` never does), and without an ``Origin``
    its ``Sec-Fetch-Site`` must not say another site or port sent it; else 403. Clients that
    are not browsers (curl, the Python client, the CLI) send neither header and are served.
    This guard serves a server without a token; a token protects the others.

    Args:
        app: The ASGI application.
        allowed_hosts: More host names to serve (``batonflow serve --allowed-host``);
            ``"*"`` turns the check off.
    """

    def __init__(self, app: ASGIApp, allowed_hosts: Sequence[str] = ()) -> None:
        self.app = app
        self.allowed = frozenset(_split_host(h)[0] for h in allowed_hosts)

    def _allowed(self, name: str, scope: Scope) -> bool:
        if "*" in self.allowed or name in self.allowed:
            return True
        server = scope.get("server") or ("", None)
        bound = str(server[0]).lower()
        if name == bound:
            return True
        if _is_loopback(bound):
            return _is_loopback(name)
        wildcard = bound in ("0.0.0.0", "::", "")
        return wildcard and _is_ip(name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = (_header(scope, b"host") or b"").decode("latin-1")
        name, _ = _split_host(host)
        if not self._allowed(name, scope):
            await send_json(
                send,
                400,
                {
                    "detail": f"Host {host!r} is not served here; use the server's own address, "
                    "or start it with --allowed-host NAME (BATONFLOW_ALLOWED_HOSTS) to serve "
                    "another name."
                },
            )
            return
        origin = _header(scope, b"origin")
        text = None if origin is None else origin.decode("latin-1")
        if text is not None:  # "null" too: sandboxed frames and files send it
            origin_name, _ = _split_host(text.partition("://")[2].partition("/")[0])
            if not self._allowed(origin_name, scope):
                await send_json(
                    send,
                    403,
                    {
                        "detail": f"Cross-site request from {text!r} refused; call the API from "
                        "its own pages, or start the server with a token (--token) or "
                        "--allowed-host NAME."
                    },
                )
                return
        method = str(scope.get("method") or "GET").upper()
        if scope["type"] == "http" and method not in _SAFE_METHODS:
            problem = _foreign_change(scope, method, text, host)
            if problem is not None:
                await send_json(send, 403, {"detail": problem})
                return
        await self.app(scope, receive, send)


def _foreign_change(scope: Scope, method: str, origin: str | None, host: str) -> str | None:
    """Why a browser's request to change something comes from another origin, or ``None``."""
    fix = (
        "a server without a token takes changes from a browser only from its own origin "
        f"(scheme, host and port: {_own_origin(scope, host)!r}). Use the server's own pages, a "
        "client outside the browser (curl, the Python client, the CLI), or start the server "
        "with a token (--token / BATONFLOW_API_TOKEN) and send it."
    )
    if origin is not None:
        if _same_origin(origin, scope, host):
            return None
        return f"{method} from the origin {origin!r} refused: {fix}"
    site = _header(scope, b"sec-fetch-site")
    if site is not None and site.strip().lower() in _FOREIGN_SITES:
        sent = site.decode("latin-1")
        return f"{method} from a page of another origin (Sec-Fetch-Site: {sent}) refused: {fix}"
    return None


def _own_origin(scope: Scope, host: str) -> str:
    return f"{str(scope.get('scheme') or 'http').lower()}://{host.strip().lower()}"
