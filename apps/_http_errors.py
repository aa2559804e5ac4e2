"""The server's error answers: what it says when it cannot do what a request asks.

A name it does not know is a 404 that says where the known ones are listed; a body that is not
a JSON object a 422 that shows what to send; a run or event the store could not record is a
422 (the input cannot be encoded), 507 (the store is full), 503 (the store refused it, or its
server cannot be reached now: with ``Retry-After``), and nothing was started or sent. Anything
unexpected is a 500 whose body gives the id under which the server log has the details.
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from typing import Any

from batonflow.core.errors import SerializationError, StoreUnreachableError
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse

logger = logging.getLogger("batonflow.apps.server")


def not_found_workflow(name: str, served: dict[str, Any]) -> HTTPException:
    """The 404 of a workflow that is not served, listing those that are."""
    return HTTPException(
        404,
        f"Workflow {name!r} is not served here; served: {', '.join(sorted(served)) or 'none'} "
        "(GET /workflows lists them).",
    )


def not_found_run(run_id: str) -> HTTPException:
    """The 404 of a run the store does not know."""
    return HTTPException(404, f"Run {run_id!r} does not exist; GET /runs lists the known runs.")


async def json_object(request: Request, what: str) -> dict[str, Any]:
    """The request's body as a JSON object (``{}`` when empty); a 422 asking for ``what``."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        raise HTTPException(422, f"The request body is not valid JSON; send {what}.") from None
    if not isinstance(data, dict):
        raise HTTPException(422, f"The request body must be a JSON object: {what}.")
    return data


def not_recorded(exc: Exception) -> JSONResponse:
    """The answer when the store could not record a run or an event: nothing was started."""
    from batonflow.core.errors import StoreFullError

    if isinstance(exc, SerializationError):
        code = 422
        detail = f"The input cannot be recorded, so nothing ran: {exc}"
    elif isinstance(exc, StoreFullError):
        code = 507
        detail = f"The run store is full, so nothing was recorded or run: {exc}"
    elif isinstance(exc, StoreUnreachableError):
        # Retry-After: when the store tries its server again (at least 1 s, a whole number).
        wait = exc.retry_after if exc.retry_after is not None else 5.0
        return JSONResponse(
            {"detail": f"The run store cannot be reached now: {exc}", "cause": type(exc).__name__},
            status_code=503,
            headers={"Retry-After": str(max(1, math.ceil(wait)))},
        )
    else:
        code = 503
        detail = f"The run store refused the write, so nothing was recorded or run: {exc}"
    return JSONResponse({"detail": detail, "cause": type(exc).__name__}, status_code=code)


def install_error_handlers(app: FastAPI) -> None:
    """Answer an unexpected error with a 500 naming its log entry, and a store that cannot be
    reached with a 503 (:func:`not_recorded`)."""

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        error_id = uuid.uuid4().hex[:12]
        logger.error(
            "Unhandled error %s on %s %s",
            error_id,
            request.method,
            request.url.path,
            exc_info=exc,
        )
        return JSONResponse(
            {
                "detail": "Internal server error; the server log has the details under error "
                f"id {error_id}.",
                "error_id": error_id,
            },
            status_code=500,
        )

    @app.exception_handler(StoreUnreachableError)
    async def _unreachable(request: Request, exc: StoreUnreachableError) -> JSONResponse:
        # The database restarts or the network broke: the request may be made again soon.
        return not_recorded(exc)


__all__ = [
    "install_error_handlers",
    "json_object",
    "not_found_run",
    "not_found_workflow",
    "not_recorded",
]
