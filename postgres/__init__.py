"""Durable runs on a PostgreSQL server, shared by several batonflow processes.

:class:`PostgresCheckpointStore` keeps the same records as the SQLite store (runs, checkpoints,
the changed state keys, the append-only event log, the inbox) behind the same
:class:`~batonflow.core.checkpoints.CheckpointStore` protocol, so it is chosen by URL wherever
a store is chosen::

    Workflow(checkpoint_store="postgresql://user@host/db")
    batonflow serve --db postgresql://user@host/db       # or BATONFLOW_DATABASE_URL

Beyond SQLite it lets several servers share the runs: each run is held by one replica through
a lease (:mod:`batonflow.postgres.leases`), answers and stream events are announced with
``LISTEN``/``NOTIFY`` so the replica holding a run, and every replica streaming it, learn of
them at once.

Needs ``pip install 'batonflow[postgres]'`` (psycopg 3 and its connection pool).
"""

from __future__ import annotations

from batonflow._extras import require_extra

require_extra(
    "batonflow.postgres", "postgres", {"psycopg": "psycopg", "psycopg_pool": "psycopg-pool"}
)

from .store import PostgresCheckpointStore  # noqa: E402

__all__ = ["PostgresCheckpointStore"]
