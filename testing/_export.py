"""A durable run's journal as a cassette: what ``batonflow runs export RUN --cassette FILE`` writes.

In a durable run the prebuilt agents journal each LLM call and tool call
(:mod:`batonflow.agents.journaled`); while the call is made, :func:`capture` listens at the
cassette seams and the journal keeps, next to the call's result, the cassette interactions it
made (the request as :func:`batonflow.testing.record` writes it: messages, tools offered, model
and settings, response and usage; a tool's arguments and result), secrets already redacted.
:func:`cassette_from_journal` puts them back together, in the order the calls were journaled,
each LLM request's messages rebuilt in full where the journal kept only what was new since an
earlier call (:mod:`batonflow._request_deltas`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from batonflow import _request_deltas

from . import _seams
from ._session import CassetteSession, save
from .errors import CassetteError

#: The key of a journaled agent call's value that holds its cassette interactions.
CASSETTE_KEY = _request_deltas.CASSETTE_KEY


@contextmanager
def capture() -> Iterator[CassetteSession | None]:
    """Record the LLM and tool calls made inside the block into memory, writing no file.

    Yields ``None`` (and records nothing) when a cassette is already open in this context: that
    cassette records or answers the calls itself.
    """
    if _seams.ACTIVE.get() is not None:
        yield None
        return
    with CassetteSession(Path("<journal>"), "record", write=False) as session:
        yield session


def cassette_from_journal(run_id: str, calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The cassette interactions of a run's journaled calls (as ``GET /runs/{id}/journal`` and
    ``batonflow runs journal --json`` list them), in the order they were journaled.

    Raises:
        CassetteError: The run journaled no agent call with its interactions, or one whose
            messages refer to an earlier call its journal does not hold.
    """
    interactions: list[dict[str, Any]] = []
    expanded = _request_deltas.expand(calls)
    for call in sorted(expanded, key=lambda c: c.get("created_at") or 0.0):
        value = call.get("value")
        if call.get("error") or not isinstance(value, Mapping):
            continue
        found = value.get(CASSETTE_KEY)
        if not isinstance(found, list):
            continue
        if any(_request_deltas.is_compact(e) for e in found):
            raise CassetteError(
                f"Run {run_id!r}: journaled call #{call.get('call')} of step {call.get('step')!r} "
                "keeps its LLM messages as what is new since an earlier call that the journal "
                "no longer holds, so its request cannot be rebuilt. Export the whole journal of "
                "the run (the run store it was recorded in, or its server)."
            )
        interactions.extend(e for e in found if isinstance(e, dict))
    if not interactions:
        what = (
            "journaled no calls: it is not a durable run, or it made no LLM or tool call"
            if not calls
            else f"journaled {len(calls)} calls but none of them an agent's LLM or tool call "
            "with its request (calls journaled before batonflow recorded requests have none)"
        )
        raise CassetteError(
            f"Run {run_id!r} {what}, so there is nothing to export. Export a durable run "
            "(batonflow serve, batonflow run --durable) of a prebuilt agent, or record the run "
            "with batonflow.testing.record."
        )
    return interactions


def write_cassette(path: str | Path, interactions: Sequence[dict[str, Any]]) -> Path:
    """Write ``interactions`` as the cassette at ``path``, in the format ``record()`` writes.

    Raises:
        CassetteError: ``path`` is a folder or cannot be written.
    """
    target = Path(path)
    if target.is_dir():
        raise CassetteError(
            f"The cassette path {target} is a folder. Pass a file path, such as "
            f"{target / 'run.json'}."
        )
    try:
        save(target, interactions)
    except OSError as exc:
        raise CassetteError(
            f"Cannot write the cassette {target} ({exc.strerror or exc}). Pass a path in a "
            "folder you can write to."
        ) from exc
    return target
