"""Text every run store can hold: no NUL character, no lone surrogate.

PostgreSQL's ``text`` refuses the NUL character, and a lone surrogate (U+D800-U+DFFF on its
own, which JSON's ``"\\ud800"`` and Python's ``surrogateescape`` can make) is not Unicode text
and cannot be encoded as UTF-8 at all. An id, a name or a filter that holds one can never name
anything a store holds: :func:`text_problem` says why, for the edge to refuse it and for a
store to name it in its error; :func:`storable` escapes such characters in text that is only
read by people (an error message).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import UnstorableTextError

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def text_problem(text: str, *, nul: bool = True) -> str | None:
    """Why ``text`` cannot be stored (``"a NUL character at position 3"``), or ``None``.

    With ``nul=False`` only a lone surrogate counts (for text that is data, sent as JSON,
    where a NUL character is escaped).
    """
    if text.isascii():
        index = text.find("\x00") if nul else -1
        return None if index < 0 else f"a NUL character at position {index}"
    for found in _UNSTORABLE.finditer(text):
        char = found.group()
        if char != "\x00":
            return f"a lone surrogate (U+{ord(char):04X}) at position {found.start()}"
        if nul:
            return f"a NUL character at position {found.start()}"
    return None


def _texts(value: Any, depth: int = 0) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif depth < 100 and isinstance(value, list | tuple):
        for item in value:
            yield from _texts(item, depth + 1)
    elif depth < 100 and isinstance(value, Mapping):
        for key, item in value.items():
            yield from _texts(key, depth + 1)
            yield from _texts(item, depth + 1)


def first_text_problem(value: Any, *, nul: bool = True) -> tuple[str, str] | None:
    """The first text in ``value`` (a string, or lists, tuples and mappings of them, keys
    too) that cannot be stored, with why; ``None`` when there is none. ``nul`` as in
    :func:`text_problem`."""
    for text in _texts(value):
        problem = text_problem(text, nul=nul)
        if problem is not None:
            return text, problem
    return None


def unstorable_error(text: str, problem: str, where: str) -> UnstorableTextError:
    """The error of a store at ``where`` given ``text``, which holds ``problem``."""
    shown = repr(text) if len(text) <= 80 else repr(text[:80]) + "..."
    return UnstorableTextError(
        f"{where} cannot store the text {shown}: it holds {problem}. Remove that character "
        "(ids, names and filters are text without NUL characters or lone surrogates)."
    )


def storable(text: str) -> str:
    """``text`` with NUL characters and lone surrogates written as escapes (``\\x00``)."""
    if text_problem(text) is None:
        return text
    return _UNSTORABLE.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if m.group() == "\x00" else f"\\u{ord(m.group()):04x}",
        text,
    )


__all__ = ["first_text_problem", "storable", "text_problem", "unstorable_error"]
