"""A journaled LLM call's messages stored as what is new since an earlier call of its run.

An agent's conversation sends every earlier message again at each LLM call, so a durable run
whose journal kept each call's whole request (:mod:`batonflow.agents.journaled`, for
``batonflow runs export``) would store O(N²) message bytes for N calls. Instead, a journaled LLM
call's value (``{"response", "cassette"}``) gets a ``"ref"`` (a random id naming it), and a
cassette interaction of a later call of the same run whose messages repeat those of an earlier
one keeps, in place of its message list, ``{"base": [ref, i], "runs": [[start, stop], ...],
"new": [...]}``: the messages are the slices ``start:stop`` of the messages of the ``i``-th
interaction of the call named ``ref`` (rebuilt first if it is itself compact), in order, then
``new``. One run (the conversation so far) is the usual case; a system prompt followed by a
window of the conversation (a memory that drops the oldest messages) is two.

Only calls already committed to the journal are referred to (the journal never replaces a call
that returned), so a reference stays valid as long as the run's journal exists.
:func:`expand` puts the full lists back, for every reader of the journal
(``GET /runs/{id}/journal``, ``batonflow runs journal``, ``batonflow runs export``); it leaves
values without a ``"ref"`` (journaled before this format, or by the user's own steps) as they
are. The module imports nothing but the standard library: the server reads journals without
llama-index installed.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

#: The key of a journaled call's value that names it for later calls.
REF_KEY = "ref"
#: The key of a journaled call's value that holds its cassette interactions.
CASSETTE_KEY = "cassette"
#: At most this many earlier calls of a run are offered as bases (agents of a run that take
#: turns each find their own previous call among them).
RECENT = 8
#: A compact message list refers to at most this many slices of its base.
MAX_RUNS = 4

Message = Any
#: One earlier call a later one may refer to: ``(ref, interaction index, its messages)``.
Base = tuple[str, int, list[Message]]


def new_ref() -> str:
    """A fresh id naming one journaled call."""
    return uuid.uuid4().hex


def _slices(messages: Sequence[Message], base: Sequence[Message]) -> tuple[list[list[int]], int]:
    """The slices of ``base`` that ``messages`` starts with, and how many messages they cover."""
    runs: list[list[int]] = []
    done, start = 0, 0
    while done < len(messages) and len(runs) < MAX_RUNS:
        found = next((k for k in range(start, len(base)) if base[k] == messages[done]), None)
        if found is None:
            break
        stop = found
        while stop < len(base) and done < len(messages) and base[stop] == messages[done]:
            stop, done = stop + 1, done + 1
        runs.append([found, stop])
        start = stop
    return runs, done


def compact(messages: list[Message], bases: Sequence[Base]) -> list[Message] | dict[str, Any]:
    """``messages`` as the base among ``bases`` that covers most of them, or as they are."""
    best: tuple[int, Base, list[list[int]]] | None = None
    for base in bases:
        runs, covered = _slices(messages, base[2])
        if covered and (best is None or covered > best[0]):
            best = (covered, base, runs)
    if best is None:
        return messages
    covered, (ref, index, _), runs = best
    return {"base": [ref, index], "runs": runs, "new": messages[covered:]}


def interaction_messages(value: Any) -> list[tuple[int, list[Message]]]:
    """The ``(index, messages)`` of each LLM interaction with a full message list in ``value``."""
    found = value.get(CASSETTE_KEY) if isinstance(value, Mapping) else None
    out: list[tuple[int, list[Message]]] = []
    for i, entry in enumerate(found if isinstance(found, list) else []):
        request = entry.get("request") if isinstance(entry, Mapping) else None
        messages = request.get("messages") if isinstance(request, Mapping) else None
        if entry.get("kind") == "llm" and isinstance(messages, list):
            out.append((i, messages))
    return out


def compact_value(value: dict[str, Any], bases: Sequence[Base]) -> dict[str, Any]:
    """``value`` (a journaled LLM call: ``{"response", "cassette"}``) named by a new ``ref``,
    its interactions' messages compacted against ``bases``."""
    cassette = []
    for entry in value[CASSETTE_KEY]:
        request = entry.get("request")
        messages = request.get("messages") if isinstance(request, dict) else None
        if entry.get("kind") == "llm" and isinstance(messages, list):
            # The same keys in the same order: the rebuilt request is written byte for byte.
            request = {**request, "messages": compact(messages, bases)}
            entry = {**entry, "request": request}
        cassette.append(entry)
    return {**value, CASSETTE_KEY: cassette, REF_KEY: new_ref()}


