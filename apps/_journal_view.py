"""One journaled call (``ctx.journal``) as the API and ``batonflow runs journal`` show it.

Apart from the route and the command so each loads without the other's extra (FastAPI,
typer).
"""

from __future__ import annotations

import json
from typing import Any

from ._wire import jsonable


def entry_json(entry: Any, serializer: Any) -> dict[str, Any]:
    """One journaled call as the API and ``batonflow runs journal`` show it."""
    try:
        value = serializer.deserialize(entry.body) if serializer is not None else None
        shown = f"{type(value).__name__}: {value}" if entry.error else jsonable(value)
    except Exception:  # a value this process cannot rebuild: its recorded text
        shown = json.loads(entry.body) if entry.body[:1] in '{["' else entry.body
    return {
        "step": entry.step,
        "execution": entry.execution,
        "call": entry.call,
        "name": entry.name,
        "attempt": entry.attempt,
        "error": entry.error,
        "value": shown,
        "created_at": entry.created_at,
    }


__all__ = ["entry_json"]
