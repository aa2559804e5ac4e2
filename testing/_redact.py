"""Keeping secrets out of a cassette: API keys, auth headers, and what a hook says.

Three passes run over every interaction before it is written (and over every live request
before a replay compares it, so both sides look the same):

1. a setting whose name says it is a secret (``api_key``, ``*_secret``, ``password``,
   ``authorization``, any ``*headers``...) is replaced by ``"<redacted>"``;
2. every string the LLM's secret settings and the process's secret-named environment variables
   (``OPENAI_API_KEY``...) hold, and every key-shaped string (``sk-...``, ``Bearer ...``), is
   cut out of every text of the interaction, messages included;
3. the user's hook, ``redact=fn``, gets the interaction as JSON values and returns it changed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import Any

#: What a redacted value is replaced by.
REDACTED = "<redacted>"

#: A user's redaction hook: an interaction (JSON values) in, the interaction to keep out.
Redactor = Callable[[dict[str, Any]], dict[str, Any]]

_SECRET_NAME = re.compile(
    r"(api_?key|secret|password|passwd|authori[sz]ation|credential|cookie|headers?$"
    r"|(^|_)(access|auth|refresh|session|bearer|api)_?token)",
    re.IGNORECASE,
)
_KEY_SHAPED = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}|\bBearer\s+[A-Za-z0-9._\-]{8,}")
#: Shorter strings are not treated as secrets (cutting "test" out of every text helps no one).
_MIN_SECRET = 8


def is_secret_name(name: str) -> bool:
    """Whether a setting or header named ``name`` holds a secret (``api_key``, ``Authorization``)."""
    return bool(_SECRET_NAME.search(name))


def _text(value: Any) -> str | None:
    secret = getattr(value, "get_secret_value", None)
    if callable(secret):
        value = secret()
    return value if isinstance(value, str) and len(value) >= _MIN_SECRET else None


def secrets_of(obj: Any) -> set[str]:
    """The secret strings an LLM (or tool) holds in its secret-named attributes, and the
    process's secret-named environment variables."""
    found: set[str] = set()
    names: Iterable[str] = getattr(type(obj), "model_fields", {}) or vars(obj).keys()
    for name in list(names) + [n for n in dir(obj) if n.startswith("_") and is_secret_name(n)]:
        if not is_secret_name(name):
            continue
        try:
            text = _text(getattr(obj, name, None))
        except Exception:  # a property that cannot be read now holds nothing to hide
            continue
        if text is not None:
            found.add(text)
    for name, value in os.environ.items():
        if is_secret_name(name) or name.upper().endswith(("_KEY", "_TOKEN")):
            text = _text(value)
            if text is not None:
                found.add(text)
    return found


def scrub(value: Any, secrets: set[str]) -> Any:
    """``value`` (JSON values) with secret-named settings and secret strings redacted."""
    if isinstance(value, dict):
        return {
            k: REDACTED if is_secret_name(str(k)) and v not in (None, "", {}) else scrub(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
    if isinstance(value, str):
        for secret in sorted(secrets, key=len, reverse=True):
            value = value.replace(secret, REDACTED)
        return _KEY_SHAPED.sub(REDACTED, value)
    return value
