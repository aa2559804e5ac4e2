"""Rich display in notebooks, as the engine's objects ask for it.

``Workflow`` and ``WorkflowHandler`` have ``_repr_mimebundle_`` (what Jupyter calls to show an
object); what they show is drawn by the ``diagram`` room, which sits above the engine. So the
engine keeps only this registry, and the public package registers the renderers
(``batonflow.core.notebook``): the engine never imports the drawing code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: A renderer gives an object's MIME bundle (``{"text/html": ..., "text/plain": ...}``).
Renderer = Callable[[Any], dict[str, Any]]

_renderers: dict[str, Renderer] = {}


def register(kind: str, renderer: Renderer) -> None:
    """Use ``renderer`` to display objects of ``kind`` (``"workflow"`` or ``"handler"``)."""
    _renderers[kind] = renderer


def bundle(kind: str, obj: Any) -> dict[str, Any] | None:
    """The MIME bundle of ``obj``, or ``None`` (Jupyter then shows its plain ``repr``)."""
    renderer = _renderers.get(kind)
    return renderer(obj) if renderer is not None else None
