"""A changed state key stored as the edit of its previous value, not as its whole new value.

A durable checkpoint holds only the untyped state keys its step changed (``state_mode`` 1), but
a key that keeps growing (a prebuilt agent's scratchpad and tool calls, a list a step appends
to) still holds its whole value at every step: a run of N steps stores O(N²) bytes. So the
writer compares a changed key's encoded text with the text the reader rebuilds for the previous
checkpoint, and when both share a long enough start and end (a list grown at its end, a dict
with a new or changed member, at any depth of the JSON) stores ``[head, tail, middle]``: the
new text is the first ``head`` characters of the previous one, then ``middle``, then its last
``tail`` characters. Such a checkpoint's ``state_mode`` is 2; reading applies the edits in
order from the last whole state, so it rebuilds the same text, character for character.

Only texts the reader rebuilds are edited: the writer keeps, per run, the texts as of the
run's last checkpoint with a state (:class:`StateTexts`), and starts over from each whole state
(the first checkpoint, after ``set_state``, and after a checkpoint that was not saved).
Checkpoints are deleted only with their whole run, so the whole state an edit builds on is
there as long as the edit is. ``state_mode`` 2 changes no table: rows written before read as
they did. A batonflow older than this module would read such a row wrong, so the schema version
went up with it (SQLite 10, PostgreSQL 13): an older batonflow refuses the store instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: A key's text is stored as an edit only when the edit keeps at least this many characters.
MIN_KEPT = 64
#: ``Checkpoint.state_changes`` (the ``state_mode`` column) of a checkpoint holding edits.
EDITS = 2


def _head(old: str, new: str, most: int) -> int:
    """How many first characters ``old`` and ``new`` share (at most ``most``)."""
    if old[:most] == new[:most]:
        return most
    low, high = 0, most  # old[:low] == new[:low], old[:high] != new[:high]
    while high - low > 1:
        mid = (low + high) // 2
        if old[low:mid] == new[low:mid]:
            low = mid
        else:
            high = mid
    return low


def _tail(old: str, new: str, most: int) -> int:
    """How many last characters ``old`` and ``new`` share (at most ``most``)."""
    a, b = len(old), len(new)
    if old[a - most :] == new[b - most :]:
        return most
    low, high = 0, most
    while high - low > 1:
        mid = (low + high) // 2
        if old[a - mid : a - low] == new[b - mid : b - low]:
            low = mid
        else:
            high = mid
    return low


def edit(old: str | None, new: str) -> str | list[Any]:
    """``new`` as ``[head, tail, middle]`` against ``old`` when that keeps :data:`MIN_KEPT`
    characters or more, else ``new`` itself."""
    if old is None or len(old) < MIN_KEPT or len(new) < MIN_KEPT:
        return new
    most = min(len(old), len(new))
    head = _head(old, new, most)
    tail = _tail(old, new, most - head)
    if head + tail < MIN_KEPT:
        return new
    return [head, tail, new[head : len(new) - tail]]


def edited(old: str | None, change: Any) -> str:
    """The text that the edit ``change`` (``[head, tail, middle]``) makes of ``old``.

    Raises:
        ValueError: ``change`` is not such an edit of ``old`` (a corrupt checkpoint).
    """
    if (
        old is None
        or not isinstance(change, list)
        or len(change) != 3
        or not all(type(n) is int and n >= 0 for n in change[:2])
        or not isinstance(change[2], str)
        or change[0] + change[1] > len(old)
    ):
        raise ValueError("a state key's edit does not apply to its previous value")
    head: int = change[0]
    tail: int = change[1]
    middle: str = change[2]
    return old[:head] + middle + old[len(old) - tail :]


class StateTexts:
    """The encoded state each run's reader rebuilds as of its last checkpoint with a state;
    :meth:`compact` turns a checkpoint's changes into edits of it."""

    def __init__(self) -> None:
        self._runs: dict[str, dict[str, str]] = {}

    def compact(
        self, run_id: str, changes: bool, values: Mapping[str, str | None]
    ) -> tuple[dict[str, Any], int]:
        """A checkpoint's state ``values`` (``changes``: on top of the previous state, else the
        whole state) as it stores them, and its ``state_changes`` (:data:`EDITS` when some
        key is an edit)."""
        if changes and not values:
            return {}, 1  # the step changed nothing: most steps of most runs
        if not changes:
            self._runs[run_id] = {k: v for k, v in values.items() if v is not None}
            return dict(values), 0
        texts = self._runs.setdefault(run_id, {})
        stored: dict[str, Any] = {}
        mode = 1
        for key, value in values.items():
            if value is None:
                texts.pop(key, None)
                stored[key] = None
                continue
            stored[key] = change = edit(texts.get(key), value)
            texts[key] = value
            if change is not value:
                mode = EDITS
        return stored, mode

    def forget(self, run_id: str) -> None:
        """The run ended here (or was let go): its texts are not needed any more."""
        self._runs.pop(run_id, None)


__all__ = ["EDITS", "MIN_KEPT", "StateTexts", "edit", "edited"]
