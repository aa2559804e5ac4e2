"""How events and results look on the wire (JSON for the server, the CLI's ``--json``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from batonflow.core.durable._text import storable
from pydantic import BaseModel
from pydantic_core import to_jsonable_python


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data; what JSON cannot hold becomes its ``repr``."""
    return to_jsonable_python(value, fallback=repr, serialize_unknown=False)


def rfc3339(seconds: float) -> str:
    """``seconds`` since the epoch as an RFC 3339 time in UTC: ``2026-12-02T01:45:02.123456Z``."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def event_envelope(event: Any) -> dict[str, Any]:
    """One event as ``{"type", "qualified_name", "value"}``.

    ``value`` holds the event's declared and extra fields; private attributes stay private.
    """
    cls = type(event)
    if isinstance(event, BaseModel):
        fields: Any = {name: getattr(event, name) for name in type(event).model_fields}
        fields.update(event.__pydantic_extra__ or {})
    else:
        fields = {"repr": repr(event)}
    return {
        "type": cls.__name__,
        "qualified_name": f"{cls.__module__}.{cls.__qualname__}",
        "value": jsonable(fields),
    }


def error_text(error: BaseException) -> str:
    """A one-line description of an error: ``TypeName: message``.

    A NUL character or a lone surrogate in the message (a step's error quoting its input) is
    written as an escape, so every store can record the error.
    """
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return storable(f"{type(error).__name__}: {message}" if message else type(error).__name__)
