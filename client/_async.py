"""The asyncio client, :class:`AsyncClient`."""

from __future__ import annotations

import asyncio
import builtins
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from . import _base
from .models import Run, RunEvent


class AsyncClient:
    """An asyncio client of a ``batonflow serve`` server (or any :func:`create_app` app).

    ::

        async with AsyncClient("http://127.0.0.1:8000") as client:
            run = await client.start("guess-number", {"target": 42})
            async for event in client.events(run.run_id):
                print(event.seq, event.type, event.value)
            print((await client.get(run.run_id)).result)

    :meth:`events` reconnects by itself when the connection breaks, resuming after the last
    event it yielded (``Last-Event-ID``), so no event is lost or repeated.

    Args:
        base_url: The server, e.g. ``"http://127.0.0.1:8000"``.
        token: The server's bearer token, when it was started with one.
        timeout: Seconds to wait for each answer (an event stream waits for keep-alives).
        reconnect_attempts: How many times in a row :meth:`events` reconnects before it gives
            up with :class:`ServerUnavailableError`.
        reconnect_delay: Seconds before the first reconnect; doubles with each failure.
        transport: An ``httpx`` transport (tests); the default opens real connections.

    Raises:
        ValueError: A base URL that is not http(s), or a negative setting.
    """

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        token: str | None = None,
        timeout: float = 30.0,
        reconnect_attempts: int = 5,
        reconnect_delay: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._options = _base.options(base_url, token, timeout, reconnect_attempts, reconnect_delay)
        self._http = httpx.AsyncClient(
            base_url=self._options.base_url,
            headers=self._options.headers,
            timeout=timeout,
            transport=transport,
        )

    @property
    def base_url(self) -> str:
        """The server's URL."""
        return self._options.base_url

    async def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise _base.unavailable(self.base_url, exc) from exc
        return _base.decode(response)

    async def health(self) -> dict[str, Any]:
        """``GET /health``: ``{"status": "ok", ...}``."""
        body: dict[str, Any] = await self._request("GET", "/health")
        return body

    async def workflows(self) -> list[dict[str, Any]]:
        """The served workflows: each one's ``name``, ``start_event`` schema and ``accepts``."""
        return list((await self._request("GET", "/workflows"))["workflows"])

    async def start(
        self,
        workflow: str,
        fields: dict[str, Any] | None = None,
        *,
        wait: bool = False,
        timeout: float | None = None,
        **more_fields: Any,
    ) -> Run:
        """Start a run of ``workflow`` with the start event's fields.

        Args:
            workflow: The name it is served under.
            fields: The start event's fields (``more_fields`` are added to them).
            wait: Return only once the run has ended (or ``timeout`` passed: then the run
                is returned still ``running``).
            timeout: Seconds to wait with ``wait=True`` (the server's wait).
            **more_fields: More start fields, as keywords.

        Returns:
            The run; just started (``status`` ``running``) unless ``wait=True``.

        Raises:
            NotFoundError: No workflow by that name.
            InvalidRequestError: A start field the workflow refuses (``detail`` names it).
            ServerUnavailableError: The server cannot be reached.
        """
        path, params, body = _base.start_request(workflow, fields, more_fields, wait, timeout)
        # A server-side wait can last longer than one request normally does.
        request_timeout = (
            None if wait and timeout is None else self._options.timeout + (timeout or 0)
        )
        return _base.run_from(
            await self._request("POST", path, params=params, json=body, timeout=request_timeout)
        )

    async def get(self, run_id: str) -> Run:
        """The run's status, start fields, and result or error.

        Raises:
            NotFoundError: No run with that id.
        """
        return _base.run_from(await self._request("GET", f"/runs/{run_id}"))

    async def list(
        self, *, workflow: str | None = None, status: str | None = None, limit: int = 100
    ) -> builtins.list[Run]:
        """Runs, newest first, optionally of one workflow or with one status.

        Raises:
            InvalidRequestError: An unknown status (``detail`` lists the valid ones).
        """
        body = await self._request(
            "GET", "/runs", params=_base.list_params(workflow, status, limit)
        )
        return [Run.from_json(row) for row in body["runs"]]

    async def cancel(self, run_id: str) -> Run:
        """Cancel a run in progress and return it as it ended.

        Raises:
            NotFoundError: No run with that id.
            ConflictError: The run has already ended.
        """
        await self._request("POST", f"/runs/{run_id}/cancel")
        return await self.get(run_id)

    async def send_event(
        self, run_id: str, event_type: str, data: dict[str, Any] | None = None
    ) -> Run:
        """Send an event the workflow accepts from outside into a run in progress.

        Args:
            run_id: The run.
            event_type: The event's class name, one of the workflow's ``accepts``.
            data: The event's fields.

        Returns:
            The run as the server reported it after taking the event.

        Raises:
            ConflictError: The run has ended, or its question was already answered.
            InvalidRequestError: An event type or field the workflow does not take.
        """
        body = {"type": event_type, "data": dict(data or {})}
        return _base.run_from(await self._request("POST", f"/runs/{run_id}/events", json=body))

    async def answer(
        self,
        run_id: str,
        response: Any,
        *,
        event_type: str = "HumanResponseEvent",
        fields: dict[str, Any] | None = None,
    ) -> Run:
        """Answer a run that asked for input (an ``InputRequiredEvent``).

        Args:
            run_id: The waiting run.
            response: The answer (the ``HumanResponseEvent``'s ``response``).
            event_type: The answering event's class, when the workflow uses its own.
            fields: More fields of that event.

        Raises:
            ConflictError: The run has ended, or was already answered.
        """
        body = _base.answer_body(response, event_type, fields)
        return _base.run_from(await self._request("POST", f"/runs/{run_id}/events", json=body))

    async def events(
        self, run_id: str, *, after: int = 0, reconnect: bool = True
    ) -> AsyncIterator[RunEvent]:
        """Follow a run's event stream until its end message (which is yielded last).

        A broken connection is reopened with ``Last-Event-ID`` set to the last event yielded,
        so each event comes exactly once and in order, also across server restarts.

        Args:
            run_id: The run.
            after: Start after this sequence number (0: from the beginning).
            reconnect: Reopen a broken stream (up to ``reconnect_attempts`` times in a row).

        Raises:
            NotFoundError: No run with that id.
            ServerUnavailableError: The stream kept breaking.
        """
        last = after
        failures = 0
        delay = self._options.reconnect_delay
        while True:
            error: BaseException | None = None
            try:
                async with aconnect_sse(
                    self._http,
                    "GET",
                    f"/runs/{run_id}/events",
                    headers=_base.stream_headers(last),
                    timeout=_base.stream_timeout(self._options.timeout),
                ) as source:
                    if source.response.status_code >= 400:
                        await source.response.aread()
                        _base.decode(source.response)
                    async for sse in source.aiter_sse():
                        event = _base.run_event(sse.id, sse.event, sse.data)
                        if event is None or event.seq <= last:
                            continue
                        last, failures = event.seq, 0
                        yield event
                        if event.is_end:
                            return
            except httpx.TransportError as exc:
                error = exc
            failures += 1
            if not reconnect or failures > self._options.reconnect_attempts:
                raise _base.broken_stream(run_id, failures, last, error) from error
            await asyncio.sleep(_base.backoff(failures, delay))

    async def wait(self, run_id: str, *, timeout: float | None = None) -> Run:
        """Wait until the run has ended and return it.

        Raises:
            TimeoutError: ``timeout`` seconds passed first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.02
        while True:
            run = await self.get(run_id)
            if run.done:
                return run
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(
                    f"Run {run_id!r} is still {run.status} after {timeout} s; wait longer or "
                    "follow it with events()."
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.5)

    async def close(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


__all__ = ["AsyncClient"]
