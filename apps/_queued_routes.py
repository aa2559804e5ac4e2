"""``POST /workflows/{name}/runs`` of a workflow with limits: the run is queued, or refused.

The run is recorded ``queued`` (``202``, its record with ``queue``: its position and the limit
it waits on) and a replica starts it when the limits let it. A full queue (``max_queued``)
answers ``429 Too Many Requests`` with ``Retry-After`` and records nothing; batonflow's client
waits that long and sends the start again (with the same ``Idempotency-Key``). A start whose
``Idempotency-Key`` started a run already gets that run (``200``), queued or not.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from ._http_errors import not_recorded
from ._idempotent import key_refused, started_already
from ._queue import queue_place

#: How often ``wait=true`` looks at a queued run's record (it may run on another replica).
_WAIT_POLL = 0.1


def queue_full(exc: Any) -> JSONResponse:
    """The ``429`` of a full queue: nothing recorded; ``Retry-After`` in whole seconds (the
    limits' estimate, :meth:`~batonflow.core.durable._queue.RunLimits.admission_wait`)."""
    wait = exc.retry_after if exc.retry_after is not None else 1.0
    return JSONResponse(
        {"detail": str(exc), "cause": type(exc).__name__},
        status_code=429,
        headers={"Retry-After": str(max(1, math.ceil(wait)))},
    )


async def start_queued(
    manager: Any,
    name: str,
    start_event: Any,
    fields: dict[str, Any],
    request: Request,
    key: str | None,
    priority: int,
    wait: bool,
    timeout: float | None,
) -> JSONResponse:
    """Queue a run of ``name`` and answer as ``POST /workflows/{name}/runs`` does."""
    from batonflow.core.errors import (
        CheckpointError,
        DuplicateStartError,
        IdempotencyKeyError,
        QueueFullError,
        SerializationError,
    )

    queue = manager.queue
    try:
        run_id = await queue.enqueue(
            name,
            start_event,
            fields,
            request.headers.get("traceparent"),
            key,
            request.headers,
            priority,
        )
    except QueueFullError as exc:
        if exc.retry_after is None:
            exc.retry_after = queue.limits[name].admission_wait()
        return queue_full(exc)
    except DuplicateStartError as exc:
        return await started_already(manager, exc.run_id, wait, timeout)
    except (ValueError, IdempotencyKeyError) as exc:
        return key_refused(exc)
    except (SerializationError, CheckpointError) as exc:
        return not_recorded(exc)
    ended = ("completed", "failed", "cancelled")
    if wait:
        deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
        while True:
            row = await manager.store.aget(run_id)
            if row is not None and row.status in ended:
                return JSONResponse(row.public(), status_code=200)
            if deadline is not None and asyncio.get_running_loop().time() >= deadline:
                break
            await asyncio.sleep(_WAIT_POLL)
    row = await manager.store.aget(run_id)
    if row is None:
        return JSONResponse({"run_id": run_id, "status": "queued"}, status_code=202)
    body = row.public()
    body["queue"] = queue_place(manager, row)
    return JSONResponse(body, status_code=202)


__all__ = ["queue_full", "start_queued"]
