"""A durable run's journaled calls over HTTP: ``GET /runs/{id}/journal``.

Each call a step made with ``ctx.journal`` (see :mod:`batonflow.core.durable._journal`), in the
order they were recorded: the step, its execution and call number, the name, whether it raised,
and its recorded result or exception (decoded, as JSON).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, HTTPException

from ._journal_view import entries_json
from .api_models import responses


def install_journal(app: FastAPI, manager: Any) -> None:
    """Add ``GET /runs/{id}/journal`` to ``app`` for ``manager``'s runs."""

    @app.get(
        "/runs/{run_id}/journal",
        summary="A run's journaled calls",
        responses=responses(200, None, "The calls its steps journaled, in order.", 404),
    )
    async def run_journal(run_id: str) -> dict[str, Any]:
        row = manager.store.get(run_id)
        if row is None:
            raise HTTPException(
                404, f"Run {run_id!r} does not exist; GET /runs lists the known runs."
            )
        read = getattr(manager.records, "journal", None)
        checkpointer = manager.checkpointers.get(row.workflow)
        serializer = checkpointer.serializer if checkpointer is not None else None
        entries = read(run_id) if read is not None else []
        return {"run_id": run_id, "calls": entries_json(entries, serializer)}


__all__ = ["install_journal"]
