"""What :class:`~batonflow.client.Client` and :class:`~batonflow.client.AsyncClient` share.

Everything here is free of I/O: building requests, turning responses into records or errors,
decoding SSE messages and pacing reconnects. The two clients only differ in how they wait.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from .errors import ServerUnavailableError, api_error
from .models import Run, RunEvent

#: Seconds an event stream may stay silent before it counts as broken (the server sends a
#: keep-alive comment every 15 s by default).
STREAM_READ_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class Options:
    """A client's settings, checked once."""

    base_url: str
    headers: dict[str, str]
    timeout: float
    reconnect_attempts: int
    reconnect_delay: float


def options(
    base_url: str,
    token: str | None,
    timeout: float,
    reconnect_attempts: int,
    reconnect_delay: float,
) -> Options:
    """Validate a client's arguments.

    Raises:
        ValueError: A base URL that is not http(s), or a negative number.
    """
    url = base_url.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(
            f"Client base_url {base_url!r} is not an http(s) URL; pass the server's address, "
            "e.g. Client('http://127.0.0.1:8000')."
        )
    if timeout <= 0 or reconnect_attempts < 0 or reconnect_delay < 0:
        raise ValueError(
            "Client timeout must be > 0 and reconnect_attempts, reconnect_delay >= 0; got "
            f"timeout={timeout}, reconnect_attempts={reconnect_attempts}, "
            f"reconnect_delay={reconnect_delay}."
        )
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Options(url, headers, timeout, reconnect_attempts, reconnect_delay)


def unavailable(url: str, exc: BaseException) -> ServerUnavailableError:
    """The error for a server that does not answer."""
    reason = str(exc) or type(exc).__name__
    return ServerUnavailableError(
        f"No answer from the batonflow server at {url} ({reason}); check the URL and that "
        "'batonflow serve' runs there."
    )


def decode(response: httpx.Response) -> Any:
    """The JSON body of a successful response.

    Raises:
        APIError: (a subclass of) for a 4xx or 5xx status.
    """
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code >= 400:
        raise api_error(response.status_code, body, response.text)
    return body


def start_request(
    workflow: str,
    fields: dict[str, Any] | None,
    extra: dict[str, Any],
    wait: bool,
    timeout: float | None,
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Path, query parameters and JSON body of ``POST /workflows/{name}/runs``."""
    body = {**(fields or {}), **extra}
    params: dict[str, Any] = {}
    if wait:
        params["wait"] = "true"
        if timeout is not None:
            params["timeout"] = timeout
    return f"/workflows/{workflow}/runs", params, body


def run_from(body: Any) -> Run:
    """A :class:`Run` from a response body (a start answers only ``run_id`` and ``status``)."""
    if not isinstance(body, dict) or "run_id" not in body:
        raise ServerUnavailableError(
            f"The server answered {body!r:.200} where a run was expected; is the URL a "
            "batonflow server?"
        )
    return Run.from_json(body)


def list_params(workflow: str | None, status: str | None, limit: int) -> dict[str, Any]:
    """Query parameters of ``GET /runs``."""
    params: dict[str, Any] = {"limit": limit}
    if workflow is not None:
        params["workflow"] = workflow
    if status is not None:
        params["status"] = status
    return params


def answer_body(response: Any, event_type: str, fields: dict[str, Any] | None) -> dict[str, Any]:
    """The body of ``POST /runs/{id}/events`` answering a run that asked for input."""
    return {"type": event_type, "data": {"response": response, **(fields or {})}}


def stream_headers(last_seq: int) -> dict[str, str]:
    """Headers of an event-stream request resuming after ``last_seq``."""
    return {"Last-Event-ID": str(last_seq)} if last_seq > 0 else {}


def stream_timeout(timeout: float) -> httpx.Timeout:
    """Timeouts of an event stream: connecting as usual, reading as long as keep-alives come."""
    return httpx.Timeout(timeout, read=max(timeout, STREAM_READ_TIMEOUT))


def run_event(sse_id: str, event: str, data: str) -> RunEvent | None:
    """A :class:`RunEvent` from one SSE message, ``None`` for keep-alives and settings."""
    if not data:
        return None
    try:
        seq = int(sse_id)
        body = json.loads(data)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    return RunEvent(seq=seq, kind=event or "message", data=body)


def backoff(failures: int, delay: float) -> float:
    """Seconds to wait before reconnect number ``failures`` (1, 2, ...): doubling, at most 8x."""
    return delay * float(min(2 ** (failures - 1), 8))


def broken_stream(
    run_id: str, failures: int, last_seq: int, exc: BaseException | None
) -> ServerUnavailableError:
    """The error once an event stream broke more often than the client may reconnect."""
    cause = f"last error: {exc}" if exc is not None else "it closed before the run's end"
    return ServerUnavailableError(
        f"The event stream of run {run_id!r} broke {failures} time(s) in a row ({cause}); "
        f"resume it later with events({run_id!r}, after={last_seq}) or raise "
        "reconnect_attempts."
    )


__all__ = [
    "STREAM_READ_TIMEOUT",
    "Options",
    "answer_body",
    "backoff",
    "broken_stream",
    "decode",
    "list_params",
    "options",
    "run_event",
    "run_from",
    "start_request",
    "stream_headers",
    "stream_timeout",
    "unavailable",
]
