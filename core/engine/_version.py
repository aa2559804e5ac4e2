"""A workflow's version: a declared ``version=``, else a hash of the shape its runs depend on.

A durable run records the version of the code that started it (``RunRecord.
workflow_version``). The shape is what a checkpoint names and what decoding it needs: the
steps (by name) with the event types each accepts and returns, the fields of those event types
(name, type, whether required), and the fields of the typed state. A step's body is not in it,
so editing a step keeps the version; renaming a step, changing an event's fields or the state's
does not.

The hash is of a canonical JSON text of that shape (types written as ``module:QualName``, no
object addresses), so it is the same in every process, under every ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import hashlib
import json
import re
import typing
import weakref
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..errors import WorkflowConfigurationError

if TYPE_CHECKING:
    from .graph import Graph
    from .workflow import Workflow

#: Hex digits of the hash kept in a version (64 bits: collisions are not a concern here).
_DIGITS = 16
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
#: Each workflow's hash, with the graph it is of (an instance can gain steps).
_HASHES: weakref.WeakKeyDictionary[Workflow, tuple[Graph, str]] = weakref.WeakKeyDictionary()


def check_declared(version: Any, where: str) -> str | None:
    """``version`` if it is a version one may declare (1 to 255 characters of text).

    Raises:
        WorkflowConfigurationError: Anything else.
    """
    if version is None:
        return None
    if not isinstance(version, str) or not 0 < len(version.strip()) <= 255:
        raise WorkflowConfigurationError(
            f"{where} version={version!r} is not a version; declare 1 to 255 characters of "
            "text (e.g. version='2'), or leave it out to use the hash of the workflow's steps "
            "and events."
        )
    return version


def declared_version(workflow: Workflow) -> str | None:
    """The version ``workflow`` declares (``version=`` or a class attribute), if any."""
    given = getattr(workflow, "_declared_version", None)
    if given is not None:
        return str(given)
    declared = getattr(type(workflow), "version", None)
    return declared if isinstance(declared, str) else None


def version_of(workflow: Workflow) -> str:
    """The version a run of ``workflow`` records: the declared one, else :func:`shape_hash`."""
    declared = declared_version(workflow)
    if declared is not None:
        return declared
    graph = workflow._graph()
    try:
        cached = _HASHES.get(workflow)
    except TypeError:  # a subclass that made its instances unhashable: no cache
        return shape_hash(graph)
    if cached is not None and cached[0] is graph:
        return cached[1]
    version = shape_hash(graph)
    _HASHES[workflow] = (graph, version)
    return version


def shape_hash(graph: Graph) -> str:
    """The hash of :func:`shape` (hex, stable across processes and hash seeds)."""
    text = json.dumps(shape(graph), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_DIGITS]


def shape(graph: Graph) -> dict[str, Any]:
    """The parts of ``graph`` a run's checkpoint depends on, as JSON-compatible data."""
    events: dict[str, Any] = {}
    steps: dict[str, Any] = {}
    for name, spec in graph.steps.items():
        steps[name] = {
            "accepts": sorted(_name(c) for c in spec.accepted),
            "returns": sorted(_name(c) for c in spec.emitted),
        }
        for cls in (*spec.accepted, *spec.emitted):
            events.setdefault(_name(cls), fields(cls))
    state = graph.state_type
    return {"steps": steps, "events": events, "state": None if state is None else fields(state)}


def fields(model: type[BaseModel]) -> dict[str, tuple[str, bool]]:
    """``{field: (type, required)}`` of a pydantic model class."""
    return {
        name: (type_text(info.annotation), info.is_required())
        for name, info in sorted(model.model_fields.items())
    }


def type_text(annotation: Any) -> str:
    """An annotation written the same way in every process (no addresses, no hash order)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return type_text(typing.get_args(annotation)[0])
    if origin is not None:
        args = ", ".join(type_text(a) for a in typing.get_args(annotation))
        return f"{type_text(origin)}[{args}]"
    if isinstance(annotation, type):
        return _name(annotation)
    return _ADDRESS.sub("", repr(annotation))


def _name(cls: Any) -> str:
    return f"{getattr(cls, '__module__', '?')}:{getattr(cls, '__qualname__', repr(cls))}"


__all__ = [
    "check_declared",
    "declared_version",
    "fields",
    "shape",
    "shape_hash",
    "type_text",
    "version_of",
]
