"""Errors of :mod:`batonflow.client`.

::

    ClientError                    every error the client raises
    ├── ServerUnavailableError     no answer from the server (refused, timed out, cut off,
    │                              502/503/504) after the retry policy gave up
    ├── ClientTimeoutError         a call's timeout= passed (also a TimeoutError)
    ├── EventStreamError           an event stream sent a message that is not a run's event
    └── APIError                   the server answered with a 4xx/5xx status
        ├── AuthenticationError    401: missing or wrong token
        ├── NotFoundError          404: no such workflow or run
        ├── ConflictError          409: the run's state forbids it (ended, already answered)
        └── InvalidRequestError    other 4xx: bad input (413, 415, 422, ...)

Every message says what happened and what to do; :class:`APIError` keeps the server's own
``detail`` sentence, which names the bad field or state.
"""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """Base class of every error raised by :mod:`batonflow.client`."""


class ServerUnavailableError(ClientError, ConnectionError):
    """The server could not be reached, or it stopped answering."""


class ClientTimeoutError(ClientError, TimeoutError):
    """A call's ``timeout=`` passed before it could finish (``wait``, ``events``)."""


class EventStreamError(ClientError, ValueError):
    """A run's event stream sent a message the client cannot read as one of the run's events.

    The stream is not followed further: an event the client cannot number could be lost or
    seen twice. Its message names the message and the last event read.
    """


class APIError(ClientError):
    """The server refused a request.

    Attributes:
        status_code: The HTTP status.
        detail: The server's explanation (its ``detail`` field), or the raw body.
        body: The decoded JSON body, when there was one.
    """

    def __init__(self, status_code: int, detail: str, body: Any = None) -> None:
        super().__init__(f"{status_code}: {detail}")
        self.status_code = status_code
        self.detail = detail
        self.body = body


class AuthenticationError(APIError):
    """401: the server needs a token (``Client(url, token=...)``) or got a wrong one."""


class NotFoundError(APIError):
    """404: the workflow or run does not exist on this server."""


class ConflictError(APIError):
    """409: the run is not in a state that allows this (it ended, or was already answered)."""


class InvalidRequestError(APIError):
    """A 4xx other than 401/404/409: the request itself was wrong (see ``detail``)."""


def api_error(status_code: int, body: Any, text: str) -> APIError:
    """The :class:`APIError` subclass for a response with ``status_code``."""
    detail = body.get("detail") if isinstance(body, dict) else None
    if not isinstance(detail, str) or not detail:
        detail = text.strip() or f"the server answered HTTP {status_code} with no detail"
    cls: type[APIError] = {
        401: AuthenticationError,
        404: NotFoundError,
        409: ConflictError,
    }.get(status_code, InvalidRequestError if status_code < 500 else APIError)
    return cls(status_code, detail, body)


__all__ = [
    "APIError",
    "AuthenticationError",
    "ClientError",
    "ClientTimeoutError",
    "ConflictError",
    "EventStreamError",
    "InvalidRequestError",
    "NotFoundError",
    "ServerUnavailableError",
    "api_error",
]
