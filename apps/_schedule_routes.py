"""The HTTP API of schedules: ``GET|POST /schedules``, ``DELETE /schedules/{name}``.

:func:`install_schedules` adds the routes and returns the
:class:`~batonflow.apps.schedules.Scheduler` whose loop the server's lifespan runs
(:func:`firing`) (see :mod:`batonflow.apps.schedules` for how firings
work).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from batonflow.core.durable._schedules import ScheduleExistsError, ScheduleStore
from batonflow.core.errors import DuplicateStartError
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse

from .api_models import Schedule, ScheduleList, responses
from .schedules import ScheduleError, Scheduler, check_schedule, schedule_json


def _not_found(name: str) -> HTTPException:
    return HTTPException(
        404, f"Schedule {name!r} does not exist; GET /schedules lists the schedules."
    )


def install_schedules(app: FastAPI, manager: Any, *, poll: float) -> Scheduler | None:
    """Add the schedule routes to ``app``; the scheduler, or ``None`` when the run store keeps
    no schedules (the routes then answer 404 with why)."""
    store = manager.records
    workflows = manager.workflows
    scheduler = None
    if isinstance(store, ScheduleStore):

        async def start(name: str, event: Any, fields: dict[str, Any], key: str) -> str:
            try:
                if manager.queue is not None and manager.queue.applies(name):
                    # A limited workflow's firing waits in its queue like any start.
                    return str(await manager.queue.enqueue(name, event, fields, None, key, {}, 0))
                return str((await manager.start(name, event, fields, None, key)).run_id)
            except DuplicateStartError as exc:  # the firing's run was started already
                return str(exc.run_id)

        scheduler = Scheduler(store, workflows, start, poll=poll)

    def schedules() -> ScheduleStore:
        if scheduler is None:
            raise HTTPException(
                404,
                f"This server's run store ({type(store).__name__}) keeps no schedules; serve "
                "with a SQLite file or a PostgreSQL URL (--db).",
            )
        return scheduler.store

    @app.get("/schedules", responses=responses(200, ScheduleList, "The schedules, by name.", 404))
    async def list_schedules() -> dict[str, Any]:
        return {"schedules": [schedule_json(s) for s in schedules().schedules()]}

    @app.post(
        "/schedules",
        status_code=201,
        responses=responses(201, Schedule, "The schedule was stored.", 404, 409, 413, 415, 422),
    )
    async def add_schedule(request: Request) -> JSONResponse:
        store = schedules()
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise HTTPException(
                422,
                'Send a JSON object: {"name": "nightly", "cron": "0 3 * * *", "workflow": '
                '"report", "fields": {}, "missed": "skip"}.',
            )
        fields = body.get("fields") or {}
        text = {k: body.get(k) for k in ("name", "cron", "workflow")}
        missing = [k for k, v in text.items() if not isinstance(v, str)]
        if missing or not isinstance(fields, dict):
            what = ", ".join(missing) if missing else "fields (an object)"
            raise HTTPException(
                422, f"The schedule needs {what}; send name, cron and workflow as text."
            )
        try:
            record = check_schedule(
                workflows,
                name=text["name"],  # type: ignore[arg-type]
                workflow=text["workflow"],  # type: ignore[arg-type]
                cron=text["cron"],  # type: ignore[arg-type]
                fields=fields,
                missed=str(body.get("missed") or "skip"),
            )
            store.add_schedule(record)
        except ScheduleExistsError as exc:
            raise HTTPException(409, str(exc)) from None
        except ScheduleError as exc:
            raise HTTPException(422, str(exc)) from None
        assert scheduler is not None
        scheduler.wake()
        return JSONResponse(schedule_json(record), status_code=201)

    @app.delete(
        "/schedules/{name}", responses=responses(200, Schedule, "The removed schedule.", 404)
    )
    async def remove_schedule(name: str) -> dict[str, Any]:
        store = schedules()
        found = next((s for s in store.schedules() if s.name == name), None)
        if found is None or not store.remove_schedule(name):
            raise _not_found(name)
        return schedule_json(found)

    return scheduler


@contextlib.asynccontextmanager
async def firing(scheduler: Scheduler | None) -> AsyncIterator[None]:
    """Run ``scheduler``'s loop (if any) while the server serves."""
    task = None if scheduler is None else asyncio.create_task(scheduler.run())
    try:
        yield
    finally:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


__all__ = ["firing", "install_schedules"]
