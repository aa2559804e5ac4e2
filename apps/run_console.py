"""The run console: a page for people at ``/``, API docs at ``/docs`` and ``/redoc``.

:func:`install_console` adds to a server app:

=======================================  ==================================================
``GET /``                                the run console (``apps/console/``: one page, its
                                         scripts and stylesheet, nothing fetched elsewhere)
``GET /docs``, ``GET /redoc``            Swagger UI and ReDoc on ``/openapi.json``
``GET /assets/{name}``                   the files of those pages
``GET /workflows/{name}/drawing``        all possible flows, as the engine draws them (HTML)
``GET /runs/{id}/drawing``               the steps the run took, highlighted in that drawing
``GET /runs/{id}/steps``                 the run's completed steps with their times
``GET /runs/{id}/state``                 the run's state store
=======================================  ==================================================

The pages and assets need no token (they hold no data; a browser cannot send a bearer header
when it opens a page). Everything they show comes from the API with the token the page asks
for and keeps in ``sessionStorage``.

Swagger UI and ReDoc come from the ``fastapi-offline`` package, which ships their files (MIT;
Swagger UI is Apache-2.0, ReDoc MIT): the docs work without a network, unlike FastAPI's
default pages, which load them from a CDN.

What a run did is recorded by a step listener on every served workflow (one small record per
completed step, for the most recent :data:`KEPT_RUNS` runs of this process). A run from before
a restart has its status, events and result in the run store, but not its steps: its drawing
and steps are a 404 that says so (a resumed run shows the steps since it resumed).
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

from ._wire import jsonable
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
    "chat.js",
    "schedules.js",
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
    started_at: float
    finished_at: float

    def public(self) -> dict[str, Any]:
        """The record as ``GET /runs/{id}/steps`` shows it."""
        return {
            "step": self.step,
            "input_event": self.input_event,
            "output_events": list(self.output_events),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "duration": self.finished_at - self.started_at,
        }


@dataclass(eq=False)
class _RunRecord:
    workflow: Any
    ctx: Any = None
    steps: list[StepRecord] = field(default_factory=list)
    dropped: int = 0


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
) -> RunSteps:
    """Add the console, the API docs and the drawing/steps/state routes to ``app``.

    Args:
        app: The server app (made with ``docs_url=None, redoc_url=None``).
        workflows: The served workflows by name; their steps are recorded from now on.
        get_run: Looks a run up in the run store by id (``None`` when unknown).
        token: The server's bearer token, if any: the pages then ask for it.

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
        known_run(run_id)
        record = steps.get(run_id)
        if record is None:
            raise HTTPException(
                404,
                f"This server has no record of the steps of run {run_id!r}: it ran before the "
                "server started, or is older than the last "
                f"{steps.kept_runs} runs. Its events are in GET /runs/{run_id}/events.",
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
        record = recorded(run_id)
        return {
            "run_id": run_id,
            "steps": [s.public() for s in record.steps],
            "not_kept": record.dropped,
        }

    @app.get(
        "/runs/{run_id}/state",
        summary="A run's state store",
        responses=responses(200, None, "The run's state as JSON.", 404),
    )
    async def run_state(run_id: str) -> dict[str, Any]:
        record = recorded(run_id)
        if record.ctx is None:  # pragma: no cover - a record starts with a step's context
            raise HTTPException(404, f"Run {run_id!r} has no state yet.")
        state = await record.ctx.store.get_state()
        return {"run_id": run_id, "state": jsonable(state)}

    return steps


__all__ = ["KEPT_RUNS", "KEPT_STEPS", "RunSteps", "StepRecord", "install_console"]
