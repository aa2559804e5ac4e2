"""Two server replicas on one PostgreSQL database, over real HTTP, in one process.

Each replica is a :func:`create_app` on its own :class:`PostgresCheckpointStore` (its own
replica id and connection pool), served from a thread, used through ``batonflow.client``.
Killing a replica for real (SIGKILL) is in ``test_pg_failover.py``; here: any replica answers and
streams any run.
"""

from __future__ import annotations

import threading

import pytest
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.client import Client
from batonflow.client.errors import ConflictError
from batonflow.postgres import PostgresCheckpointStore
from replica_flows import ApprovalFlow


@pytest.fixture
def replicas(postgres_url):
    """Two replicas ``a`` and ``b`` serving ApprovalFlow from one database; their clients."""
    servers = []
    clients = []
    for name in ("a", "b"):
        store = PostgresCheckpointStore(postgres_url, replica_id=name, lease_seconds=5)
        app = create_app({"approval": ApprovalFlow(timeout=None)}, checkpoints=store)
        server = BackgroundServer(app).__enter__()
        servers.append((server, store))
        clients.append(Client(server.url, timeout=20))
    yield clients
    for client in clients:
        client.close()
    for server, store in servers:
        server.__exit__(None, None, None)
        store.close()


def _wait_for(client: Client, run_id: str, status: str) -> None:
    for event in client.events(run_id):
        if event.type == "InputRequiredEvent" or event.is_end:
            break
    assert client.get(run_id).status == status


def test_a_run_started_on_one_replica_is_answered_and_streamed_on_the_other(replicas):
    """Start on a, answer on b (a delivers it through NOTIFY), stream the whole run from b."""
    a, b = replicas
    run_id = a.start("approval", topic="ship").run_id
    _wait_for(b, run_id, "waiting")
    assert [r.run_id for r in b.list()] == [run_id]
    b.answer(run_id, "yes")
    with pytest.raises(ConflictError):
        b.answer(run_id, "again")  # one answer per question, whichever replica gets it
    assert b.wait(run_id, timeout=20).result == "ship: yes"
    events = list(b.events(run_id))
    assert events[0].type == "InputRequiredEvent" and events[-1].is_end
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


def test_a_stream_followed_on_the_other_replica_sees_the_run_finish(replicas):
    """A reader on b follows a run held by a, live, until its end entry."""
    a, b = replicas
    run_id = a.start("approval", topic="live").run_id
    _wait_for(a, run_id, "waiting")
    got: list = []
    reader = threading.Thread(target=lambda: got.extend(b.events(run_id)))
    reader.start()
    a.answer(run_id, "ok")
    reader.join(20)
    assert not reader.is_alive(), "the reader on b never saw the run end"
    assert got[-1].is_end and got[-1].data["result"] == "live: ok"


def test_resuming_a_stream_on_another_replica_has_no_gap_and_no_repeat(replicas):
    """Read the first event on a, go on from b after its id: the rest, once each."""
    a, b = replicas
    run_id = a.start("approval", topic="resume").run_id
    first = next(iter(a.events(run_id)))
    a.answer(run_id, "go")
    a.wait(run_id, timeout=20)
    rest = list(b.events(run_id, after=first.seq))
    whole = list(a.events(run_id))
    assert [e.seq for e in [first, *rest]] == [e.seq for e in whole]


def test_a_stream_of_an_ended_run_without_its_end_entry_still_ends(replicas, postgres_url):
    """A run recorded as ended whose log has no ``end`` (written by an older version) does not
    keep a reader on another replica waiting: its end is made from the record."""
    import psycopg

    a, b = replicas
    run_id = a.start("approval", topic="old").run_id
    _wait_for(a, run_id, "waiting")
    a.answer(run_id, "fine")
    a.wait(run_id, timeout=20)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DELETE FROM run_events WHERE run_id = %s AND kind = 'end'", (run_id,))
    got: list = []
    reader = threading.Thread(target=lambda: got.extend(b.events(run_id, reconnect=False)))
    reader.start()
    reader.join(20)
    assert not reader.is_alive(), "the reader waited for an end that will never come"
    assert [e.is_end for e in got][-2:] == [False, True]
    assert got[-1].data == {"status": "completed", "result": "old: fine", "error": None}


def test_a_run_held_by_one_replica_is_cancelled_through_the_other(replicas):
    """A cancel sent to b for a run a holds goes through the run's inbox: a cancels it, and
    b answers with the outcome."""
    a, b = replicas
    run_id = a.start("approval", topic="stop").run_id
    _wait_for(a, run_id, "waiting")
    assert b.cancel(run_id).status == "cancelled"
    assert a.get(run_id).status == "cancelled"
    events = list(b.events(run_id))
    assert events[-1].is_end and events[-1].data["status"] == "cancelled"
    assert [e.is_end for e in events].count(True) == 1
    with pytest.raises(ConflictError, match="cancelled"):
        b.cancel(run_id)
