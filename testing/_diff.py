"""A readable difference between the request a cassette holds and the one sent now."""

from __future__ import annotations

import json
from typing import Any

#: At most this many differing fields are listed; the rest are counted.
_MAX_LINES = 12
_MAX_VALUE = 300


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 3] + "..."


def _walk(path: str, old: Any, new: Any, out: list[tuple[str, Any, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            sub = f"{path}.{key}" if path else str(key)
            _walk(sub, old.get(key, _MISSING), new.get(key, _MISSING), out)
    elif isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            _walk(
                f"{path}[{i}]",
                old[i] if i < len(old) else _MISSING,
                new[i] if i < len(new) else _MISSING,
                out,
            )
    elif old != new:
        out.append((path, old, new))


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


_MISSING: Any = _Missing()


def differences(recorded: Any, sent: Any) -> list[tuple[str, Any, Any]]:
    """The fields where ``sent`` differs from ``recorded``: ``(path, recorded, sent)``, with
    paths such as ``messages[0].content`` and an absent side as :data:`_MISSING`."""
    out: list[tuple[str, Any, Any]] = []
    _walk("", recorded, sent, out)
    return out


def render(recorded: Any, sent: Any) -> str:
    """The differing fields, one block each: its path, the cassette's value, the value now."""
    lines: list[str] = []
    found = differences(recorded, sent)
    for path, old, new in found[:_MAX_LINES]:
        lines.append(f"  {path}:")
        lines.append(f"    cassette: {'(absent)' if old is _MISSING else _show(old)}")
        lines.append(f"    now:      {'(absent)' if new is _MISSING else _show(new)}")
    if len(found) > _MAX_LINES:
        lines.append(f"  ... and {len(found) - _MAX_LINES} more differing fields")
    return "\n".join(lines)
