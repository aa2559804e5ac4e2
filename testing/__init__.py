"""Cassettes: record a run's LLM and tool calls once, replay them offline in tests.

``with batonflow.testing.record("run.json"):`` around any code (a workflow run, an agent, a
step calling ``llm.achat``) writes every llama-index LLM call made inside it (chat or complete,
sync or async, streamed or not: the messages, the tools offered, the model and temperature, the
response and its usage) and every tool call (its arguments and result) to one JSON file, in the
order the calls started. ``with batonflow.testing.replay("run.json"):`` runs the same code
with every call answered from the file, in order, and no network: a call that differs from
the recorded one fails with a :class:`CassetteMismatchError` showing which fields differ, or,
with ``mode="rewrite"``, is made for real and written over its entry.

Both work as ``with`` and ``async with``. API keys, auth headers and other secrets are never
written (see :mod:`batonflow.testing._redact`); ``redact=`` adds a hook for the rest. A pytest
fixture, ``cassette``, comes with the package (see :mod:`batonflow.pytest_cassettes`).
"""

from __future__ import annotations

from pathlib import Path

from batonflow._extras import require_extra

require_extra(
    "batonflow.testing",
    "agents",
    {"llama_index.core": "llama-index-core"},
)

from ._redact import REDACTED as REDACTED  # noqa: E402
from ._redact import Redactor as Redactor  # noqa: E402
from ._session import CassetteSession as CassetteSession  # noqa: E402
from ._session import Mode as Mode  # noqa: E402
from ._session import load as load_cassette  # noqa: E402
from .errors import CassetteError as CassetteError  # noqa: E402
from .errors import CassetteMismatchError as CassetteMismatchError  # noqa: E402


def record(path: str | Path, *, redact: Redactor | None = None) -> CassetteSession:
    """Record every LLM and tool call made inside the block into the cassette at ``path``.

    The file is written (over any old one) when the block ends without an exception.

    Args:
        path: The cassette file (JSON).
        redact: A hook that gets each interaction as JSON values (after the built-in
            redaction of keys and auth headers) and returns what to write. On replay it gets
            each live call's request the same way, so both sides compare alike.

    Returns:
        A context manager (``with`` or ``async with``); its ``interactions`` are the calls so far.
    """
    return CassetteSession(path, "record", redact)


def replay(
    path: str | Path, *, mode: Mode = "replay", redact: Redactor | None = None
) -> CassetteSession:
    """Answer every LLM and tool call made inside the block from the cassette at ``path``.

    LLM calls are answered in the order they were recorded; a tool call by the first unused
    recorded call of that tool with the same arguments. No LLM is asked and no tool is run.
    When the block ends, recorded calls the run did not make fail the replay too.

    Args:
        path: A cassette written by :func:`record`.
        mode: ``"replay"`` (a call the cassette does not hold raises
            :class:`CassetteMismatchError` with the differing fields) or ``"rewrite"`` (such a
            call is made for real and the cassette is written again when the block ends).
        redact: The same hook the cassette was recorded with.

    Returns:
        A context manager (``with`` or ``async with``).

    Raises:
        CassetteError: ``path`` holds no cassette.
    """
    return CassetteSession(path, mode, redact)


__all__ = [
    "REDACTED",
    "CassetteError",
    "CassetteMismatchError",
    "CassetteSession",
    "Mode",
    "Redactor",
    "load_cassette",
    "record",
    "replay",
]
