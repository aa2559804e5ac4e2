"""Forks over HTTP: continue any checkpoint of a run as a new run, and the runs' lineage.

:func:`install_forks` adds to a server app (durable servers: forks need checkpoints):

=======================================  ==================================================
``POST /runs/{id}/fork``                 ``{"at": seq, "state": {...}, "event": {"type",
                                         "data"}}`` (all optional) starts a new run from
                                         that checkpoint: ``201`` with the new run
``GET /runs/{id}/checkpoints/{seq}``     the state at that checkpoint (what a fork starts
                                         from, before ``state`` changes it)
``GET /runs/{id}/lineage``               the run's parent (and fork point) and its forks
``GET /runs/{id}/journal``               its journaled calls (:mod:`._journal_routes`)
``GET /workflows/{name}/check``          the runs in flight this code cannot continue
                                         (:mod:`._version_routes`)
=======================================  ==================================================

The steps route of the console (``GET /runs/{id}/steps``) names each step's ``checkpoint``
through :func:`checkpoint_steps` and :func:`with_times`: forking at it continues after that step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse

from ._wire import jsonable, rfc3339
from .api_models import Run, responses


def checkpoint_steps(checkpoints: Callable[[str], list[Any]], run_id: str) -> list[Any]:
    """The checkpoints of ``run_id`` that a completed step wrote, in order."""
    return [c for c in checkpoints(run_id) if c.step_name is not None]


def class_name(type_name: str | None) -> str:
    """``Drafted`` of a checkpoint's ``"module:Drafted"`` (as a live record names events)."""
    return (type_name or "").rpartition(":")[2].rpartition(".")[2]


def with_times(stored: list[Any], kept: list[Any]) -> list[dict[str, Any]]:
    """One entry per step checkpoint, with the times of the steps this process saw run.

    The steps a process records (``kept``, since it started or resumed the run) are the last
    ones the run checkpointed, in the same order: both are written at each step boundary.
    """
    recent = kept[-len(stored) :]
    times: list[Any] = [None] * (len(stored) - len(recent)) + recent
    entries = []
    for checkpoint, seen in zip(stored, times, strict=True):
        started = seen.started_at if seen is not None else None
        finished = seen.finished_at if seen is not None else checkpoint.created_at
        entries.append(
            {
                "step": checkpoint.step_name,
                "input_event": class_name(checkpoint.input_event_type),
                "output_events": [class_name(t) for t in checkpoint.output_event_types],
                "started_at": None if started is None else rfc3339(started),
                "finished_at": rfc3339(finished),
                "started": started,
                "finished": finished,
                "duration": None if started is None else finished - started,
                "checkpoint": checkpoint.seq,
            }
        )
    return entries


def _problem(detail: str, loc: str) -> JSONResponse:
    return JSONResponse(
        {
            "detail": detail,
            "errors": [{"loc": ["body", loc], "msg": detail, "type": "value_error"}],
        },
        status_code=422,
    )


def _event(workflow: Any, body: Any) -> Any:
    """The event a fork's body names (``{"type", "data"}``), one its workflow's steps accept.

    Raises:
        ValueError: No such event type, or fields it does not take.
    """
    from pydantic import ValidationError

    from ._introspect import _shapes

    accepted = {ev.__name__: ev for shape in _shapes(workflow) for ev in shape.accepts}
    if not isinstance(body, dict) or body.get("type") not in accepted:
        raise ValueError(
            f'\'event\' must be {{"type": ..., "data": {{...}}}} with a type the workflow\'s '
            f"steps accept: one of {', '.join(sorted(accepted))}."
        )
    try:
        return accepted[body["type"]].model_validate(body.get("data") or {})
    except ValidationError as exc:
        raise ValueError(f"'event' {body['type']} does not take that data: {exc}") from None


