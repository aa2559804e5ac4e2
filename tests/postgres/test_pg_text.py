"""Text PostgreSQL cannot hold (NUL, lone surrogates) is refused by every method, by name.

PostgreSQL's ``text`` has no NUL character, and a lone surrogate cannot even be encoded for
the wire; the driver says so without naming the value (a ``DataError``, or a
``UnicodeEncodeError`` that is not a driver error at all). The store names the text and the
fix in an :class:`UnstorableTextError`, which is a ``CheckpointError`` and a ``ValueError``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from batonflow.core import UnstorableTextError
from batonflow.core.durable._records import Checkpoint, RunRecord
from batonflow.core.errors import CheckpointError
from batonflow.postgres import PostgresCheckpointStore

BAD = [
    pytest.param("run\x00x", "a NUL character at position 3", id="nul"),
    pytest.param("run\ud800x", "a lone surrogate (U+D800) at position 3", id="lone-surrogate"),
]


def _record(run_id: str, **fields: Any) -> RunRecord:
    now = time.time()
    return RunRecord(run_id, fields.pop("workflow_name", "Flow"), "running", now, now, **fields)


def _checkpoint(run_id: str, **fields: Any) -> Checkpoint:
    values = {"id": f"{run_id}:1", "run_id": run_id, "workflow_name": "Flow", "step_name": "s"}
    values.update(fields)
    return Checkpoint(
        values["id"],
        values["run_id"],
        values["workflow_name"],
        values["step_name"],
        None,
        (),
        time.time(),
        {},
        1,
    )


#: Every method that takes text, each given ``bad`` in one of its text arguments.
CALLS: dict[str, Callable[[PostgresCheckpointStore, str], Any]] = {
    "create_run(run_id)": lambda s, bad: s.create_run(_record(bad)),
    "create_run(workflow_name)": lambda s, bad: s.create_run(_record("r1", workflow_name=bad)),
    "create_run(traceparent)": lambda s, bad: s.create_run(_record("r1", traceparent=bad)),
    "run": lambda s, bad: s.run(bad),
    "runs(workflow_name)": lambda s, bad: s.runs(workflow_name=bad),
    "set_status": lambda s, bad: s.set_status(bad, "completed"),
    "set_status(error)": lambda s, bad: s.set_status("ok", "failed", error=bad),
    "finish_run": lambda s, bad: s.finish_run(bad, "completed", end="{}"),
    "finish_run(result)": lambda s, bad: s.finish_run("ok", "completed", result=bad),
    "delete": lambda s, bad: s.delete(bad),
    "put(run_id)": lambda s, bad: s.put(_checkpoint(bad)),
    "put(step_name)": lambda s, bad: s.put(_checkpoint("r2", step_name=bad)),
    "list": lambda s, bad: s.list(bad),
    "latest": lambda s, bad: s.latest(bad),
    "get(checkpoint_id)": lambda s, bad: s.get(bad),
    "append_event": lambda s, bad: s.append_event(bad, "event", "{}"),
    "append_event(body)": lambda s, bad: s.append_event("ok", "event", bad),
    "append_event(waiting)": lambda s, bad: s.append_event(bad, "event", "{}", waiting=True),
    "events": lambda s, bad: s.events(bad),
    "post_event": lambda s, bad: s.post_event(bad, "{}"),
    "post_event(body)": lambda s, bad: s.post_event("ok", bad),
    "inbox": lambda s, bad: s.inbox(bad),
    "claim": lambda s, bad: s.claim(bad),
    "release": lambda s, bad: s.release(bad),
    "lease_of": lambda s, bad: s.lease_of(bad),
    "claim_expired(owner)": lambda s, bad: s.claim_expired(owner=bad),
    "claim_expired(workflows)": lambda s, bad: s.claim_expired(workflows=["a", bad]),
}


@pytest.fixture(scope="module")
def store(postgres_server):
    """One store (a replica, so the lease methods work) on a database of this module."""
    import psycopg

    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute('DROP DATABASE IF EXISTS "t_pg_text" WITH (FORCE)')
        conn.execute('CREATE DATABASE "t_pg_text"')
    with PostgresCheckpointStore(postgres_server.url("t_pg_text"), replica_id="r") as s:
        s.create_run(_record("ok"))
        yield s


@pytest.mark.parametrize("bad, problem", BAD)
@pytest.mark.parametrize("call", sorted(CALLS))
def test_every_method_refuses_unstorable_text_by_name(store, call, bad, problem):
    """The error names the text, what is wrong with it and the fix; the store still works."""
    with pytest.raises(UnstorableTextError) as info:
        CALLS[call](store, bad)
    assert isinstance(info.value, CheckpointError) and isinstance(info.value, ValueError)
    message = str(info.value)
    assert f"PostgreSQL cannot store the text {bad!r}: it holds {problem}." in message
    assert message.endswith(
        "(ids, names and filters are text without NUL characters or lone surrogates)."
    )
    assert store.run("ok") is not None  # the connection went back to the pool in order


@pytest.mark.parametrize("bad, problem", BAD)
def test_a_replica_id_that_cannot_be_stored_is_refused_at_once(postgres_url, bad, problem):
    """The replica's name goes into every lease: it is checked when the store is made."""
    with pytest.raises(UnstorableTextError, match=re.escape(f"it holds {problem}")):
        PostgresCheckpointStore(postgres_url, replica_id=bad)


def test_text_with_other_unicode_is_stored(store):
    """Only NUL and lone surrogates are refused: other text, emoji and U+FFFD are kept."""
    run_id = "run-é-🙂-\ufffd"
    store.create_run(_record(run_id, workflow_name="Flöw"))
    assert store.run(run_id).workflow_name == "Flöw"
    assert [r.run_id for r in store.runs(workflow_name="Flöw")] == [run_id]
