"""The PostgreSQL store's SQL: its schema versions and the statements only a shared server needs.

The run store's own statements are core's (:class:`~batonflow.core.durable._sql_schema.Statements`, in
psycopg's ``%s`` style); here are the migrations from one schema version to the next, and the
statements of leases, fencing and ``NOTIFY`` (see :mod:`batonflow.postgres.store`).
"""

from __future__ import annotations

from dataclasses import replace

from batonflow.core.durable._queue import queue_statements
from batonflow.core.durable._schedules import schedule_statements
from batonflow.core.durable._sql_schema import (
    CHECKPOINT_COLUMNS,
    ENDED_SQL,
    KEY_INDEX,
    PARENT_INDEX,
    RUN_COLUMNS,
    RUN_FIELDS,
    Statements,
    create_statements,
    create_table,
)

SCHEMA_VERSION = 13
COMPONENT = "checkpoints"
EVENTS_CHANNEL = "batonflow_events"
INBOX_CHANNEL = "batonflow_inbox"
#: Announces that a replica stopping cleanly released its runs (payload: its store's lease
#: token, so that a process restarted under the same replica id takes them over too).
RELEASE_CHANNEL = "batonflow_release"

#: The server's clock, so leases do not depend on the replicas' clocks agreeing.
NOW = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"

#: When the database server (re)started, on its own clock.
_STARTED = "EXTRACT(EPOCH FROM pg_postmaster_start_time())::double precision"
#: A lease that ran out, and not because the database itself was down: a lease last granted
#: before a restart gets one lease length (its own: until - since) after the restart for its
#: holder to renew it. Nobody could renew while the server was away, so without this the first
#: replica whose heartbeat comes after a restart longer than the lease would take every other
#: live replica's runs over, and their steps in flight would run twice. A lease granted after
#: the restart (or recorded before ``lease_since`` existed) has no such grace.
EXPIRED = (
    f"lease_until < {NOW} AND NOT COALESCE(lease_since < {_STARTED} "
    f"AND {_STARTED} + (lease_until - lease_since) > {NOW}, FALSE)"
)

#: Version 2 is the first PostgreSQL schema: the tables of core's SQL store, as they are
#: (those of the current version: a new database gets them whole, and the later migrations
#: find nothing left to do).
_SCHEMA = create_statements(real="DOUBLE PRECISION")
#: What each version adds, applied in order to a database at an older version.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    2: _SCHEMA,
    # No primary key on checkpoints.id: only ids not of the "<run_id>:<seq>" form the
    # checkpointer makes are indexed (the index of _SCHEMA), the others are found by run and seq.
    3: ("ALTER TABLE checkpoints DROP CONSTRAINT IF EXISTS checkpoints_pkey", *_SCHEMA),
    # The lease's holder is a store (a process), not only a replica name: see the module doc.
    4: ("ALTER TABLE checkpoint_runs ADD COLUMN IF NOT EXISTS lease_token TEXT",),
    # The id of the claim or release that last changed the lease: a claim whose answer was
    # lost finds the runs it took (see postgres/store.py, claim_expired).
    5: ("ALTER TABLE checkpoint_runs ADD COLUMN IF NOT EXISTS lease_change TEXT",),
    # When the lease was last granted or renewed (server time): see EXPIRED.
    6: ("ALTER TABLE checkpoint_runs ADD COLUMN IF NOT EXISTS lease_since DOUBLE PRECISION",),
    # The key a start was made with, one run per key (core's KEY_INDEX): two replicas taking
    # the same retried start make one run. A forked run's parent and fork point. The
    # journaled calls (ctx.journal).
    7: (
        "ALTER TABLE checkpoint_runs ADD COLUMN IF NOT EXISTS idempotency_key TEXT",
        "ALTER TABLE checkpoint_runs ADD COLUMN IF NOT EXISTS parent_run_id TEXT",
        "ALTER TABLE checkpoint_runs ADD COLUMN IF NOT EXISTS parent_seq INTEGER",
        KEY_INDEX,
        PARENT_INDEX,
        create_table("run_journal", real="DOUBLE PRECISION"),
    ),
    # The schedules and their firings, keyed by (schedule, time): core/durable/_schedules.py.
    8: schedule_statements(real="DOUBLE PRECISION"),
    # The version of the workflow that started a run (Workflow.version), checked before a
    # resume or a takeover (core/durable/_versions.py).
    9: ("ALTER TABLE checkpoint_runs ADD COLUMN IF NOT EXISTS workflow_version TEXT",),
    # The run queue: queued runs claimed under limits (core/durable/_queue.py).
    10: queue_statements(real="DOUBLE PRECISION"),
    # A run's budget and its LLM calls' usage per step: core/durable/_budget.py.
    11: (
        create_table("run_budgets", real="DOUBLE PRECISION"),
        create_table("run_usage", real="DOUBLE PRECISION"),
    ),
    # A child run's parent step, and how a run came from its parent ("fork", "child").
    12: (
        "ALTER TABLE checkpoint_runs ADD COLUMN IF NOT EXISTS parent_step TEXT",
        "ALTER TABLE checkpoint_runs ADD COLUMN IF NOT EXISTS parent_kind TEXT",
    ),
    # No new table or column: checkpoints may hold state edits (state_mode 2,
    # core/durable/_state_extensions.py), which a batonflow reading up to version 12 would read
    # as whole values; the version makes it refuse the database instead.
    13: (),
}
#: True in a write's WHERE while the run's lease is held by the store whose token is the
#: second parameter, or while the first parameter (the replica id) is NULL: no fencing.
HELD = "(%s::text IS NULL OR lease_token IS NOT DISTINCT FROM %s)"

