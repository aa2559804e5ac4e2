"""One journaled call (``ctx.journal``) as the API and ``batonflow runs journal`` show it.

Apart from the route and the command so each loads without the other's extra (FastAPI,
typer).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from batonflow import _request_deltas

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


def entries_json(entries: Iterable[Any], serializer: Any) -> list[dict[str, Any]]:
    """A run's journaled calls as the API and ``batonflow runs journal`` show them: each agent
    LLM call's request with its whole message list, as it was sent (the journal may keep only
    the messages new since an earlier call: :mod:`batonflow._request_deltas`)."""
    return _request_deltas.expand([entry_json(e, serializer) for e in entries])


__all__ = ["entries_json", "entry_json"]
