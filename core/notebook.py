"""Workflows, runs and drawings in Jupyter notebooks.

Importing :mod:`batonflow.core` is enough: a workflow left as a cell's last expression shows the
drawing of its flows, a handler shows its run's status and result (and what it ran, once it
ended), and ``draw_*`` functions return drawings that show as drawings. :func:`watch` streams a
run's events into one cell that updates as they come::

    handler = MyFlow().run(topic="tea")
    result = await watch(handler)

Nothing here imports IPython until a notebook asks for it; outside one, :func:`watch` prints one
line per event instead.
"""

from __future__ import annotations

import html
import importlib
import time
from typing import Any

from .data.events import Event, StopEvent
from .diagram._html import render_page
from .diagram._inline import Drawing, MermaidText, iframe
from .diagram.drawing import recent_execution
from .diagram.representation import get_workflow_representation
from .engine import _display
from .engine.handler import WorkflowHandler
from .engine.workflow import Workflow

#: How often :func:`watch` redraws its cell at most, in seconds (a token stream sends hundreds
#: of events a second; a notebook front end cannot draw that many updates).
REDRAW_EVERY = 0.1
#: The last events :func:`watch` keeps in view.
KEEP_LINES = 200


def workflow_bundle(workflow: Workflow) -> dict[str, Any]:
    """A workflow's MIME bundle: the drawing of every flow it allows."""
    page = render_page(get_workflow_representation(workflow), title="All possible flows")
    return {"text/html": iframe(page), "text/plain": repr(workflow)}


def handler_bundle(handler: WorkflowHandler) -> dict[str, Any]:
    """A run's MIME bundle: its id, status and result or error, and what it ran once ended."""
    status = handler._run.status.value
    rows = [("run", handler.run_id), ("workflow", handler.workflow.workflow_name)]
    rows.append(("status", status))
    drawing = ""
    if handler.done():
        if handler.cancelled():
            rows.append(("result", "cancelled"))
        elif handler.exception() is not None:
            error = handler.exception()
            rows.append(("error", f"{type(error).__name__}: {error}"))
        else:
            rows.append(("result", _short(handler.result(), 500)))
        graph, runs = recent_execution(handler)
        page = render_page(graph, title="Most recent execution", runs=runs)
        drawing = f"<details><summary>what it ran</summary>{iframe(page)}</details>"
    table = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
        f"<td style='text-align:left'><code>{html.escape(str(v))}</code></td></tr>"
        for k, v in rows
    )
    return {"text/html": f"<table>{table}</table>{drawing}", "text/plain": repr(handler)}


def describe(event: Event) -> str:
    """One line for an event: its type and its fields, shortened."""
    fields = event.model_dump() if hasattr(event, "model_dump") else {}
    shown = ", ".join(f"{k}={_short(v, 80)}" for k, v in fields.items())
    return f"{type(event).__name__}({shown})"


async def watch(handler: WorkflowHandler, *, expose_internal: bool = False) -> Any:
    """Stream a run's events into one notebook cell that updates in place; return its result.

    The cell lists the events as they come (the last :data:`KEEP_LINES`), then the result or
    the error. Outside a notebook (no IPython), each event is printed as a line.

    Args:
        handler: what ``Workflow.run()`` returned.
        expose_internal: also list the engine's own events (steps starting and finishing).

    Raises:
        Whatever ``await handler`` raises: the run's error is shown in the cell, then raised.
    """
    if not isinstance(handler, WorkflowHandler):
        raise TypeError(
            f"watch() takes the handler Workflow.run() returns, got {type(handler).__name__}; "
            "call it as `await watch(workflow.run(...))`."
        )
    cell = _Cell()
    async for event in handler.stream_events(expose_internal=expose_internal):
        if isinstance(event, StopEvent):
            continue
        cell.add(describe(event))
    try:
        result = await handler
    except BaseException as exc:
        cell.finish(f"error: {type(exc).__name__}: {exc}")
        raise
    cell.finish(f"result: {_short(result, 500)}")
    return result


class _Cell:
    """The lines of :func:`watch`, in one display that updates (or printed, with no IPython)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0
        self.drawn_at = 0.0
        try:
            self.display: Any = importlib.import_module("IPython.display")
        except ImportError:  # not in a notebook: print instead
            self.display = None
        self.handle = None
        if self.display is not None:
            self.handle = self.display.display(self._html("running…"), display_id=True)

    def add(self, line: str) -> None:
        self.count += 1
        if self.handle is None:
            print(line)
            return
        self.lines.append(line)
        del self.lines[:-KEEP_LINES]
        now = time.monotonic()
        if now - self.drawn_at >= REDRAW_EVERY:
            self.drawn_at = now
            self.handle.update(self._html("running…"))

    def finish(self, last: str) -> None:
        if self.handle is None:
            print(last)
            return
        self.handle.update(self._html(last))

    def _html(self, footer: str) -> Any:
        hidden = self.count - len(self.lines)
        head = f"… {hidden} earlier event(s)\n" if hidden else ""
        body = html.escape(head + "\n".join(self.lines))
        text = f"<pre style='max-height:24em;overflow:auto'>{body}</pre>"
        return self.display.HTML(text + f"<p><b>{html.escape(footer)}</b></p>")


def _short(value: Any, limit: int) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit - 1] + "…"


_display.register("workflow", workflow_bundle)
_display.register("handler", handler_bundle)

__all__ = [
    "Drawing",
    "MermaidText",
    "describe",
    "handler_bundle",
    "watch",
    "workflow_bundle",
]
