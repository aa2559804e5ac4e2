"""batonflow.client: talk to a ``batonflow serve`` server from Python.

::

    from batonflow.client import Client

    with Client("http://127.0.0.1:8000") as client:
        run = client.start("hitl", {"topic": "v1.0"})
        for event in client.events(run.run_id):
            if event.type == "InputRequiredEvent":
                client.answer(run.run_id, "yes")
        print(client.get(run.run_id).result)

* :class:`Client` (blocking) and :class:`AsyncClient` (asyncio), on httpx: ``start``,
  ``get``, ``list``, ``cancel``, ``answer``, ``send_event``, ``wait`` and ``events`` (the
  run's Server-Sent Events, reconnecting by itself from the last event seen).
* :class:`RetryPolicy`: when and how long both retry a request or reopen a stream that failed
  for a passing reason (``Client(url, retry=RetryPolicy(total=60))``; see
  :mod:`batonflow.client.retry` for which failures are retried).
* :class:`Run` and :class:`RunEvent`, the records they return.
* :class:`ClientError` and its subclasses (see :mod:`batonflow.client.errors`).

Needs the ``client`` extra: ``pip install 'batonflow[client]'`` (httpx, httpx-sse).
"""

# ruff: noqa: E402
from batonflow._extras import require_extra

require_extra("batonflow.client", "client", {"httpx": "httpx", "httpx_sse": "httpx-sse"})

from ._async import AsyncClient as AsyncClient
from ._sync import Client as Client
from .errors import APIError as APIError
from .errors import AuthenticationError as AuthenticationError
from .errors import ClientError as ClientError
from .errors import ClientTimeoutError as ClientTimeoutError
from .errors import ConflictError as ConflictError
from .errors import EventStreamError as EventStreamError
from .errors import InvalidRequestError as InvalidRequestError
from .errors import NotFoundError as NotFoundError
from .errors import ServerUnavailableError as ServerUnavailableError
from .models import FINISHED_STATUSES as FINISHED_STATUSES
from .models import Run as Run
from .models import RunEvent as RunEvent
from .retry import RetryPolicy as RetryPolicy

__all__ = [
    "FINISHED_STATUSES",
    "APIError",
    "AsyncClient",
    "AuthenticationError",
    "Client",
    "ClientError",
    "ClientTimeoutError",
    "ConflictError",
    "EventStreamError",
    "InvalidRequestError",
    "NotFoundError",
    "RetryPolicy",
    "Run",
    "RunEvent",
    "ServerUnavailableError",
]
