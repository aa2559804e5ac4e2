"""Idempotent starts: one run per idempotency key, however often a start is sent.

A start given a key (``cptr.start(..., idempotency_key=k)``, the server's ``Idempotency-Key``
header) records the key in the run's record. The store keeps one run per key (a unique index
in SQL, a dict in memory) for as long as the run is kept, so a client that retries a start
whose answer it lost, on any replica, gets the run the first attempt started: the
checkpointer raises :class:`~batonflow.core.errors.DuplicateStartError` naming it instead of
starting another. A key sent again with another start (another workflow, other start fields)
is refused with :class:`~batonflow.core.errors.IdempotencyKeyError`: a key names one request.

A start made on the loop's thread (``cptr.start``) reads the key first, so a retry costs no
failed insert; a start whose writes go off the loop (``cptr.astart`` on PostgreSQL, as the
server starts runs) skips that read, which would be a round trip on the loop for every start
the client sends with a key: the insert decides, and a refused one looks the key's run up. Either
way the insert decides the race between two starts that both found nothing (the second is
refused by the store, looks again and finds the winner's run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CheckpointError, DuplicateStartError, IdempotencyKeyError
from ._records import RunRecord
from ._text import text_problem

if TYPE_CHECKING:
    from .checkpoints import WorkflowCheckpointer

#: The longest key accepted (a UUID is 36 characters; Stripe's limit is 255).
MAX_KEY_LENGTH = 255


def check_key(key: Any) -> str:
    """Return ``key`` if it can be an idempotency key: 1 to 255 characters of storable text.

    Raises:
        ValueError: Not text, empty, too long, or holding a NUL character or lone surrogate.
    """
    if not isinstance(key, str):
        raise ValueError(
            f"idempotency_key={key!r} is a {type(key).__name__}; pass text, e.g. a UUID "
            "made once per request (str(uuid.uuid4()))."
        )
    problem = text_problem(key)
    if not key.strip() or len(key) > MAX_KEY_LENGTH or problem is not None:
        why = problem or ("empty" if not key.strip() else f"{len(key)} characters long")
        raise ValueError(
            f"idempotency_key={key[:80]!r} is {why}; pass 1 to {MAX_KEY_LENGTH} characters of "
            "text, e.g. a UUID made once per request."
        )
    return key


def started(cptr: WorkflowCheckpointer, key: str, name: str, start_event: str) -> None:
    """Raise what a start with ``key`` gets when that key started a run already.

    Args:
        cptr: The checkpointer (its store, and the runs live in this process).
        key: The start's idempotency key.
        name: The workflow name the start records.
        start_event: The start event as the serializer encodes it.

    Raises:
        DuplicateStartError: ``key`` started a run with this same start: that run.
        IdempotencyKeyError: ``key`` started a run with another workflow or start event.
        CheckpointError: The store cannot look runs up by key.
    """
    look_up = getattr(cptr.store, "run_for_key", None)
    if look_up is None:
        raise CheckpointError(
            f"{cptr.store!r} cannot look runs up by idempotency key (it has no run_for_key); "
            "use a batonflow store (memory, SQLite, PostgreSQL) or start without a key."
        )
    record: RunRecord | None = look_up(key)
    if record is None:
        return
    if record.workflow_name != name or record.start_event != start_event:
        what = (
            f"workflow {record.workflow_name!r}"
            if record.workflow_name != name
            else "other start fields"
        )
        raise IdempotencyKeyError(
            f"Idempotency key {key!r} started run {record.run_id} of {what}; a key names one "
            "start, so it cannot start this one. Send this start with a new key (or resend "
            "that start's own fields to get its run)."
        )
    raise DuplicateStartError(
        f"Idempotency key {key!r} started run {record.run_id} already ({record.status}); "
        "nothing new was started. Follow that run (its id is this error's run_id).",
        run_id=record.run_id,
        record=record,
        handler=cptr._live.get(record.run_id),
    )


__all__ = ["MAX_KEY_LENGTH", "check_key", "started"]