class _Rebuilder:
    """Rebuilds compact message lists from the journaled calls of one run."""

    def __init__(self, values: Sequence[Any]) -> None:
        self.by_ref = {
            v[REF_KEY]: v
            for v in values
            if isinstance(v, Mapping) and isinstance(v.get(REF_KEY), str)
        }
        self.done: dict[tuple[str, int], list[Message] | None] = {}

    def messages(self, ref: str, index: int) -> list[Message] | None:
        """The full messages of interaction ``index`` of the call ``ref`` (``None``: unknown)."""
        # Iterative, not recursive: a conversation of thousands of calls is a chain that long.
        todo: list[tuple[str, int]] = [(ref, index)]
        while todo:
            key = todo[-1]
            if key in self.done:
                todo.pop()
                continue
            stored = self._stored(*key)
            if not isinstance(stored, Mapping):
                self.done[key] = stored if isinstance(stored, list) else None
                todo.pop()
                continue
            base = stored.get("base")
            base_key = (str(base[0]), int(base[1])) if isinstance(base, list) else ("", -1)
            if base_key not in self.done and base_key not in todo:
                todo.append(base_key)
                continue
            self.done[key] = _apply(stored, self.done.get(base_key))
            todo.pop()
        return self.done[(ref, index)]

    def _stored(self, ref: str, index: int) -> Any:
        value = self.by_ref.get(ref)
        cassette = value.get(CASSETTE_KEY) if value is not None else None
        if not isinstance(cassette, list) or not 0 <= index < len(cassette):
            return None
        request = cassette[index].get("request") if isinstance(cassette[index], Mapping) else None
        return request.get("messages") if isinstance(request, Mapping) else None


def _apply(stored: Mapping[str, Any], base: list[Message] | None) -> list[Message] | None:
    if base is None or not isinstance(stored.get("new"), list):
        return None
    out: list[Message] = []
    for start, stop in stored.get("runs") or []:
        out.extend(base[start:stop])
    out.extend(stored["new"])
    return out


def expand_value(value: Any, rebuild: _Rebuilder) -> Any:
    """``value`` with its interactions' full message lists and no ``ref`` (a message list whose
    base the journal does not hold is left compact)."""
    if not isinstance(value, Mapping) or REF_KEY not in value:
        return value
    out = {k: v for k, v in value.items() if k != REF_KEY}
    cassette = out.get(CASSETTE_KEY)
    if isinstance(cassette, list):
        out[CASSETTE_KEY] = [
            _expand_entry(e, rebuild, str(value[REF_KEY]), i) for i, e in enumerate(cassette)
        ]
    return out


def _expand_entry(entry: Any, rebuild: _Rebuilder, ref: str, index: int) -> Any:
    request = entry.get("request") if isinstance(entry, Mapping) else None
    if not isinstance(request, Mapping) or not isinstance(request.get("messages"), Mapping):
        return entry
    messages = rebuild.messages(ref, index)
    if messages is None:
        return entry
    return {**entry, "request": {**request, "messages": messages}}


def expand(calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The journaled calls of one run (as ``GET /runs/{id}/journal`` lists them: ``value``
    among their keys) with every compact message list rebuilt in full."""
    rebuild = _Rebuilder([c.get("value") for c in calls])
    return [{**c, "value": expand_value(c.get("value"), rebuild)} for c in calls]


def is_compact(entry: Any) -> bool:
    """Whether a cassette interaction still holds a compact message list."""
    request = entry.get("request") if isinstance(entry, Mapping) else None
    return isinstance(request, Mapping) and isinstance(request.get("messages"), Mapping)


__all__ = [
    "CASSETTE_KEY",
    "MAX_RUNS",
    "RECENT",
    "REF_KEY",
    "Base",
    "compact",
    "compact_value",
    "expand",
    "interaction_messages",
    "is_compact",
    "new_ref",
]
