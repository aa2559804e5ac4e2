"""The asyncio client, :class:`AsyncClient`."""

from __future__ import annotations

import asyncio
import builtins
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from . import _base
from ._stream import EventStream
from .errors import InvalidRequestError
from .models import Run, RunEvent
from .retry import (
    IDEMPOTENCY_HEADER,
    Attempts,
    RetryPolicy,
    status_failure,
    transport_failure,
)


class AsyncClient:
    """An asyncio client of a ``batonflow serve`` server (or any :func:`create_app` app).

    ::

        async with AsyncClient("http://127.0.0.1:8000") as client:
            run = await client.start("guess-number", {"target": 42})
            async for event in client.events(run.run_id):
                print(event.seq, event.type, event.value)
            print((await client.get(run.run_id)).result)

    A request that fails for a passing reason (the server restarting, a proxy answering
    ``502``/``503`` while a replica is replaced) is sent again under ``retry``, a
    :class:`RetryPolicy`: ``GET`` requests always, ``POST`` requests only when the server
    surely did not carry them out (see :mod:`batonflow.client.retry`). :meth:`events`
    reopens a broken stream under the same policy, resuming after the last event it yielded
    (``Last-Event-ID``), so no event is lost or repeated.

    Args:
        base_url: The server, e.g. ``"http://127.0.0.1:8000"``.
        token: The server's bearer token, when it was started with one.
        timeout: Seconds each attempt may take to connect and get the server's answer (an
            open event stream may then stay silent up to 60 s, as keep-alives come every 15).
        retry: When and how long to retry; the default retries for up to 30 s after the
            first failure. ``None``: never retry.
        transport: An ``httpx`` transport (tests); the default opens real connections.

    Raises:
        ValueError: A base URL that is not http(s), or a timeout that is not positive.
        TypeError: A ``retry`` that is not a :class:`RetryPolicy`.
    """

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        token: str | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = _base.DEFAULT_RETRY,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._options = _base.options(base_url, token, timeout, retry)
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

    async def _request(
        self, method: str, path: str, *, attempts: Attempts | None = None, **kwargs: Any
    ) -> Any:
        """Send a request under the retry policy; its decoded JSON body.

        ``timeout=`` (default: the client's) bounds each attempt.
        """
        if attempts is None:
            attempts = _base.request_attempts(self._options, method, path)
        timeout = kwargs.pop("timeout", self._options.timeout)
        keyed = IDEMPOTENCY_HEADER in (kwargs.get("headers") or {})
        while True:
            try:
                response = await self._http.request(
                    method, path, timeout=attempts.timeout(timeout), **kwargs
                )
            except httpx.TransportError as exc:
                failure = transport_failure(exc, method, path, self.base_url, keyed=keyed)
            else:
                refused = status_failure(response, method, path, keyed=keyed)
                if refused is None:
                    attempts.reset()
                    return _base.decode(response)
                failure = refused
            await asyncio.sleep(attempts.pause(failure))

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
        idempotency_key: str | None = None,
        budget: str | int | None = None,
        queue_priority: int | None = None,
        **more_fields: Any,
    ) -> Run:
        """Start a run of ``workflow`` with the start event's fields.

        The start is sent with an ``Idempotency-Key``, the same on every attempt, so it is
        retried after any failure (a connection that broke while it was sent included) and
        still starts one run: a server that took an attempt whose answer was lost answers
        the next with that run.

        Args:
            workflow: The name it is served under.
            fields: The start event's fields (``more_fields`` are added to them).
            wait: Return only once the run has ended (or ``timeout`` passed: then the run
                is returned still ``running``).
            timeout: Seconds to wait with ``wait=True`` (the server's wait).
            idempotency_key: The key (default: a new UUID for this call). Pass your own,
                kept with the request, to make a start made again after your process
                restarts return the run the first one started.
            budget: The run's token or cost budget (``5000``, ``"5000 tokens"``,
                ``"$0.50"``): its LLM calls wait for a raise before they would pass it
                (see :meth:`raise_budget`).
            queue_priority: For a workflow the server queues (it has limits): higher leaves
                the queue first (the server's ``?priority=``); default 0.
            **more_fields: More start fields, as keywords.

        Returns:
            The run; just started (``status`` ``running``) unless ``wait=True``, or the run
            the key started already.

        Raises:
            NotFoundError: No workflow by that name.
            InvalidRequestError: A start field the workflow refuses (``detail`` names it),
                or a key that started a run with other fields.
            ServerUnavailableError: The server cannot be reached.
        """
        path, params, body = _base.start_request(
            workflow, fields, more_fields, wait, timeout, budget
        )
        if queue_priority is not None:
            params["priority"] = int(queue_priority)
        # A server-side wait can last longer than one request normally does.
        request_timeout = (
            None if wait and timeout is None else self._options.timeout + (timeout or 0)
        )
        return _base.run_from(
            await self._request(
                "POST",
                path,
                params=params,
                json=body,
                timeout=request_timeout,
                headers={IDEMPOTENCY_HEADER: idempotency_key or str(uuid.uuid4())},
            )
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

    async def schedules(self) -> builtins.list[dict[str, Any]]:
        """The stored schedules, by name: each one's ``name``, ``workflow``, ``cron`` (UTC),
        ``fields`` and ``missed`` policy."""
        return builtins.list((await self._request("GET", "/schedules"))["schedules"])

    async def add_schedule(
        self,
        name: str,
        *,
        cron: str,
        workflow: str,
        fields: dict[str, Any] | None = None,
        missed: str = "skip",
    ) -> dict[str, Any]:
        """Store a schedule: the server starts a run of ``workflow`` at each ``cron`` time.

        Args:
            name: Its unique name.
            cron: Five cron fields (minute hour day month weekday) in UTC, or six with
                seconds last.
            workflow: The served workflow each firing starts.
            fields: The start event's fields of each run.
            missed: Firings missed while no server ran: ``"skip"`` or ``"once"``.

        Raises:
            InvalidRequestError: A bad cron expression, an unknown workflow or a field it
                refuses (``detail`` says which).
            ConflictError: A schedule of that name exists.
        """
        body = {
            "name": name,
            "cron": cron,
            "workflow": workflow,
            "fields": fields or {},
            "missed": missed,
        }
        added: dict[str, Any] = await self._request("POST", "/schedules", json=body)
        return added

    async def remove_schedule(self, name: str) -> dict[str, Any]:
        """Remove a schedule (its runs stay); the schedule as it was.

        Raises:
            NotFoundError: No schedule of that name.
        """
        removed: dict[str, Any] = await self._request("DELETE", f"/schedules/{name}")
        return removed

    async def raise_budget(self, run_id: str, *, tokens: int = 0, cost: float = 0.0) -> Run:
        """Add ``tokens`` (and ``cost``, US dollars) to a run's budget; a run waiting for it
        goes on. Returns the run as it is now.

        Raises:
            NotFoundError: No run with that id.
            ConflictError: The run has ended, or has no budget.
            InvalidRequestError: Negative amounts, or nothing to add.
        """
        await self._request("POST", f"/runs/{run_id}/budget", json={"tokens": tokens, "cost": cost})
        return await self.get(run_id)

    async def cancel(self, run_id: str) -> Run:
        """Cancel a run in progress and return it as it ended.

        Raises:
            NotFoundError: No run with that id.
            ConflictError: The run has already ended.
        """
        await self._request("POST", f"/runs/{run_id}/cancel")
        return await self.get(run_id)

    async def fork(
        self,
        run_id: str,
        at: int | None = None,
        *,
        state: dict[str, Any] | None = None,
        event: dict[str, Any] | None = None,
    ) -> Run:
        """Start a new run that continues ``run_id`` from its checkpoint ``at`` (a fork).

        The steps before that checkpoint do not run again; the new run records its parent
        (``run.raw["parent_run_id"]``, ``["parent_seq"]``). See ``lineage()``.

        Args:
            run_id: The run to fork.
            at: The checkpoint's seq (each step of ``GET /runs/{id}/steps`` names its
                ``checkpoint``); default: the run's latest.
            state: State paths to set first (``{"tone": "warm"}``).
            event: ``{"type": ..., "data": {...}}``: an event to make pending instead of
                the ones queued at that checkpoint.

        Returns:
            The new run (``running``).

        Raises:
            NotFoundError: No run with that id.
            ConflictError: The server keeps no checkpoints, or does not serve its workflow.
            InvalidRequestError: No checkpoint ``at``, or a state or event it does not take.
        """
        body: dict[str, Any] = {"at": at, "state": dict(state or {})}
        if event is not None:
            body["event"] = event
        return _base.run_from(await self._request("POST", f"/runs/{run_id}/fork", json=body))

    async def journal(self, run_id: str) -> builtins.list[dict[str, Any]]:
        """The calls the run's steps journaled (``ctx.journal``), in the order recorded: each
        one's ``step``, ``execution``, ``call``, ``name``, ``error`` and recorded ``value``.

        Raises:
            NotFoundError: No run with that id.
        """
        return builtins.list((await self._request("GET", f"/runs/{run_id}/journal"))["calls"])

    async def lineage(self, run_id: str) -> dict[str, Any]:
        """The run's ``parent`` (``{"run_id", "seq", "step", "kind"}`` or ``None``) and
        ``children`` (its forks and child runs; ``kind`` says which: ``"fork"``, ``"child"``).

        Raises:
            NotFoundError: No run with that id.
        """
        body: dict[str, Any] = await self._request("GET", f"/runs/{run_id}/lineage")
        return body

    async def send_event(
        self, run_id: str, event_type: str, data: dict[str, Any] | None = None
    ) -> Run:
        """Send an event the workflow accepts from outside into a run in progress (or queued:
        it is given the event when it starts).

        Args:
            run_id: The run.
            event_type: The event's class name, one of the workflow's ``accepts``.
            data: The event's fields.

        Returns:
            The run as the server reported it after taking the event.

        Raises:
            ConflictError: The run has ended, or its question was already answered (or,
                queued, it has asked none yet).
            InvalidRequestError: An event type or field the workflow does not take.
        """
        body = {"type": event_type, "data": dict(data or {})}
        return _base.run_from(await self._request("POST", f"/runs/{run_id}/events", json=body))

    async def answer(
        self,
        run_id: str,
        response: Any,
        *,
        event_type: str | None = None,
        fields: dict[str, Any] | None = None,
        waiter_id: str | None = None,
    ) -> Run:
        """Answer a run that asked for input (an ``InputRequiredEvent``).

        When the server refuses a plain ``HumanResponseEvent`` (422, before anything reaches
        the run), the answer is built from what it says the run waits for (as
        :attr:`Run.waiting_for` lists it): the awaited event type and the values its waiting
        step requires (``requirements=`` of ``ctx.wait_for_event``), and sent once more; so
        ``answer(run_id, "yes")`` answers a step waiting for ``HumanResponseEvent`` with
        ``requirements={"tool": "transfer"}``.

        Args:
            run_id: The waiting run.
            response: The answer (the event's ``response``; ``None``: only ``fields``).
            event_type: The answering event's class name; default: the awaited one.
            fields: More fields of that event (they win over the required values).
            waiter_id: Answer this ``wait_for_event`` when several steps wait.

        Raises:
            ConflictError: The run has ended, waits for no answer, or was already answered.
            InvalidRequestError: The run would not take this answer (``detail`` says what
                it waits for); nothing was sent into it.
        """
        path = f"/runs/{run_id}/events"
        body = _base.answer_body(response, event_type, fields, None, waiter_id)
        try:
            return _base.run_from(await self._request("POST", path, json=body))
        except InvalidRequestError as refusal:
            # Refused before anything was sent into the run; the refusal says what it waits
            # for: answer that (its type, its required values).
            built = _base.answer_body(
                response, event_type, fields, _base.awaited_in(refusal), waiter_id
            )
            if built == body:
                raise
        return _base.run_from(await self._request("POST", path, json=built))

    async def events(
        self,
        run_id: str,
        *,
        after: int = 0,
        reconnect: bool = True,
        timeout: float | None = None,
    ) -> AsyncIterator[RunEvent]:
        """Follow a run's event stream until its end message (which is yielded last).

        A broken stream (a dropped connection, a server restart, a proxy's ``502``/``503``)
        is reopened under the client's retry policy with ``Last-Event-ID`` set to the last
        event yielded, so each event comes exactly once and in order; the policy's budget
        starts afresh after each event.

        Args:
            run_id: The run.
            after: Start after this sequence number (0: from the beginning).
            reconnect: Reopen a broken stream; ``False``: raise at the first break.
            timeout: Seconds the whole call may take, reconnects included (``None``: no
                limit). The client's ``timeout`` bounds each attempt to open the stream.

        Raises:
            NotFoundError: No run with that id.
            ClientTimeoutError: ``timeout`` passed before the run's end.
            ServerUnavailableError: The stream could not be reopened within the retry budget
                (the message says how to resume).
            EventStreamError: The stream sent a message that is not one of the run's events.
        """
        stream = EventStream(self._options, run_id, after, reconnect, timeout)
        while True:
            try:
                async with aconnect_sse(
                    self._http,
                    "GET",
                    stream.path,
                    headers=stream.headers(),
                    timeout=stream.open_timeout(),
                ) as source:
                    if source.response.status_code >= 400:
                        await source.response.aread()
                    failure = stream.opened(source.response)
                    if failure is None:
                        async for sse in source.aiter_sse():
                            event = stream.take(sse)
                            if event is not None:
                                yield event
                                if event.is_end:
                                    return
                        failure = stream.closed_early()
            except httpx.TransportError as exc:
                failure = stream.broken(exc)
            await asyncio.sleep(stream.attempts.pause(failure))

    async def wait(self, run_id: str, *, timeout: float | None = None) -> Run:
        """Wait until the run has ended and return it.

        The run is polled under the client's retry policy, so a server restart or a proxy's
        ``502``/``503`` meanwhile is ridden out.

        Args:
            run_id: The run.
            timeout: Seconds to wait in all (``None``: no limit).

        Raises:
            ClientTimeoutError: ``timeout`` seconds passed first (also a ``TimeoutError``).
            ServerUnavailableError: The server stayed away past the retry budget.
        """
        attempts = _base.wait_attempts(self._options, run_id, timeout)
        pause = 0.02
        while True:
            run = _base.run_from(await self._request("GET", f"/runs/{run_id}", attempts=attempts))
            if run.done:
                return run
            left = attempts.remaining()
            if left == 0:
                raise _base.still_running(run, timeout)
            await asyncio.sleep(pause if left is None else min(pause, left))
            pause = min(pause * 2, 0.5)

    async def close(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


__all__ = ["AsyncClient"]
