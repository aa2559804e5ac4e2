"""Choosing a run store by URL: a SQLite file by default, other backends by their scheme.

One function, :func:`open_store`, turns what a user writes (``Workflow(checkpoint_store=...)``,
``batonflow serve --db ...``, ``BATONFLOW_DATABASE_URL``) into a store:

=====================================  ==========================================
target                                 store
=====================================  ==========================================
``"runs.db"``, a ``Path``              :class:`SqliteCheckpointStore` on that file
``"sqlite:///runs.db"``                the same (``sqlite:////abs/path`` for /abs/path)
``"postgresql://user@host/db"``        ``batonflow.postgres.PostgresCheckpointStore``
a store object                         itself
=====================================  ==========================================

Backends other than SQLite are found through the ``batonflow.stores`` entry-point group
(scheme → ``module:Class``), so the engine names no database driver: ``batonflow[postgres]``
registers ``postgresql`` and ``postgres``, and a third-party package can register its own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._public import publish
from ..engine._durability import plug_durability
from ..errors import CheckpointError, WorkflowConfigurationError
from ._sqlite_store import SqliteCheckpointStore
from .checkpoints import CheckpointStore, WorkflowCheckpointer

if TYPE_CHECKING:
    from ..engine.workflow import Workflow

#: The environment variable naming the run store of the command line and the server.
DATABASE_URL_ENV = "BATONFLOW_DATABASE_URL"
#: The entry-point group where store backends register their URL schemes.
ENTRY_POINT_GROUP = "batonflow.stores"
_HINTS = {"postgresql": "postgres", "postgres": "postgres"}


def open_store(target: str | os.PathLike[str] | CheckpointStore, **options: Any) -> CheckpointStore:
    """Open the run store that ``target`` names.

    Args:
        target: A file path (SQLite), a ``sqlite:///`` URL, a URL of a registered backend such
            as ``postgresql://...``, or a store (returned as it is).
        **options: Passed to the store's constructor (e.g. ``replica_id=`` for PostgreSQL).

    Returns:
        The store, ready to use.

    Raises:
        CheckpointError: The URL's scheme has no installed backend (the message names the
            extra to install), or the store cannot be opened.
    """
    if isinstance(target, CheckpointStore):
        return target
    text = os.fspath(target)
    scheme, sep, rest = text.partition("://")
    if not sep or (len(scheme) == 1 and os.name == "nt"):  # a path (or a Windows drive)
        return SqliteCheckpointStore(Path(text), **options)
    scheme = scheme.lower()
    if scheme == "sqlite":
        # sqlite:///relative.db and sqlite:////absolute.db, as SQLAlchemy spells them.
        return SqliteCheckpointStore(Path(rest[1:] if rest.startswith("/") else rest), **options)
    # Only for URLs: importlib.metadata is heavy, and SQLite paths (the common case) skip it.
    from importlib.metadata import entry_points

    base = scheme.split("+", 1)[0]  # postgresql+psycopg://... as SQLAlchemy spells drivers
    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == base]
    if not found:
        extra = _HINTS.get(base)
        fix = (
            f"pip install 'batonflow[{extra}]'"
            if extra
            else "install a package that registers it, or use a SQLite path"
        )
        raise CheckpointError(f"No run store is installed for {base}:// URLs; {fix}.")
    cls = found[0].load()
    url = text if base == scheme else base + "://" + rest
    store = cls(url, **options)
    if not isinstance(store, CheckpointStore):
        raise CheckpointError(
            f"{found[0].value} (registered for {base}://) did not make a checkpoint store; "
            "fix or uninstall the package that registers it."
        )
    return store


def database_url(
    value: str | os.PathLike[str] | None = None, *, default: str | os.PathLike[str]
) -> str:
    """The store the command line and server use: ``value``, else ``$BATONFLOW_DATABASE_URL``,
    else ``default``."""
    if value is not None and os.fspath(value) != "":
        return os.fspath(value)
    return os.environ.get(DATABASE_URL_ENV) or os.fspath(default)


def _durable(workflow: Workflow, checkpoint_store: Any) -> WorkflowCheckpointer:
    """``Workflow(checkpoint_store=...)``: the checkpointer of ``workflow`` on that store.

    Plugged into the engine (``engine/_durability.py``), which does not import this room.

    Raises:
        WorkflowConfigurationError: ``checkpoint_store`` is not a store, path or URL.
    """
    if isinstance(checkpoint_store, str | os.PathLike):
        checkpoint_store = open_store(checkpoint_store)
    if not isinstance(checkpoint_store, CheckpointStore):
        raise WorkflowConfigurationError(
            f"checkpoint_store={checkpoint_store!r} is not a checkpoint store; pass "
            "a path or URL (runs.db, postgresql://...), SqliteCheckpointStore(path), "
            "InMemoryCheckpointStore(), or an object with "
            "the CheckpointStore methods (put, list, latest, get, runs, run, "
            "finish_run, delete)."
        )
    return WorkflowCheckpointer(workflow, store=checkpoint_store)


plug_durability(_durable)

__all__ = ["DATABASE_URL_ENV", "ENTRY_POINT_GROUP", "database_url", "open_store"]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
