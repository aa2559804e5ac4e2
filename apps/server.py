"""The HTTP server: runs, event streams (SSE), human-in-the-loop answers, cancellation.

:func:`create_app` builds a FastAPI application around a set of workflows::

    app = create_app({"hitl": ApprovalFlow()}, store=RunStore(".batonflow/runs.db"))

Routes (all JSON unless noted; every route but ``/health`` needs ``Authorization: Bearer …``
when a token is set):

=======================================  ==================================================
``GET /health``                          liveness
``GET /workflows``                       names, start-event JSON schema, accepted events
``GET /workflows/{name}/graph``          Mermaid text of all possible flows
``POST /workflows/{name}/runs``          start a run (body = start-event fields);
                                         ``?wait=true`` waits for the result; an
                                         ``Idempotency-Key`` it had: its run (200)
``GET /runs``                            runs, filtered by ``workflow`` and ``status``
``GET /runs/{id}``                       status, result or error
``GET /runs/{id}/events``                Server-Sent Events, ``id:`` = sequence number;
                                         ``Last-Event-ID`` or ``?after=N`` resumes
``POST /runs/{id}/events``               send an event (``{"type", "data"}``) into a run
``POST /runs/{id}/cancel``               cancel a run
``POST /runs/{id}/resume``               continue an interrupted or failed run as a new run
``POST /runs/{id}/fork``                 a checkpoint continued as a new run (``_forks``)
``POST /runs/{id}/budget``               raise a run's budget (``_budget_routes``)
``GET|POST /schedules``                  list or add schedules (:mod:`.schedules`)
``DELETE /schedules/{name}``             remove a schedule
``GET /``, ``/docs``, ``/redoc``         the run console and the API docs, with the
                                         drawing, steps and state routes of
                                         :mod:`batonflow.apps.run_console`
=======================================  ==================================================

:func:`serve` runs an app with uvicorn; :class:`BackgroundServer` runs one in a thread on an
ephemeral port (tests, notebooks, the docs). The error answers (404, 422, the store's 503 and
507, a 500 with an error id) are :mod:`batonflow.apps._http_errors`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, Literal

from batonflow._extras import require_extra

# First, so that a server without the extra says what to install (the modules below use FastAPI).
require_extra("batonflow.apps.server", "server", {"fastapi": "fastapi", "uvicorn": "uvicorn"})

from batonflow.core.durable._text import text_problem
from batonflow.core.errors import (
    CheckpointError,
    DuplicateStartError,
    IdempotencyKeyError,
    IncompatibleRunError,
    RunConflictError,
    SerializationError,
)
from fastapi import FastAPI, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse

from ._answers import Refused, check_event, waiting_info
from ._budget_routes import install_budgets
from ._budget_view import budget_fields, budget_of
from ._child_answers import NotRoutable, waiting_parent
from ._child_answers import target as child_target
from ._forks import install_forks
from ._http_errors import (
    install_error_handlers,
    json_object,
    not_found_run,
    not_found_workflow,
    not_recorded,
)
from ._idempotent import key_refused, started_already
from ._introspect import (
    StartFieldsError,
    build_start_event,
    chat_fields,
    external_events,
    mermaid_graph,
    start_schema,
)
from ._openapi import install_openapi
from ._queue import cancel_queued
from ._queued_routes import start_queued
from ._run_reads import off_loop, run_body, runs_body
from ._runs import RunManager, RunStateError
from ._security import BearerAuth, BodyLimit, HostGuard, JsonBody
from ._uvicorn import BackgroundServer as BackgroundServer
from ._uvicorn import bind_socket as bind_socket
from ._uvicorn import serve as serve
from .api_models import (
    Cancelled,
    EventSent,
    Graph,
    Health,
    Run,
    RunAccepted,
    RunList,
    WorkflowList,
    responses,
)
from .run_console import install_console
from .run_store import FINISHED, STATUSES, RunStore

#: The largest event sequence number a client may resume after (SQLite's INTEGER range).
MAX_SEQ = 2**63 - 1


def _last_event_id(text: str) -> int:
    """The sequence number in a ``Last-Event-ID`` header; a 422 when it is not one."""
    try:
        seq = int(text.strip())
    except ValueError:
        seq = -1
    if not 0 <= seq <= MAX_SEQ:
        raise HTTPException(
            422,
            f"Last-Event-ID must be a sequence number from 0 to {MAX_SEQ}, got {text[:40]!r}; "
            "send the id of the last event received.",
        )
    return seq


def create_app(
    workflows: dict[str, Any],
    store: RunStore | None = None,
    token: str | None = None,
    *,
    max_body_bytes: int = 1024 * 1024,
    heartbeat: float = 15.0,
    checkpoints: Any = None,
    title: str = "batonflow",
    allowed_hosts: tuple[str, ...] | list[str] = (),
    retention: Any = None,
    schedule_poll: float = 15.0,
    budgets: dict[str, Any] | None = None,
    limits: Mapping[str, Any] | None = None,
    queue_poll: float = 0.2,
) -> FastAPI:
    """Build the FastAPI application that serves ``workflows``.

    Args:
        workflows: Workflow instances by the name they are served under.
        store: Where runs are kept; an in-memory store (nothing survives) when omitted. With
            a file store, finished runs stay readable after a restart and runs waiting for a
            human are restored and can still be answered.
        token: When set, every route but ``/health`` needs ``Authorization: Bearer <token>``.
        max_body_bytes: Larger request bodies get a 413.
        heartbeat: Seconds between keep-alive comments on an idle event stream.
        checkpoints: A durable checkpoint store (``SqliteCheckpointStore``, may share the run
            store's file). Runs then record a checkpoint after every completed step, and a
            restarted server resumes runs that were in progress from their last one.
        title: The OpenAPI title.
        allowed_hosts: Without a token, only requests whose ``Host`` is the bound address are
            served (against DNS rebinding); these names are served too (``"*"``: any).
        retention: A :class:`~batonflow.core.Retention`: ended runs older than it says are
            deleted in the background (every ``retention.every`` seconds).
        schedule_poll: Seconds between the scheduler's looks at the stored schedules while
            no firing is due (it also wakes at every firing time); see
            :mod:`batonflow.apps.schedules`.
        budgets: The budget of every run of a workflow, by its served name (``""``: every
            workflow without its own); a start's ``?budget=`` gives one run another. See
            ``docs/budgets.md``.
        limits: :class:`~batonflow.core.RunLimits` by workflow name: those workflows' runs
            are recorded ``queued`` and start as the limits allow (``apps/_queue.py``); a
            full queue answers ``429``.
        queue_poll: Seconds between a queue's looks at the store when nothing here frees a
            slot (runs ending on other replicas are seen then).

    Returns:
        The FastAPI application; ``app.state.manager`` holds its runs.
    """
    for name, workflow in workflows.items():
        if not hasattr(workflow, "run"):
            raise TypeError(
                f"create_app: {name!r} is {type(workflow).__name__}, not a workflow instance; "
                "pass {'name': MyWorkflow()}."
            )
        validate = getattr(workflow, "validate", None)
        if callable(validate):
            validate()  # a workflow that cannot run fails here, not on a client's request
    manager = RunManager(
        dict(workflows),
        store if store is not None else RunStore(":memory:"),
        heartbeat=heartbeat,
        checkpoints=checkpoints,
        budgets=budgets,
    )
    run_store = manager.store  # the one record of every run, also with checkpoints=
    if limits:
        from ._queue import ServerQueue

        manager.queue = ServerQueue(manager, limits, poll=queue_poll)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await manager.restore()
        if manager.queue is not None:
            manager.queue.start()
        sweeper = (
            asyncio.create_task(retention.run_forever(manager.records))
            if retention is not None
            else None
        )
        try:
            async with firing(scheduler):
                yield
        finally:
            if sweeper is not None:
                sweeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sweeper
            if manager.queue is not None:
                await manager.queue.stop()
            await manager.close()

    app = FastAPI(title=title, lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.manager = manager
    from ._schedule_routes import firing, install_schedules  # FastAPI is imported by now

    scheduler = install_schedules(app, manager, poll=schedule_poll)

    install_error_handlers(app)

    @app.get("/health", responses=responses(200, Health, "The server is up."))
    async def health() -> dict[str, Any]:
        return {"status": "ok", "workflows": len(workflows)}

    @app.get("/workflows", responses=responses(200, WorkflowList, "The served workflows."))
    async def list_workflows() -> dict[str, Any]:
        return {
            "workflows": [
                {
                    "name": name,
                    "class": type(w).__name__,
                    "start_event": start_schema(w),
                    "accepts": sorted(external_events(w)),
                    "chat": chat_fields(w),
                }
                for name, w in sorted(workflows.items())
            ]
        }

    @app.get(
        "/workflows/{name}/graph",
        responses=responses(200, Graph, "All possible flows as Mermaid text.", 404, 422),
    )
    async def graph(name: str, format: Literal["json", "text"] = "json") -> Any:
        workflow = workflows.get(name)
        if workflow is None:
            raise not_found_workflow(name, workflows)
        text = mermaid_graph(workflow)
        if format == "text":
            return PlainTextResponse(text, media_type="text/vnd.mermaid")
        return {"name": name, "format": "mermaid", "mermaid": text}

    async def _accepted(live: Any) -> dict[str, Any]:
        # The whole run, as GET /runs/{id} shows it, so that a client's Run knows its workflow
        # and start fields; with the live status (the record can lag behind it). Read off the
        # loop where the store can (PostgreSQL: a round trip).
        row = await run_store.aget(live.run_id)
        body = {"run_id": live.run_id} if row is None else row.public()
        body.update(status=live.status, waiting_for_input=live.status == "waiting")
        return body

    @app.post(
        "/workflows/{name}/runs",
        status_code=202,
        responses={
            **responses(
                202,
                RunAccepted,
                "The run started (with wait=true: it had not ended within timeout).",
                404,
                413,
                415,
                422,
                429,
                507,
            ),
            200: {
                "description": "With wait=true: the run ended; here it is. Or the run this "
                "start's Idempotency-Key started already (header Idempotent-Replayed: true).",
                "model": Run,
            },
        },
    )
    async def start_run(
        name: str,
        request: Request,
        wait: bool = False,
        timeout: float | None = Query(None, gt=0, description="seconds to wait with wait=true"),
        key: str | None = Header(
            None, alias="Idempotency-Key", description="one run per key: a retry gets its run"
        ),
        budget: str | None = Query(
            None,
            description="the run's budget: tokens ('5000') or US dollars ('$0.50'), both "
            "joined by ','; its LLM calls wait (or fail) before they would pass it",
        ),
        priority: int = Query(
            0, description="with limits: higher leaves the run queue first (then the oldest)"
        ),
    ) -> JSONResponse:
        workflow = workflows.get(name)
        if workflow is None:
            raise not_found_workflow(name, workflows)
        try:
            limit = budget_of(budget)
        except ValueError as exc:
            raise HTTPException(422, f"Invalid budget: {exc}") from None
        fields = await json_object(request, 'the start event\'s fields, e.g. {"topic": "x"}')
        try:
            start_event = build_start_event(workflow, fields)
        except StartFieldsError as exc:
            return JSONResponse(
                {
                    "detail": f"Invalid field {exc.field!r}: {exc.reason}.",
                    "errors": [{**e, "loc": ["body", *e["loc"]]} for e in exc.errors],
                },
                status_code=422,
            )
        traceparent = request.headers.get("traceparent")
        if manager.queue is not None and manager.queue.applies(name):
            if limit is not None:
                raise HTTPException(
                    422,
                    f"Workflow {name!r} queues its runs, and a queued run cannot be given its "
                    "own budget yet; start it without ?budget= (batonflow serve --budget "
                    "NAME=AMOUNT gives the workflow's runs one).",
                )
            return await start_queued(
                manager, name, start_event, fields, request, key, priority, wait, timeout
            )
        try:
            with _caller_trace(request):
                live = await manager.start(name, start_event, fields, traceparent, key, limit)
        except DuplicateStartError as exc:
            return await started_already(manager, exc.run_id, wait, timeout)
        except (ValueError, IdempotencyKeyError) as exc:  # a bad key, or one reused
            return key_refused(exc)
        except (SerializationError, CheckpointError) as exc:
            return not_recorded(exc)
        if not wait:
            return JSONResponse(await _accepted(live), status_code=202)
        try:
            await asyncio.wait_for(asyncio.shield(live.done.wait()), timeout)
        except TimeoutError:
            return JSONResponse(await _accepted(live), status_code=202)
        row = await run_store.aget(live.run_id)
        assert row is not None
        budgets = await off_loop(
            manager.records, budget_fields, manager.records, row.run_id, row.status
        )
        return JSONResponse({**row.public(), **budgets}, status_code=200)

    @app.get("/runs", responses=responses(200, RunList, "The runs, newest first.", 422))
    async def list_runs(
        workflow: str | None = None,
        status: str | None = None,
        limit: int = Query(100, ge=1, le=1000),
    ) -> dict[str, Any]:
        if status is not None and status not in STATUSES:
            raise HTTPException(
                422, f"Unknown status {status!r}; use one of {', '.join(STATUSES)}."
            )
        problem = None if workflow is None else text_problem(workflow)
        if problem is not None:
            raise HTTPException(
                422,
                f"The workflow filter {workflow!r} holds {problem}, which no workflow name "
                "has; send a workflow's name (GET /workflows lists them) or leave it out.",
            )
        return {
            "runs": await off_loop(manager.records, runs_body, manager, workflow, status, limit)
        }

    @app.get("/runs/{run_id}", responses=responses(200, Run, "The run.", 404))
    async def get_run(run_id: str) -> dict[str, Any]:
        found = await off_loop(manager.records, run_body, manager, run_id)
        if found is None:
            raise not_found_run(run_id)
        row, body, budgets = found
        if row.status == "running":  # is a child run of it waiting for an answer?
            return {
                **body,
                **await off_loop(manager.records, waiting_parent, manager, run_store, row),
            }
        if row.status != "waiting" or budgets.get("waiting_reason") == "budget":
            return body
        live = manager.live.get(run_id)
        waits = waiting_info(
            run_store, row, workflows.get(row.workflow), live.handler if live else None
        )
        return {**body, **waits, **budgets}

    @app.get(
        "/runs/{run_id}/events",
        response_class=StreamingResponse,
        responses=responses(200, None, "The run's events.", 404, 422),
    )
    async def stream(
        run_id: str, request: Request, after: int | None = Query(None, ge=0, le=MAX_SEQ)
    ) -> StreamingResponse:
        if run_store.get(run_id) is None:
            raise not_found_run(run_id)
        start = after or 0
        last_id = request.headers.get("last-event-id")
        if last_id is not None:
            start = max(start, _last_event_id(last_id))

        async def body() -> AsyncIterator[bytes]:
            yield b": batonflow event stream\nretry: 1000\n\n"
            async for entry in manager.follow(run_id, start):
                if entry is None:
                    yield b": keep-alive\n\n"
                    continue
                data = json.dumps(entry.body, ensure_ascii=False)
                yield f"id: {entry.seq}\nevent: {entry.kind}\ndata: {data}\n\n".encode()

        return StreamingResponse(
            body(),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    @app.post(
        "/runs/{run_id}/events",
        status_code=202,
        responses=responses(
            202, EventSent, "The event was sent into the run.", 404, 409, 413, 415, 422, 507
        ),
    )
    async def send_event(run_id: str, request: Request) -> JSONResponse:
        row = run_store.get(run_id)
        if row is None:
            raise not_found_run(run_id)
        if row.status in FINISHED:
            raise HTTPException(
                409,
                f"Run {run_id!r} is {row.status}; events can only be sent to a run in progress.",
            )
        body = await json_object(
            request, '{"type": "HumanResponseEvent", "data": {"response": "..."}}'
        )
        try:  # the run itself, or the child run that waits for it (_child_answers)
            to = child_target(manager, run_id, row, body)
        except NotRoutable as exc:
            raise HTTPException(exc.status, exc.detail) from None
        if to.workflow is None:
            raise HTTPException(
                409, f"Run {run_id!r} belongs to workflow {row.workflow!r}, not served now."
            )
        try:
            event, answer = check_event(to.run_id, to.row, to.workflow, body, run_store, to.live)
        except Refused as exc:
            return JSONResponse(exc.body, status_code=exc.status)
        type_name = type(event).__name__
        try:
            # A human's answer is accepted once per question the run asked, atomically in
            # the store; any event is committed to the run's inbox before the 202.
            status = manager.send(to.run_id, to.via, event, answer=answer)
        except RunConflictError as exc:
            raise HTTPException(409, str(exc)) from None
        except (SerializationError, CheckpointError) as exc:
            return not_recorded(exc)
        sent = run_store.get(run_id)
        body = {"run_id": run_id} if sent is None else sent.public()
        body.update(status=status, waiting_for_input=status == "waiting", sent=type_name)
        return JSONResponse(body, status_code=202)

    @app.post(
        "/runs/{run_id}/cancel",
        responses=responses(200, Cancelled, "The run was cancelled.", 404, 409, 413, 415),
    )
    async def cancel(run_id: str) -> dict[str, Any]:
        row = run_store.get(run_id)
        if row is None:
            raise not_found_run(run_id)
        if row.status == "queued" and cancel_queued(manager, run_id):
            return {"run_id": run_id, "status": "cancelled"}
        try:
            status = await manager.cancel(run_id)
        except RunStateError as exc:
            raise HTTPException(409, str(exc)) from None
        return {"run_id": run_id, "status": status}

    @app.post(
        "/runs/{run_id}/resume",
        responses=responses(200, Run, "The new run that continues it.", 404, 409, 413, 415),
    )
    async def resume(run_id: str) -> Any:
        if run_store.get(run_id) is None:
            raise not_found_run(run_id)
        try:
            live = manager.resume(run_id)
        except (RunStateError, IncompatibleRunError) as exc:  # the latter: see _versions
            raise HTTPException(409, str(exc)) from None
        except CheckpointError as exc:
            return not_recorded(exc)
        row = run_store.get(live.run_id)
        return row.public() if row is not None else {"run_id": live.run_id, "status": "running"}

    install_forks(app, manager)
    install_budgets(app, manager)
    install_console(app, workflows, run_store.get, token, checkpoints=run_store.backend)
    install_openapi(app, workflows, token)
    # Without a token, bodies must be declared JSON and requests addressed to this server:
    # a web page can neither post text/plain to it nor reach it under a rebound DNS name.
    app.add_middleware(JsonBody, require_content_type=not token)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    if token:
        app.add_middleware(BearerAuth, token=token)
    else:
        app.add_middleware(HostGuard, allowed_hosts=tuple(allowed_hosts))
    return app


@contextlib.contextmanager
def _caller_trace(request: Request) -> Iterator[None]:
    """Make the caller's W3C ``traceparent`` the current trace context while a run starts."""
    if "traceparent" not in request.headers:
        yield
        return
    from opentelemetry import context as otel_context
    from opentelemetry import propagate

    token = otel_context.attach(propagate.extract(dict(request.headers)))
    try:
        yield
    finally:
        otel_context.detach(token)


__all__ = ["BackgroundServer", "bind_socket", "create_app", "serve"]
