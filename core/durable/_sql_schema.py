"""The run store's SQL, written once for every dialect: its tables, rows and statements.

:data:`TABLES` is the schema (SQLite's version 9) column by column, :func:`create_statements` creates
it, :func:`run_row`/:func:`checkpoint_row` turn records into rows of it, and
:class:`Statements` holds every statement :class:`~batonflow.core.durable._sql_store.SqlRunStore`
makes, in a dialect's parameter style. The SQL is what SQLite (3.35 and later) and PostgreSQL
both read: ``ON CONFLICT``, ``RETURNING``, ``COALESCE``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..data._json_values import compact_json
from ..errors import CheckpointError
from ._records import ENDED, Checkpoint, RunRecord, final_column

#: The tables of schema version 4, column by column. ``REAL`` is the dialect's double type
#: (``DOUBLE PRECISION`` on PostgreSQL). The columns' order is the order of the records'
#: fields; the SQLite file of version 1 had the first columns of the first two tables.
#: Version 3 took the primary key off ``checkpoints.id`` (see :data:`OTHER_ID`); version 4
#: added ``checkpoint_runs.idempotency_key`` with :data:`KEY_INDEX`, and a forked run's parent
#: (``parent_run_id``, ``parent_seq``) with :data:`PARENT_INDEX`, and ``run_journal``.
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "checkpoint_runs": (
        ("run_id", "TEXT PRIMARY KEY"),
        ("workflow_name", "TEXT NOT NULL"),
        ("status", "TEXT NOT NULL"),
        ("created_at", "REAL NOT NULL"),
        ("updated_at", "REAL NOT NULL"),
        ("result", "TEXT"),
        ("error", "TEXT"),
        ("start_event", "TEXT"),
        ("input", "TEXT"),
        ("traceparent", "TEXT"),
        ("owner", "TEXT"),
        ("pid", "INTEGER"),
        ("flow_ref", "TEXT"),
        ("waiting_seq", "INTEGER"),
        # The key a start was made with: unique where given (KEY_INDEX), since version 4.
        ("idempotency_key", "TEXT"),
        # The run it was forked from, and the checkpoint (seq) it continues from: version 4.
        ("parent_run_id", "TEXT"),
        ("parent_seq", "INTEGER"),
        # The version of the workflow that started it (Workflow.version): SQLite 6, PG 9.
        ("workflow_version", "TEXT"),
        # A child run's parent step, and how a run came from its parent ("fork", "child"):
        # SQLite version 9, PostgreSQL version 12.
        ("parent_step", "TEXT"),
        ("parent_kind", "TEXT"),
        # For stores shared by several servers (PostgreSQL): who holds the run, until when.
        ("lease_owner", "TEXT"),
        ("lease_until", "REAL"),
    ),
    "checkpoints": (
        ("id", "TEXT NOT NULL"),
        ("run_id", "TEXT NOT NULL"),
        ("seq", "INTEGER NOT NULL"),
        ("workflow_name", "TEXT NOT NULL"),
        ("step_name", "TEXT"),
        ("input_event_type", "TEXT"),
        ("output_event_types", "TEXT NOT NULL"),
        ("created_at", "REAL NOT NULL"),
        ("ctx_data", "TEXT NOT NULL"),
        ("final_event", "TEXT"),
        ("inbox_seq", "INTEGER NOT NULL DEFAULT 0"),
        # 0: ctx_data holds the whole state; 1: only the keys its step changed; 2: those keys,
        # some as edits of their previous text (_state_extensions.py); NULL: neither.
        ("state_mode", "INTEGER"),
    ),
    "run_events": (
        ("run_id", "TEXT NOT NULL"),
        ("seq", "INTEGER NOT NULL"),
        ("kind", "TEXT NOT NULL"),
        ("body", "TEXT NOT NULL"),
    ),
    # Journaled calls (ctx.journal), one row per call of a step execution: version 4.
    "run_journal": (
        ("run_id", "TEXT NOT NULL"),
        ("step", "TEXT NOT NULL"),
        ("execution_id", "INTEGER NOT NULL"),
        ("call_index", "INTEGER NOT NULL"),
        ("name", "TEXT NOT NULL"),
        ("attempt", "INTEGER NOT NULL"),
        ("error", "INTEGER NOT NULL"),
        ("body", "TEXT NOT NULL"),
        ("created_at", "REAL NOT NULL"),
    ),
    # A run's budget (core/durable/_budget.py) and the call that waits for it to be raised:
    # version 8 (SQLite), 11 (PostgreSQL).
    "run_budgets": (
        ("run_id", "TEXT PRIMARY KEY"),
        ("budget", "TEXT NOT NULL"),
        ("blocked", "TEXT"),
        ("updated_at", "REAL NOT NULL"),
    ),
    # What a run's LLM calls used, per step (cost NULL: a call's price was unknown).
    "run_usage": (
        ("run_id", "TEXT NOT NULL"),
        ("step", "TEXT NOT NULL"),
        ("calls", "INTEGER NOT NULL"),
        ("prompt_tokens", "INTEGER NOT NULL"),
        ("completion_tokens", "INTEGER NOT NULL"),
        ("total_tokens", "INTEGER NOT NULL"),
        ("cost", "REAL"),
        ("first_at", "REAL NOT NULL"),
    ),
    "run_inbox": (
        ("run_id", "TEXT NOT NULL"),
        ("seq", "INTEGER NOT NULL"),
        ("body", "TEXT NOT NULL"),
        ("key", "TEXT"),
        ("created_at", "REAL NOT NULL"),
    ),
}
#: Each table's keys beyond its columns' own.
_KEYS = {
    "checkpoints": ("UNIQUE (run_id, seq)",),
    "run_events": ("PRIMARY KEY (run_id, seq)",),
    "run_journal": ("PRIMARY KEY (run_id, step, execution_id, call_index)",),
    "run_usage": ("PRIMARY KEY (run_id, step)",),
    # One question takes one answer: an answer's key is "answer:<seq of the question>".
    "run_inbox": ("PRIMARY KEY (run_id, seq)", "UNIQUE (run_id, key)"),
}
#: The checkpoints whose id is not the one made from their run and seq (``"<run_id>:<seq>"``,
#: see :func:`~batonflow.core.durable._records.checkpoint_id`): ids given by a caller, and those of
#: version 2 (random). Only these are indexed by id; a made id is found by its run and seq in
#: the ``(run_id, seq)`` index, so the durable step's insert writes two b-trees, not three.
OTHER_ID = "id <> run_id || ':' || CAST(seq AS TEXT)"
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS checkpoint_runs_by_status "
    "ON checkpoint_runs (status, workflow_name)",
    f"CREATE UNIQUE INDEX IF NOT EXISTS checkpoints_by_other_id ON checkpoints (id) "
    f"WHERE {OTHER_ID}",
)


def column_type(kind: str, real: str = "REAL") -> str:
    """A column's type in a dialect whose double type is ``real``."""
    return kind.replace("REAL", real, 1) if kind.startswith("REAL") else kind