def install_forks(app: FastAPI, manager: Any) -> None:
    """Add the fork, checkpoint-state, lineage and journal routes to ``app`` for ``manager``."""
    from ._journal_routes import install_journal
    from ._version_routes import install_versions

    install_journal(app, manager)  # GET /runs/{id}/journal: a durable run's calls too
    install_versions(app, manager)  # GET /workflows/{name}/check: what this code cannot continue
    store = manager.records

    def known(run_id: str) -> Any:
        row = manager.store.get(run_id)
        if row is None:
            raise HTTPException(
                404, f"Run {run_id!r} does not exist; GET /runs lists the known runs."
            )
        return row

    def checkpointer_of(row: Any) -> Any:
        checkpointer = manager.checkpointers.get(row.workflow)
        if checkpointer is None or not manager.durable:
            raise HTTPException(
                409,
                f"Run {row.run_id!r} cannot be forked here: its workflow {row.workflow!r} must "
                "be served with checkpoints on (batonflow serve --durable, the default).",
            )
        return checkpointer

    @app.post(
        "/runs/{run_id}/fork",
        status_code=201,
        responses=responses(
            201, Run, "The new run, continuing from the checkpoint.", 404, 409, 422
        ),
    )
    async def fork(run_id: str, request: Request) -> Any:
        row = known(run_id)
        checkpointer = checkpointer_of(row)
        body = await request.json() if await request.body() else {}
        if not isinstance(body, dict):
            return _problem('Send a JSON object: {"at": seq, "state": {...}}.', "at")
        at, state = body.get("at"), body.get("state") or {}
        seqs = [c.seq for c in store.list(run_id)]
        if at is not None and (isinstance(at, bool) or at not in seqs):
            return _problem(
                f"Run {run_id!r} has no checkpoint {at!r}; its checkpoints are "
                f"{', '.join(map(str, seqs)) or 'none'} (each step of GET /runs/{{id}}/steps "
                "names its own).",
                "at",
            )
        if not isinstance(state, dict):
            return _problem("'state' must be an object of paths and values.", "state")
        try:
            event = (
                _event(manager.workflows[row.workflow], body["event"]) if "event" in body else None
            )
        except ValueError as exc:
            return _problem(str(exc), "event")
        from batonflow.core.errors import CheckpointError, StateError

        from ._runs import LiveRun

        try:
            handler = checkpointer.fork(run_id, at, state=state, event=event)
        except StateError as exc:
            return _problem(f"'state' does not fit the run's state: {exc}", "state")
        except CheckpointError as exc:
            raise HTTPException(409, str(exc)) from None
        name = row.workflow
        live = manager._follow(LiveRun(str(handler.run_id), name, manager.workflows[name], handler))
        new = manager.store.get(live.run_id)
        return JSONResponse(new.public(), status_code=201)

    @app.get(
        "/runs/{run_id}/checkpoints/{seq}",
        summary="A run's state at one checkpoint",
        responses=responses(200, None, "The step that wrote it and the state then.", 404, 409),
    )
    async def checkpoint_state(run_id: str, seq: int) -> dict[str, Any]:
        row = known(run_id)
        checkpointer = checkpointer_of(row)
        found = next((c for c in store.list(run_id) if c.seq == seq), None)
        if found is None:
            raise HTTPException(404, f"Run {run_id!r} has no checkpoint {seq}.")
        from batonflow.core import Context

        ctx = Context.from_dict(
            checkpointer.workflow, dict(found.ctx_data), serializer=checkpointer.serializer
        )
        state = await ctx.store.get_state()
        return {"run_id": run_id, "seq": seq, "step": found.step_name, "state": jsonable(state)}

    @app.get(
        "/runs/{run_id}/lineage",
        summary="A run's parent, forks and child runs",
        responses=responses(
            200, None, "Its parent (fork point or step) and its forks and child runs.", 404
        ),
    )
    async def lineage(run_id: str) -> dict[str, Any]:
        row = known(run_id)
        children = getattr(store, "children", None)
        forks = children(run_id) if children is not None else []
        parent = (
            {
                "run_id": row.parent_run_id,
                "seq": row.parent_seq,
                "step": row.parent_step,
                "kind": row.parent_kind or "fork",  # a fork recorded before kinds
            }
            if row.parent_run_id is not None
            else None
        )
        return {
            "run_id": run_id,
            "parent": parent,
            "children": [
                {
                    "run_id": r.run_id,
                    "seq": r.parent_seq,
                    "status": r.status,
                    "step": r.parent_step,
                    "kind": r.parent_kind or "fork",
                    "workflow": r.workflow_name,
                }
                for r in forks
            ],
        }


__all__ = ["checkpoint_steps", "class_name", "install_forks", "with_times"]