SQL = replace(
    Statements.build("%s", state_json="(ctx_data::json -> 'state')::text", lock_row=" FOR UPDATE"),
    # A replica's new run is leased to it (to this store's token) from the start.
    insert_run=f"INSERT INTO checkpoint_runs ({RUN_COLUMNS}, lease_owner, lease_token, "
    f"lease_until, lease_since) VALUES ({', '.join(['%s'] * RUN_FIELDS)}, %s, %s, "
    f"CASE WHEN %s THEN {NOW} + %s END, CASE WHEN %s THEN {NOW} END)",
)
#: A status change, made only while this store holds the run and it has not ended; an ended
#: run's lease is released.
SET_STATUS = (
    "UPDATE checkpoint_runs SET status = %s, result = %s, error = %s, updated_at = %s, "
    "waiting_seq = CASE WHEN %s = 'waiting' THEN waiting_seq END, "
    "lease_owner = CASE WHEN %s THEN NULL ELSE lease_owner END, "
    "lease_token = CASE WHEN %s THEN NULL ELSE lease_token END, "
    "lease_until = CASE WHEN %s THEN NULL ELSE lease_until END "
    f"WHERE run_id = %s AND NOT {ENDED_SQL} AND {HELD} RETURNING 1"
)
#: A run's status change (with its ``end`` log entry when the 2nd parameter is true) in one
#: round trip, as ``_fence`` + ``append_end`` + :data:`SET_STATUS` in one transaction made
#: it: the run's row is locked, and nothing is written unless this store may
#: (it holds the run, or no replica id: the 1st parameter) and the run has not ended. Returns
#: the row's lease_owner and status as locked, the end entry's seq (NULL without one; the
#: store announces it after the commit, see ``_notes``), and the run's record as written (its
#: columns NULL when nothing was).
FINISH = (
    "WITH run AS (SELECT lease_owner, lease_token, status FROM checkpoint_runs "
    "WHERE run_id = %(run_id)s FOR UPDATE), "
    "ok AS (SELECT 1 WHERE CASE WHEN EXISTS (SELECT 1 FROM run) THEN EXISTS (SELECT 1 FROM run "
    f"WHERE NOT {ENDED_SQL} AND (%(replica)s::text IS NULL "
    "OR lease_token IS NOT DISTINCT FROM %(token)s)) ELSE %(replica)s::text IS NULL END), "
    "ins AS (INSERT INTO run_events (run_id, seq, kind, body) SELECT %(run_id)s, "
    "COALESCE((SELECT MAX(seq) FROM run_events WHERE run_id = %(run_id)s), 0) + 1, 'end', "
    "%(end)s WHERE %(has_end)s AND EXISTS (SELECT 1 FROM ok) RETURNING seq), "
    "upd AS (UPDATE checkpoint_runs SET status = %(status)s, result = %(result)s, "
    "error = %(error)s, updated_at = %(stamp)s, "
    "waiting_seq = CASE WHEN %(status)s = 'waiting' THEN waiting_seq END, "
    "lease_owner = CASE WHEN %(ended)s THEN NULL ELSE lease_owner END, "
    "lease_token = CASE WHEN %(ended)s THEN NULL ELSE lease_token END, "
    "lease_until = CASE WHEN %(ended)s THEN NULL ELSE lease_until END "
    f"WHERE run_id = %(run_id)s AND EXISTS (SELECT 1 FROM ok) RETURNING {RUN_COLUMNS}) "
    "SELECT r.lease_owner, r.status, "
    "(SELECT seq FROM ins), u.* "
    "FROM (SELECT 1) AS one LEFT JOIN run AS r ON TRUE LEFT JOIN upd AS u ON TRUE"
)
#: The checkpoint of a recorded run in one round trip: the run's row is locked for the
#: statement (so a replica taking the run over waits for it) and the insert happens only while
#: this store holds the run. Returns (rows of the run, rows inserted).
PUT_FENCED = (
    "WITH run AS (SELECT lease_token FROM checkpoint_runs WHERE run_id = %s FOR UPDATE), "
    f"ins AS (INSERT INTO checkpoints ({CHECKPOINT_COLUMNS}) "
    f"SELECT {', '.join(['%s'] * 12)} WHERE NOT EXISTS "
    f"(SELECT 1 FROM run WHERE NOT {HELD}) RETURNING 1) "
    "SELECT (SELECT count(*) FROM run), (SELECT count(*) FROM ins)"
)
#: A stream event in one round trip, fenced as :data:`PUT_FENCED`; returns its seq (announced
#: after the commit: no ``NOTIFY`` in the statement, see ``_notes``).
APPEND_FENCED = (
    "WITH run AS (SELECT lease_token FROM checkpoint_runs WHERE run_id = %s FOR UPDATE), "
    "ins AS (INSERT INTO run_events (run_id, seq, kind, body) "
    "SELECT %s, COALESCE((SELECT MAX(seq) FROM run_events WHERE run_id = %s), 0) + 1, %s, %s "
    f"WHERE NOT EXISTS (SELECT 1 FROM run WHERE NOT {HELD}) RETURNING seq) "
    "SELECT seq FROM ins"
)
#: Log entries committed meanwhile, announced in one transaction (``_notes``): one
#: ``NOTIFY`` per payload (``"run_id seq"``), the commit lock taken once for all of them.
ANNOUNCE = "SELECT pg_notify(%s, p) FROM unnest(%s::text[]) AS p"
#: The fence of a transaction: locks the run's row and tells who holds it.
FENCE = "SELECT lease_owner, lease_token, status FROM checkpoint_runs WHERE run_id = %s FOR UPDATE"
RENEW = (
    f"UPDATE checkpoint_runs SET lease_until = {NOW} + %s, lease_since = {NOW} "
    "WHERE lease_token = %s RETURNING run_id"
)
#: Takes the runs nobody runs (see ``claim_expired``), marking them with the claim's id.
CLAIM_EXPIRED = (
    "UPDATE checkpoint_runs SET lease_owner = %s, lease_token = %s, "
    f"lease_until = {NOW} + %s, lease_since = {NOW}, lease_change = %s "
    "WHERE run_id IN (SELECT run_id FROM checkpoint_runs "
    "WHERE status = ANY(%s) AND (%s::text IS NULL OR owner = %s) "
    "AND (%s::text[] IS NULL OR workflow_name = ANY(%s)) AND NOT run_id = ANY(%s::text[]) "
    "AND ((lease_owner IS NOT NULL AND lease_token IS DISTINCT FROM %s "
    f"AND {EXPIRED}) OR (lease_owner IS NULL AND status = ANY(%s))) "
    "ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED) "
    f"AND NOT {ENDED_SQL} RETURNING {RUN_COLUMNS}"
)
#: What a claim whose answer was lost took: the runs it marked that this store still holds.
CLAIMED = (
    f"SELECT {RUN_COLUMNS} FROM checkpoint_runs WHERE lease_change = %s AND lease_token = %s "
    f"AND NOT {ENDED_SQL} ORDER BY created_at FOR UPDATE"
)
CLAIM_ONE = (
    "UPDATE checkpoint_runs SET lease_owner = %s, lease_token = %s, "
    f"lease_until = {NOW} + %s, lease_since = {NOW} WHERE run_id = %s AND NOT {ENDED_SQL} "
    f"AND (lease_owner IS NULL OR lease_owner = %s OR ({EXPIRED})) "
    "RETURNING run_id"
)
RELEASE = (
    "UPDATE checkpoint_runs SET lease_owner = NULL, lease_token = NULL, lease_until = NULL, "
    "lease_change = %s WHERE run_id = ANY(%s) AND lease_owner = %s AND lease_token = %s "
    "RETURNING run_id"
)
#: What a release whose answer was lost let go of: the runs it marked, still free.
RELEASED = (
    "SELECT run_id FROM checkpoint_runs WHERE run_id = ANY(%s) AND lease_change = %s "
    "AND lease_token IS NULL ORDER BY run_id FOR UPDATE"
)
INBOX_HEADS = (
    "SELECT r.run_id, max(i.seq) FROM checkpoint_runs r "
    "JOIN run_inbox i ON i.run_id = r.run_id "
    "WHERE r.lease_owner = %s AND r.lease_token = %s GROUP BY r.run_id"
)
LEASE_OF = f"SELECT lease_owner, lease_until - {NOW} FROM checkpoint_runs WHERE run_id = %s"
#: One claim (or admission) of a workflow's queued runs at a time, across replicas.
QUEUE_LOCK = "SELECT pg_advisory_xact_lock(hashtext('batonflow.queue:' || %s))"
#: Claimed runs are leased to the claiming store, marked with the claim's id.
QUEUE_LEASED = (
    "UPDATE checkpoint_runs SET lease_owner = %s, lease_token = %s, "
    f"lease_until = {NOW} + %s, lease_since = {NOW}, lease_change = %s WHERE run_id = ANY(%s)"
)
#: A queued run recorded in one statement (no ``max_queued`` to check): the run, unleased,
#: and its place in the queue.
QUEUE_INSERT = (
    f"WITH run AS (INSERT INTO checkpoint_runs ({RUN_COLUMNS}) "
    f"VALUES ({', '.join(['%s'] * (RUN_COLUMNS.count(',') + 1))}) RETURNING run_id) "
    "INSERT INTO run_queue (run_id, workflow_name, queue_key, priority, enqueued_at) "
    "SELECT run_id, %s, %s, %s, %s FROM run"
)
#: A claim under ``max_running`` alone (nothing store-wide to count) in one statement: the
#: queue's rows are locked and skipped by the other replicas' claims, each run goes to one.
QUEUE_CLAIM_FREE = (
    "WITH picked AS (SELECT q.run_id FROM run_queue q JOIN checkpoint_runs r "
    "ON r.run_id = q.run_id WHERE q.workflow_name = %(workflow)s AND q.started_at IS NULL "
    "AND r.status = 'queued' ORDER BY q.priority DESC, q.enqueued_at, q.run_id "
    "LIMIT %(want)s FOR UPDATE SKIP LOCKED), "
    "started AS (UPDATE run_queue SET started_at = %(now)s "
    "WHERE run_id IN (SELECT run_id FROM picked)) "
    "UPDATE checkpoint_runs SET status = 'running', updated_at = %(now)s, "
    f"lease_owner = %(replica)s, lease_token = %(token)s, lease_until = {NOW} + %(lease)s, "
    f"lease_since = {NOW}, lease_change = %(claim)s "
    "WHERE run_id IN (SELECT run_id FROM picked) AND status = 'queued' "
    f"RETURNING {RUN_COLUMNS}"
)
#: What a claim whose answer was lost took.
QUEUE_CLAIMED = f"SELECT {RUN_COLUMNS} FROM checkpoint_runs WHERE lease_change = %s ORDER BY run_id"
SETUP_LOCK = "SELECT pg_advisory_xact_lock(hashtext('batonflow.schema'))"
SCHEMA_TABLE = (
    "CREATE TABLE IF NOT EXISTS batonflow_schema "
    "(component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
)
SET_VERSION = (
    "INSERT INTO batonflow_schema (component, version) VALUES (%s, %s) "
    "ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version"
)

__all__ = [
    "ANNOUNCE",
    "APPEND_FENCED",
    "CLAIMED",
    "CLAIM_EXPIRED",
    "CLAIM_ONE",
    "COMPONENT",
    "EVENTS_CHANNEL",
    "FENCE",
    "FINISH",
    "HELD",
    "INBOX_CHANNEL",
    "INBOX_HEADS",
    "LEASE_OF",
    "MIGRATIONS",
    "NOW",
    "PUT_FENCED",
    "QUEUE_CLAIMED",
    "QUEUE_CLAIM_FREE",
    "QUEUE_INSERT",
    "QUEUE_LEASED",
    "QUEUE_LOCK",
    "RELEASE",
    "RELEASED",
    "RELEASE_CHANNEL",
    "RENEW",
    "SCHEMA_TABLE",
    "SCHEMA_VERSION",
    "SETUP_LOCK",
    "SET_STATUS",
    "SET_VERSION",
    "SQL",
]
