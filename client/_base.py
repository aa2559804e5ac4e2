"""What :class:`~batonflow.client.Client` and :class:`~batonflow.client.AsyncClient` share.

Everything here is free of I/O: checking settings, building requests, turning responses into
records or errors, and the retry bookkeeping of each call (:mod:`.retry`); the event stream's
is in :mod:`._stream`. The two clients only differ in how they wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from .errors import ClientTimeoutError, ServerUnavailableError, api_error
from .models import Run
from .retry import Attempts, RetryPolicy

#: The retry policy of a client that is not given one.
DEFAULT_RETRY = RetryPolicy()


@dataclass(frozen=True, slots=True)
class Options:
    """A client's settings, checked once."""

    base_url: str
    headers: dict[str, str]
    timeout: float
    retry: RetryPolicy | None


def options(base_url: str, token: str | None, timeout: float, retry: RetryPolicy | None) -> Options:
    """Validate a client's arguments.

    Raises:
        ValueError: A base URL that is not http(s), or a timeout that is not positive.
        TypeError: A ``retry`` that is not a :class:`RetryPolicy` (or ``None``).
    """
    url = base_url.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(
            f"Client base_url {base_url!r} is not an http(s) URL; pass the server's address, "
            "e.g. Client('http://127.0.0.1:8000')."
        )
    if not timeout > 0:
        raise ValueError(
            f"Client timeout must be > 0 seconds; got timeout={timeout}. Pass e.g. timeout=30."
        )
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise TypeError(
            f"Client retry={retry!r} is not a RetryPolicy; pass e.g. "
            "retry=RetryPolicy(total=60), or retry=None to turn retrying off."
        )
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Options(url, headers, timeout, retry)


def request_attempts(
    opts: Options,
    method: str,
    path: str,
    deadline: float | None = None,
    on_deadline: Callable[[str], ClientTimeoutError] | None = None,
) -> Attempts:
    """The retry bookkeeping of one request."""
    return Attempts(
        opts.retry,
        subject=f"No answer from the batonflow server at {opts.base_url} to {method} {path}",
        advice="Check the URL and that 'batonflow serve' runs there",
        deadline=deadline,
        on_deadline=on_deadline,
    )


def wait_attempts(opts: Options, run_id: str, timeout: float | None) -> Attempts:
    """The retry bookkeeping of one ``GET`` of :meth:`Client.wait`, bound by its deadline."""

    def timed_out(reason: str) -> ClientTimeoutError:
        return ClientTimeoutError(
            f"Run {run_id!r} could not be checked within {timeout} s: the server at "
            f"{opts.base_url} did not answer ({reason}); wait longer, or check the server."
        )

    deadline = None if timeout is None else time.monotonic() + timeout
    return request_attempts(opts, "GET", f"/runs/{run_id}", deadline, timed_out)


def still_running(run: Run, timeout: float | None) -> ClientTimeoutError:
    """The error of :meth:`Client.wait` when the run is still going at its deadline."""
    return ClientTimeoutError(
        f"Run {run.run_id!r} is still {run.status} after {timeout} s; wait longer or follow "
        "it with events()."
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
    budget: str | int | None = None,
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Path, query parameters and JSON body of ``POST /workflows/{name}/runs``."""
    body = {**(fields or {}), **extra}
    params: dict[str, Any] = {} if budget is None else {"budget": str(budget)}
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


def answer_body(
    response: Any,
    event_type: str | None,
    fields: dict[str, Any] | None,
    waiting_for: list[Any] | None = None,
    waiter_id: str | None = None,
) -> dict[str, Any]:
    """The body of ``POST /runs/{id}/events`` answering a run's question.

    With ``waiting_for`` (what the run waits for, as the server lists it) the answer is built
    from it: the awaited event type (unless ``event_type`` names one) and the values its
    waiting step requires; ``fields`` are added last. Without, it is a ``HumanResponseEvent``.
    """
    awaited = [
        w
        for w in waiting_for or []
        if isinstance(w, dict)
        and (event_type is None or w.get("type") == event_type)
        and (waiter_id is None or w.get("waiter_id") == waiter_id)
    ]
    chosen = awaited[0] if awaited else {}
    requirements = chosen.get("requirements")
    data = dict(requirements) if isinstance(requirements, dict) else {}
    if response is not None:
        data[_response_field(chosen.get("schema"), data)] = response
    data.update(fields or {})
    return {"type": event_type or chosen.get("type") or "HumanResponseEvent", "data": data}


def awaited_in(refusal: Any) -> list[Any]:
    """What the run waits for, as a server's refusal (422) of an answer lists it."""
    body = getattr(refusal, "body", None)
    waits = body.get("waiting_for") if isinstance(body, dict) else None
    return list(waits) if isinstance(waits, list) else []


def _response_field(schema: Any, required_values: dict[str, Any]) -> str:
    """The field an answer's text goes in: ``response``, or else the awaited event's one
    required field that the waiting step does not fix."""
    if not isinstance(schema, dict):
        return "response"
    props = schema.get("properties") or {}
    if "response" in props or not isinstance(props, dict):
        return "response"
    free = [n for n in schema.get("required") or [] if n in props and n not in required_values]
    return str(free[0]) if len(free) == 1 else "response"


__all__ = [
    "DEFAULT_RETRY",
    "Options",
    "answer_body",
    "awaited_in",
    "decode",
    "list_params",
    "options",
    "request_attempts",
    "run_from",
    "start_request",
    "still_running",
    "wait_attempts",
]
