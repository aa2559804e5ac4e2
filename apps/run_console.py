"""The run console: a page for people at ``/``, API docs at ``/docs`` and ``/redoc``.

:func:`install_console` adds to a server app:

=======================================  ==================================================
``GET /``                                the run console (``apps/console/``: one page, its
                                         scripts and stylesheet, nothing fetched elsewhere)
``GET /docs``, ``GET /redoc``            Swagger UI and ReDoc on ``/openapi.json``
``GET /assets/{name}``                   the files of those pages
``GET /workflows/{name}/drawing``        all possible flows, as the engine draws them (HTML)
``GET /runs/{id}/drawing``               the steps the run took, highlighted in that drawing
``GET /runs/{id}/steps``                 the run's completed steps with their times and
                                         checkpoints (``checkpoint``: the seq to fork at)
``GET /runs/{id}/state``                 the run's state store
=======================================  ==================================================

The pages and assets need no token (they hold no data; a browser cannot send a bearer header
when it opens a page). Everything they show comes from the API with the token the page asks
for and keeps in ``sessionStorage``.

Swagger UI and ReDoc come from the ``fastapi-offline`` package, which ships their files (MIT;
Swagger UI is Apache-2.0, ReDoc MIT): the docs work without a network, unlike FastAPI's
default pages, which load them from a CDN.

What a run did is recorded by a step listener on every served workflow (one small record per
completed step, for the most recent :data:`KEPT_RUNS` runs of this process). A run this process
did not see (it ran before a restart, or is older than those) is read from its checkpoints in
the run store: one per completed step, and the state as of the last one; their steps have no
start time, so no duration. A run with neither (a server without checkpoints) has a drawing,
steps and state that are a 404 saying so (a resumed run shows the steps since it resumed).
"""

from __future__ import annotations

import functools
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

from fastapi import FastAPI, HTTPException
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from ._forks import checkpoint_steps, class_name, with_times
from ._wire import jsonable, rfc3339
from .api_models import responses

logger = logging.getLogger("batonflow.apps.server")

#: How many runs' steps a server keeps in memory (the oldest are forgotten first).
KEPT_RUNS = 500
#: How many steps of one run are kept; a longer run's drawing counts only these.
KEPT_STEPS = 10_000

_MEDIA = {".js": "text/javascript", ".css": "text/css", ".png": "image/png", ".html": "text/html"}
#: The files the pages may load, by the name they are served under (the console's script is
#: split by concept: index.html loads them in this order).
_OWN_ASSETS = (
    "dom.js",
    "api.js",
    "forms.js",
    "answer.js",
    "fork.js",
    "restarts.js",
    "chat.js",
    "schedules.js",
    "queue.js",
    "budget.js",
    "console.js",
    "console.css",
    "api-docs.js",
)
_OFFLINE_ASSETS = ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png")


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One completed step execution of a run."""

    step: str
    input_event: str
    output_events: tuple[str, ...]
    started_at: float | None  # None when read from a checkpoint, which records only the end
    finished_at: float

    def public(self) -> dict[str, Any]:
        """The record as ``GET /runs/{id}/steps`` shows it."""
        started = self.started_at
        return {
            "step": self.step,
            "input_event": self.input_event,
            "output_events": list(self.output_events),
            "started_at": None if started is None else rfc3339(started),
            "finished_at": rfc3339(self.finished_at),
            "started": started,
            "finished": self.finished_at,
            "duration": None if started is None else self.finished_at - started,
        }


@dataclass(eq=False)
class _RunRecord:
    workflow: Any
    ctx: Any = None
    steps: list[StepRecord] = field(default_factory=list)
    dropped: int = 0
    #: The checkpoint the state is read from, for a run read back from the run store.
    checkpoint: Any = None


def stored_record(workflow: Any, checkpoints: list[Any]) -> _RunRecord | None:
    """The record of a run read from its checkpoints, or ``None`` when it has none of a step."""
    done = [c for c in checkpoints if c.step_name]
    if not done:
        return None
    steps = [
        StepRecord(
            c.step_name,
            class_name(c.input_event_type),
            tuple(class_name(t) for t in c.output_event_types),
            None,
            c.created_at,
        )
        for c in done
    ]
    return _RunRecord(workflow, steps=steps, checkpoint=checkpoints[-1])


class RunSteps:
    """The completed steps of this process's recent runs, by run id (a bounded LRU)."""

    def __init__(self, kept_runs: int = KEPT_RUNS, kept_steps: int = KEPT_STEPS) -> None:
        self.kept_runs = kept_runs
        self.kept_steps = kept_steps
        self._runs: OrderedDict[str, _RunRecord] = OrderedDict()

    def watch(self, workflow: Any) -> None:
        """Record the steps of every run of ``workflow`` from now on."""

        def listener(boundary: Any) -> None:
            # A step listener that raises fails the run: recording must never do that.
            try:
                self._record(workflow, boundary)
            except Exception:  # pragma: no cover - defensive
                logger.exception("The console could not record a step of run %s", boundary.run_id)

        workflow.add_step_listener(listener)

    def _record(self, workflow: Any, boundary: Any) -> None:
        record = self._runs.get(boundary.run_id)
        if record is None:
            record = self._runs[boundary.run_id] = _RunRecord(workflow)
            while len(self._runs) > self.kept_runs:
                self._runs.popitem(last=False)
        record.ctx = boundary.ctx
        if len(record.steps) >= self.kept_steps:
            record.dropped += 1
            return
        record.steps.append(
            StepRecord(
                boundary.step_name,
                type(boundary.input_event).__name__,
                tuple(type(ev).__name__ for ev in boundary.output_events),
                boundary.started_at,
                boundary.finished_at,
            )
        )

    def get(self, run_id: str) -> _RunRecord | None:
        """The record of ``run_id``, or ``None`` when this process has not seen it run."""
        return self._runs.get(run_id)


