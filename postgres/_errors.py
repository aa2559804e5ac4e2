"""psycopg's errors as the store's: which ``CheckpointError`` tells what went wrong, in words.

:func:`store_error` maps a driver error to the error class the caller acts on (full, read-only,
locked, corrupt, unreachable); :class:`TextCursor` names the text PostgreSQL cannot hold;
:func:`reason` and :func:`redacted` keep passwords out of messages.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import psycopg
from batonflow.core.durable._records import ENDED
from batonflow.core.durable._text import first_text_problem, unstorable_error
from batonflow.core.errors import (
    CheckpointError,
    LeaseLostError,
    StoreCorruptError,
    StoreFullError,
    StoreLockedError,
    StoreReadOnlyError,
)
from psycopg import errors as pg_errors
from psycopg_pool import PoolTimeout


class TextCursor(psycopg.Cursor[Any]):
    """psycopg's cursor, but text PostgreSQL cannot hold is named in an UnstorableTextError.

    The driver refuses a NUL character with a ``DataError`` and a lone surrogate with a
    ``UnicodeEncodeError`` (not even a ``psycopg.Error``), neither saying which value it was.
    Only a failed statement's parameters are looked at: a statement that works costs nothing.
    """

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        try:
            return super().execute(query, params, **kwargs)
        except (psycopg.DataError, UnicodeEncodeError) as exc:
            found = first_text_problem(params)
            if found is None:
                raise
            raise unstorable_error(*found, where="PostgreSQL") from exc


def store_error(exc: BaseException, action: str, where: str) -> CheckpointError:
    """The :class:`CheckpointError` subclass that tells what went wrong on the server at
    ``where`` while the store tried to ``action``."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, pg_errors.DiskFull | pg_errors.OutOfMemory):
        return StoreFullError(
            f"Could not {action}: the PostgreSQL server at {where} is out of space "
            f"({text}); nothing was written and what was committed before is intact. "
            "Free space on the server, then resume the run."
        )
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction | pg_errors.InsufficientPrivilege):
        return StoreReadOnlyError(
            f"Could not {action}: the database at {where} cannot be written ({text}); "
            "connect to the primary server with a user that may write."
        )
    if isinstance(exc, pg_errors.LockNotAvailable | pg_errors.DeadlockDetected | PoolTimeout):
        return StoreLockedError(
            f"Could not {action}: the database at {where} was busy ({text}); retry, or "
            "give the pool more connections (max_size=)."
        )
    if isinstance(exc, pg_errors.DataCorrupted | pg_errors.IndexCorrupted):
        return StoreCorruptError(
            f"Could not {action}: the database at {where} reports corrupt data ({text}); "
            "restore it from a backup."
        )
    if isinstance(exc, psycopg.OperationalError):
        return CheckpointError(
            f"Could not {action}: the PostgreSQL server at {where} cannot be reached "
            f"({text}); check that it runs and the URL is right."
        )
    return CheckpointError(
        f"Could not {action} in {where} ({type(exc).__name__}: {text}); check the "
        "database, or pass another URL."
    )


#: How the server words a refused start-up when it has no connection slot left: the server's
#: ``max_connections``, a role's or a database's ``CONNECTION LIMIT`` (SQLSTATE 53300, which
#: libpq does not pass on for a connection that never started: only its message).
_NO_SLOT = (
    "too many clients already",
    "too many connections for",
    "remaining connection slots are reserved",
)


def no_free_slot(exc: BaseException) -> bool:
    """Whether ``exc`` is a connection refused because the server has no slot left for it."""
    text = str(exc)
    return isinstance(exc, psycopg.OperationalError) and any(m in text for m in _NO_SLOT)


def no_slot_advice(pool_size: int) -> str:
    """What to do about a server without a free connection, for a replica whose pool opens
    up to ``pool_size`` connections (and one more to ``LISTEN``)."""
    return (
        f"each replica opens up to {pool_size + 1} connections (a pool of {pool_size} and one "
        "to LISTEN): raise the server's max_connections (or the role's or the database's "
        "CONNECTION LIMIT), or run fewer replicas on this database"
    )


def reason(exc: Exception, url: str) -> str:
    """libpq's reason for a failed connection, on one line and without the password."""
    # libpq puts a hint on a line of its own ("Connection refused\n\tIs the server running
    # ...?"): its lines become sentences of one line.
    lines = [" ".join(line.split()) for line in str(exc).splitlines()]
    text = ". ".join(line.rstrip(".") for line in lines if line)
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    return text.replace(password, "***") if password else text


def redacted(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "the configured PostgreSQL URL"
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


def lease_lost(
    run_id: str, replica_id: str | None, owner: str | None, status: str | None
) -> LeaseLostError:
    """The error of a write into ``run_id`` refused because replica ``owner`` holds it (or
    nobody does: it ended with ``status``, or was released)."""
    if owner is None:
        now = f"it {status}" if status in ENDED else "its lease was released"
        return LeaseLostError(
            f"Run {run_id!r} is no longer held by replica {replica_id!r} ({now}); "
            "nothing more is written into it from here. Stop running it here."
        )
    if owner == replica_id:
        return LeaseLostError(
            f"Run {run_id!r} is held by another process of replica {owner!r} (one that "
            "started under the same name while this one was stalled); it goes on there. "
            "Stop running it here."
        )
    return LeaseLostError(
        f"Run {run_id!r} is held by replica {owner!r}, not by {replica_id!r}; it goes "
        "on there. Stop running it here."
    )


__all__ = [
    "TextCursor",
    "lease_lost",
    "no_free_slot",
    "no_slot_advice",
    "reason",
    "redacted",
    "store_error",
]