def create_table(table: str, real: str = "REAL", *, name: str | None = None) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for ``table`` of the current version (named ``name``)."""
    return (
        f"CREATE TABLE IF NOT EXISTS {name or table} ("
        + ", ".join(
            [f"{column} {column_type(kind, real)}" for column, kind in TABLES[table]]
            + list(_KEYS.get(table, ()))
        )
        + ")"
    )


def create_statements(real: str = "REAL") -> tuple[str, ...]:
    """``CREATE ... IF NOT EXISTS`` for every table and index of the current version."""
    return tuple(create_table(table, real) for table in TABLES) + _INDEXES


#: The checkpoint columns, in the order of :func:`checkpoint_row`.
CHECKPOINT_COLUMNS = ", ".join(name for name, _ in TABLES["checkpoints"])
#: How many of the run columns a :class:`RunRecord` holds.
RUN_FIELDS = 20
#: The run columns a :class:`RunRecord` holds (the lease columns are PostgreSQL's business).
RUN_COLUMNS = ", ".join(name for name, _ in TABLES["checkpoint_runs"][:RUN_FIELDS])
#: A journaled call's columns after ``run_id``, in the order of ``JournalEntry``'s fields.
JOURNAL_COLUMNS = ", ".join(name for name, _ in TABLES["run_journal"][1:])
#: One run per idempotency key: the index makes two starts with one key (two replicas racing
#: on a client's retries) one run, whichever commits first. Created after the column (a store
#: of an older version gets the column first), so not among the indexes of the tables.
KEY_INDEX = (
    "CREATE UNIQUE INDEX IF NOT EXISTS checkpoint_runs_by_idempotency_key "
    "ON checkpoint_runs (idempotency_key) WHERE idempotency_key IS NOT NULL"
)
#: A run's forks, found by their parent (created after the column, as :data:`KEY_INDEX`).
PARENT_INDEX = (
    "CREATE INDEX IF NOT EXISTS checkpoint_runs_by_parent "
    "ON checkpoint_runs (parent_run_id) WHERE parent_run_id IS NOT NULL"
)


def run_row(record: RunRecord) -> tuple[Any, ...]:
    """``record`` as the values of :data:`RUN_COLUMNS`."""
    return (
        record.run_id,
        record.workflow_name,
        record.status,
        record.created_at,
        record.updated_at,
        record.result,
        record.error,
        record.start_event,
        record.input,
        record.traceparent,
        record.owner,
        record.pid,
        record.flow_ref,
        record.waiting_seq,
        record.idempotency_key,
        record.parent_run_id,
        record.parent_seq,
        record.workflow_version,
        record.parent_step,
        record.parent_kind,
    )


def checkpoint_row(checkpoint: Checkpoint) -> tuple[Any, ...]:
    """``checkpoint`` as the values of :data:`CHECKPOINT_COLUMNS` (``ctx_data`` as JSON).

    Raises:
        CheckpointError: ``ctx_data`` cannot be written as JSON.
    """
    try:
        ctx_json = compact_json(checkpoint.ctx_data)
    except (TypeError, ValueError, RecursionError) as exc:
        raise CheckpointError(
            f"Checkpoint {checkpoint.id} of run {checkpoint.run_id} has ctx_data that is not "
            f"JSON ({exc}); build it with ctx.to_dict()."
        ) from exc
    return (
        checkpoint.id,
        checkpoint.run_id,
        checkpoint.seq,
        checkpoint.workflow_name,
        checkpoint.step_name,
        checkpoint.input_event_type,
        _types_json(checkpoint.output_event_types),
        checkpoint.created_at,
        ctx_json,
        final_column(checkpoint),
        checkpoint.inbox_seq,
        None if checkpoint.state_changes is None else int(checkpoint.state_changes),
    )


#: ``output_event_types`` as JSON, by tuple: a workflow has few distinct ones, and a durable
#: step would encode the same list at every checkpoint. Bounded (see :func:`_types_json`).
_TYPES_JSON: dict[tuple[str, ...], str] = {}


def _types_json(types: tuple[str, ...]) -> str:
    text = _TYPES_JSON.get(types)
    if text is None:
        text = json.dumps(list(types))
        if len(_TYPES_JSON) < 1024:  # a fan-out of many kinds cannot grow it without bound
            _TYPES_JSON[types] = text
    return text


def _marks(n: int) -> str:
    return ", ".join("?" * n)


#: ``status IN (...)`` of the statuses of an ended run, whose record never changes again.
ENDED_SQL = "status IN (" + ", ".join(f"'{status}'" for status in sorted(ENDED)) + ")"


@dataclass(frozen=True, slots=True)
class Statements:
    """The store's SQL in one dialect's parameter style (built once per dialect class)."""

    param: str
    insert_run: str
    record_implicit: str
    set_status: str
    select_run: str
    run_for_key: str
    children: str
    journal_get: str
    journal_put: str
    journal: str
    delete: tuple[str, ...]
    insert_checkpoint: str
    list_checkpoints: str
    latest_checkpoint: str
    get_checkpoint: str
    get_made_checkpoint: str
    last_whole_state: str
    state_changes: str
    append_event: str
    append_end: str
    mark_waiting: str
    events: str
    lock_run: str
    next_inbox_seq: str
    insert_inbox: str
    answered: str
    inbox: str
    holder: str
    set_holder: str
    reopen: str
    let_go: str
    outcome: str
    checkpoint_at: str
    inbox_post: str
    last_event: str

    @classmethod
    def build(cls, param: str, *, state_json: str, lock_row: str = "") -> Statements:
        """The statements with ``param`` for each parameter.

        Args:
            param: The driver's placeholder (``"?"`` or ``"%s"``).
            state_json: An SQL expression giving ``ctx_data``'s ``state`` member as JSON text.
            lock_row: What ends a ``SELECT`` that locks the run's row for the transaction
                (``" FOR UPDATE"``; empty where a transaction locks the whole database).
        """
        checkpoints = f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints"
        text = {
            "insert_run": f"INSERT INTO checkpoint_runs ({RUN_COLUMNS}) VALUES ({_marks(RUN_FIELDS)})",
            "record_implicit": "INSERT INTO checkpoint_runs (run_id, workflow_name, status, "
            "created_at, updated_at) VALUES (?, ?, 'running', ?, ?) ON CONFLICT (run_id) DO NOTHING",
            # An ended run never changes again, whoever writes late (the WHERE, not a read
            # before it, decides); a run that stops here is no longer held by its process.
            "set_status": "UPDATE checkpoint_runs SET status = ?, result = ?, error = ?, "
            "updated_at = ?, waiting_seq = CASE WHEN ? = 'waiting' THEN waiting_seq END, "
            "lease_owner = CASE WHEN ? IN ('running', 'waiting') THEN lease_owner END "
            f"WHERE run_id = ? AND NOT {ENDED_SQL}",
            "select_run": f"SELECT {RUN_COLUMNS} FROM checkpoint_runs WHERE run_id = ?",
            "run_for_key": f"SELECT {RUN_COLUMNS} FROM checkpoint_runs WHERE idempotency_key = ?",
            "children": f"SELECT {RUN_COLUMNS} FROM checkpoint_runs WHERE parent_run_id = ? "
            "ORDER BY created_at, run_id",
            "journal_get": f"SELECT {JOURNAL_COLUMNS} FROM run_journal WHERE run_id = ? "
            "AND step = ? AND execution_id = ? AND call_index = ?",
            # A retry of a step whose call raised records the new outcome in its place.
            "journal_put": f"INSERT INTO run_journal (run_id, {JOURNAL_COLUMNS}) VALUES "
            f"({_marks(9)}) ON CONFLICT (run_id, step, execution_id, call_index) DO UPDATE SET "
            "name = excluded.name, attempt = excluded.attempt, error = excluded.error, "
            "body = excluded.body, created_at = excluded.created_at",
            "journal": f"SELECT {JOURNAL_COLUMNS} FROM run_journal WHERE run_id = ? "
            "ORDER BY created_at, step, execution_id, call_index",
            "insert_checkpoint": f"INSERT INTO checkpoints ({CHECKPOINT_COLUMNS}) "
            f"VALUES ({_marks(12)})",
            "list_checkpoints": f"{checkpoints} WHERE run_id = ? ORDER BY seq",
            "latest_checkpoint": f"{checkpoints} WHERE run_id = ? ORDER BY seq DESC LIMIT 1",
            # An id given by a caller (or version 2's), through the index of those ids: the
            # query repeats the index's condition word for word, so both SQLite and PostgreSQL
            # see that the index applies.
            "get_checkpoint": f"{checkpoints} WHERE id = ? AND {OTHER_ID}",
            # A made id "<run_id>:<seq>", through the (run_id, seq) index.
            "get_made_checkpoint": f"{checkpoints} WHERE run_id = ? AND seq = ? AND id = ?",
            "last_whole_state": "SELECT COALESCE(MAX(seq), 0) FROM checkpoints "
            "WHERE run_id = ? AND seq <= ? AND state_mode = 0",
            "state_changes": f"SELECT {state_json} FROM checkpoints WHERE run_id = ? "
            "AND seq >= ? AND seq <= ? AND state_mode IS NOT NULL ORDER BY seq",
            # One statement takes the next seq and writes the entry: atomic on its own.
            "append_event": "INSERT INTO run_events (run_id, seq, kind, body) SELECT ?, "
            "COALESCE(MAX(seq), 0) + 1, ?, ? FROM run_events WHERE run_id = ? RETURNING seq",
            # The run's last entry, unless the run has ended already (it has its own then).
            "append_end": "INSERT INTO run_events (run_id, seq, kind, body) SELECT ?, "
            "COALESCE(MAX(seq), 0) + 1, 'end', ? FROM run_events WHERE run_id = ? "
            f"HAVING NOT EXISTS (SELECT 1 FROM checkpoint_runs WHERE run_id = ? AND {ENDED_SQL}) "
            "RETURNING seq",
            "mark_waiting": "UPDATE checkpoint_runs SET status = 'waiting', waiting_seq = ?, "
            "updated_at = ? WHERE run_id = ? AND status IN ('running', 'waiting')",
            "events": "SELECT seq, kind, body FROM run_events WHERE run_id = ? AND seq > ? "
            "ORDER BY seq",
            "lock_run": "SELECT status, waiting_seq FROM checkpoint_runs WHERE run_id = ?"
            + lock_row,
            "next_inbox_seq": "SELECT COALESCE(MAX(seq), 0) + 1 FROM run_inbox WHERE run_id = ?",
            "insert_inbox": "INSERT INTO run_inbox (run_id, seq, body, key, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            "answered": "UPDATE checkpoint_runs SET status = 'running', updated_at = ? "
            "WHERE run_id = ?",
            "inbox": "SELECT seq, body, key FROM run_inbox WHERE run_id = ? AND seq > ? "
            "ORDER BY seq",
            # Which process holds a run (see core/_holds.py), and taking it for a resume.
            "holder": "SELECT status, lease_owner FROM checkpoint_runs WHERE run_id = ?" + lock_row,
            "set_holder": "UPDATE checkpoint_runs SET lease_owner = ? WHERE run_id = ? "
            f"AND NOT {ENDED_SQL}",
            # Resuming a run that stopped (or failed, or was cancelled) makes it run again;
            # a completed run is never reopened.
            "reopen": "UPDATE checkpoint_runs SET status = 'running', result = NULL, "
            "error = NULL, waiting_seq = NULL, updated_at = ? WHERE run_id = ? "
            "AND status IN ('interrupted', 'failed', 'cancelled')",
            "let_go": "UPDATE checkpoint_runs SET lease_owner = NULL WHERE run_id = ? "
            "AND lease_owner = ?",
            # What a write leaves behind when it committed (see core/_rechecks.py).
            "outcome": "SELECT status, result, error, updated_at FROM checkpoint_runs "
            "WHERE run_id = ?" + lock_row,
            "checkpoint_at": "SELECT id, created_at FROM checkpoints WHERE run_id = ? AND seq = ?",
            "inbox_post": "SELECT seq FROM run_inbox WHERE run_id = ? AND created_at = ? "
            "AND body = ?",
            "last_event": "SELECT seq, kind, body FROM run_events WHERE run_id = ? "
            "ORDER BY seq DESC LIMIT 1",
        }
        tables = (
            "checkpoints",
            "run_events",
            "run_inbox",
            "run_journal",
            "run_queue",
            "run_budgets",
            "run_usage",
            "checkpoint_runs",
        )
        delete = tuple(f"DELETE FROM {table} WHERE run_id = ?" for table in tables)
        return cls(
            param=param,
            delete=tuple(s.replace("?", param) for s in delete),
            **{name: s.replace("?", param) for name, s in text.items()},
        )


__all__ = [
    "CHECKPOINT_COLUMNS",
    "ENDED_SQL",
    "JOURNAL_COLUMNS",
    "KEY_INDEX",
    "OTHER_ID",
    "PARENT_INDEX",
    "RUN_COLUMNS",
    "RUN_FIELDS",
    "TABLES",
    "Statements",
    "checkpoint_row",
    "column_type",
    "create_statements",
    "create_table",
    "run_row",
]