def _restored(workflow: Any, checkpoint: Any) -> Any:
    """The context of ``checkpoint`` (for its state), or a 404 when it cannot be read back."""
    from batonflow.core import Context, ContextSerdeError, JsonSerializer

    serializer = workflow.serializer or JsonSerializer()
    try:
        return Context.from_dict(workflow, checkpoint.ctx_data, serializer=serializer)
    except ContextSerdeError as exc:
        raise HTTPException(
            404, f"The state of run {checkpoint.run_id!r} cannot be read back: {exc}"
        ) from None


#: URLs inside the packaged files that would still reach the internet, and what replaces them.
_STAY_HOME = {
    # ReDoc's "API docs by Redocly" footer logo (an empty picture instead).
    b"https://cdn.redoc.ly/redoc/logo-mini.svg": b"data:image/svg+xml,%3Csvg xmlns=%27http://www.w3.org/2000/svg%27/%3E",
}

#: The console page may load nothing but this server's files and API (drawings are srcdoc).
CONSOLE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; frame-src 'self' about:; connect-src 'self'; base-uri 'none'; "
    "form-action 'self'"
)


@functools.cache
def _asset(name: str) -> tuple[bytes, str]:
    if name in _OWN_ASSETS:
        data = resources.files("batonflow.apps.console").joinpath(name).read_bytes()
    elif name in _OFFLINE_ASSETS:
        data = resources.files("fastapi_offline").joinpath("static", name).read_bytes()
        for far, near in _STAY_HOME.items():
            data = data.replace(far, near)
    else:
        raise HTTPException(
            404, f"There is no asset {name!r}; the pages use: {', '.join(_OWN_ASSETS)}."
        )
    suffix = name[name.rfind(".") :]
    return data, _MEDIA.get(suffix, "application/octet-stream")


def _page(name: str, title: str, token: str | None, csp: str | None = None) -> HTMLResponse:
    text = resources.files("batonflow.apps.console").joinpath(name).read_text("utf-8")
    text = text.replace("{{title}}", _html_escape(title)).replace(
        "{{token}}", "required" if token else "none"
    )
    headers = {"cache-control": "no-cache", "x-content-type-options": "nosniff"}
    if csp:
        headers["content-security-policy"] = csp
    return HTMLResponse(text, headers=headers)


