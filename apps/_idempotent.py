"""The server's answers to a start with an ``Idempotency-Key`` that started a run already.

The checkpointer decides (see :mod:`batonflow.core.durable._idempotency`): a key that started
a run gets that run, on any replica sharing the store, for as long as the run is kept; the
server answers it ``200`` with the run (``202`` is a new start's answer) and the header
``Idempotent-Replayed: true``. A key sent with another workflow or other start fields, or a key
that is not 1 to 255 characters of text, gets a ``422`` that says so.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from fastapi import HTTPException
from fastapi.responses import JSONResponse


async def started_already(
    manager: Any, run_id: str, wait: bool, timeout: float | None
) -> JSONResponse:
    """The answer to a start whose key started run ``run_id``: that run, as ``GET`` shows it.

    With ``wait`` it waits, as a new start does, for the run to end when it runs here.
    """
    live = manager.live.get(run_id)
    if wait and live is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(live.done.wait()), timeout)
    row = manager.store.get(run_id)
    if row is None:  # deleted since the look-up: the key is free again
        raise HTTPException(
            status_code=404,
            detail=f"Run {run_id!r} that this Idempotency-Key started was deleted just now; "
            "send the start again.",
        )
    return JSONResponse(row.public(), status_code=200, headers={"Idempotent-Replayed": "true"})


def key_refused(exc: Exception) -> JSONResponse:
    """The ``422`` of a key that is not valid text, or that started another start's run."""
    return JSONResponse(
        {"detail": f"Idempotency-Key: {exc}", "cause": type(exc).__name__}, status_code=422
    )


__all__ = ["key_refused", "started_already"]