def _html_escape(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def install_console(
    app: FastAPI,
    workflows: dict[str, Any],
    get_run: Callable[[str], Any],
    token: str | None,
    checkpoints: Any = None,
) -> RunSteps:
    """Add the console, the API docs and the drawing/steps/state routes to ``app``.

    Args:
        app: The server app (made with ``docs_url=None, redoc_url=None``).
        workflows: The served workflows by name; their steps are recorded from now on.
        get_run: Looks a run up in the run store by id (``None`` when unknown).
        token: The server's bearer token, if any: the pages then ask for it.
        checkpoints: The run store's checkpoint store: the steps and state of a run this
            process did not see are read from its checkpoints, and each step names the
            checkpoint it wrote (the seq to fork at).

    Returns:
        The :class:`RunSteps` recording the served workflows' runs.
    """
    steps = RunSteps()
    for workflow in workflows.values():
        steps.watch(workflow)
    title = app.title

    def known_run(run_id: str) -> Any:
        row = get_run(run_id)
        if row is None:
            raise HTTPException(
                404, f"Run {run_id!r} does not exist; GET /runs lists the known runs."
            )
        return row

    def recorded(run_id: str) -> _RunRecord:
        row = known_run(run_id)
        record = steps.get(run_id)
        workflow = workflows.get(row.workflow)
        if record is None and checkpoints is not None and workflow is not None:
            record = stored_record(workflow, checkpoints.list(run_id))
        if record is None:
            raise HTTPException(
                404,
                f"This server has no record of the steps of run {run_id!r}: it ran before the "
                "server started, or is older than the last "
                f"{steps.kept_runs} runs, and the run store holds no checkpoint of its steps "
                f"(the server runs without them, or the run took none). Its events are in "
                f"GET /runs/{run_id}/events.",
            )
        return record

    @app.get("/", include_in_schema=False)
    async def console() -> HTMLResponse:
        return _page("index.html", title, token, CONSOLE_CSP)

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return _page("swagger.html", title, token)

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return _page("redoc.html", title, token)

    @app.get("/assets/{name}", include_in_schema=False)
    async def asset(name: str) -> Response:
        data, media_type = _asset(name)
        return Response(data, media_type=media_type, headers={"cache-control": "max-age=3600"})

    html_ok = {"content": {"text/html": {"schema": {"type": "string"}}}}

    @app.get(
        "/workflows/{name}/drawing",
        summary="Draw all possible flows",
        response_class=HTMLResponse,
        responses={
            **responses(200, None, "A self-contained HTML page with an SVG drawing.", 404),
            200: {"description": "A self-contained HTML page with an SVG drawing.", **html_ok},
        },
    )
    async def workflow_drawing(name: str) -> HTMLResponse:
        workflow = workflows.get(name)
        if workflow is None:
            served = ", ".join(sorted(workflows)) or "none"
            raise HTTPException(
                404,
                f"Workflow {name!r} is not served here; served: {served} "
                "(GET /workflows lists them).",
            )
        from batonflow.core.drawing import draw_all_possible_flows

        return HTMLResponse(draw_all_possible_flows(workflow, filename=None))

    @app.get(
        "/runs/{run_id}/drawing",
        summary="Draw the steps a run took",
        response_class=HTMLResponse,
        responses={
            **responses(200, None, "", 404, 422),
            200: {
                "description": "The workflow's drawing with the run's steps highlighted: an "
                "HTML page, or Mermaid text with format=mermaid.",
                "content": {
                    "text/html": {"schema": {"type": "string"}},
                    "text/vnd.mermaid": {"schema": {"type": "string"}},
                },
            },
        },
    )
    async def run_drawing(run_id: str, format: Literal["html", "mermaid"] = "html") -> Response:
        from batonflow.core.drawing import draw_recorded_execution, to_mermaid
        from batonflow.core.representation import get_workflow_representation

        record = recorded(run_id)
        trace = [(s.step, s.input_event, s.output_events) for s in record.steps]
        if format == "mermaid":
            from batonflow.core.drawing import as_step_runs

            graph = get_workflow_representation(record.workflow)
            text = to_mermaid(graph, as_step_runs(trace))
            return PlainTextResponse(text, media_type="text/vnd.mermaid")
        return HTMLResponse(draw_recorded_execution(record.workflow, trace))

    @app.get(
        "/runs/{run_id}/steps",
        summary="A run's completed steps",
        responses=responses(200, None, "The steps in completion order, with their times.", 404),
    )
    async def run_steps(run_id: str) -> dict[str, Any]:
        known_run(run_id)  # first: an id no store can hold is a 404, not a store error
        stored = checkpoint_steps(checkpoints.list, run_id) if checkpoints is not None else []
        if not stored:
            record = recorded(run_id)
            entries = [{**s.public(), "checkpoint": None} for s in record.steps]
            return {"run_id": run_id, "steps": entries, "not_kept": record.dropped}
        kept = steps.get(run_id)
        return {
            "run_id": run_id,
            "steps": with_times(stored, kept.steps if kept is not None else []),
            "not_kept": 0,
        }

    @app.get(
        "/runs/{run_id}/state",
        summary="A run's state store",
        responses=responses(200, None, "The run's state as JSON.", 404),
    )
    async def run_state(run_id: str) -> dict[str, Any]:
        record = recorded(run_id)
        ctx = record.ctx
        if ctx is None and record.checkpoint is not None:
            ctx = _restored(record.workflow, record.checkpoint)
        if ctx is None:  # pragma: no cover - a record starts with a step's context
            raise HTTPException(404, f"Run {run_id!r} has no state yet.")
        state = await ctx.store.get_state()
        return {"run_id": run_id, "state": jsonable(state)}

    return steps


__all__ = ["KEPT_RUNS", "KEPT_STEPS", "RunSteps", "StepRecord", "install_console"]
