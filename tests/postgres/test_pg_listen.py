"""A committed inbox entry reaches the run held by a replica, whatever happened to ``NOTIFY``.

``batonflow serve`` replicas on one PostgreSQL database (the ``Replica`` of
``test_pg_failover.py``). The holder's ``LISTEN`` backend is terminated, as a network blip, a
pooler restart or a fast database restart does, and answers and cancels are posted through
another replica while it reconnects: the reconnect reads the inboxes again. Then notifications
are lost for good (posted by a store that sends none) while ``LISTEN`` stays up: the heartbeat
alone finds them.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from batonflow.core import HumanResponseEvent, WorkflowCheckpointer
from batonflow.core.durable._records import RunRecord
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres.leases import Replication
from replica_flows import StepsFlow
from replicas import Replica

#: Ends the ``LISTEN`` connection of one replica, waiting until its backend is gone.
TERMINATE = (
    "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
    "WHERE application_name = %s AND datname = current_database()"
)


def _listener(url: str, replica: str) -> list[int]:
    """The pids of the backends serving ``replica``'s ``LISTEN`` connection."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s "
            "AND datname = current_database() AND query LIKE 'LISTEN%%'",
            (f"batonflow-listen {replica}",),
        ).fetchall()
    return [int(r[0]) for r in rows]


def _wait_listening(url: str, replica: str, timeout: float = 60) -> list[int]:
    deadline = time.monotonic() + timeout
    while not (pids := _listener(url, replica)):
        assert time.monotonic() < deadline, f"replica {replica} never listened"
        time.sleep(0.05)
    return pids


def _terminate_listener(url: str, replica: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return len(conn.execute(TERMINATE, (f"batonflow-listen {replica}",)).fetchall())


def _start_waiting(replica: Replica, log: Path, count: int) -> list[str]:
    """Start ``count`` runs that ask a question on ``replica``; return once all wait."""
    runs = [
        replica.client.start("steps", log=str(log), n=i, ask=True, pause=0.1).run_id
        for i in range(count)
    ]
    deadline = time.monotonic() + 60
    for run_id in runs:
        while replica.client.get(run_id).status != "waiting":
            assert time.monotonic() < deadline, f"run {run_id} never asked its question"
            time.sleep(0.05)
    return runs


def _wait_all(replica: Replica, runs: list[str], timeout: float) -> dict[str, tuple]:
    """Each run's (status, result) once it ended; fails at ``timeout`` naming those that did not."""
    deadline = time.monotonic() + timeout
    ended: dict[str, tuple] = {}
    while len(ended) < len(runs):
        for run_id in runs:
            if run_id not in ended and (run := replica.client.get(run_id)).done:
                ended[run_id] = (run.status, run.result)
        if len(ended) < len(runs):
            assert time.monotonic() < deadline, (
                f"runs never got their inbox entries: {sorted(set(runs) - set(ended))}"
            )
            time.sleep(0.1)
    return ended


async def test_after_listen_reconnects_every_held_runs_inbox_is_read_again(postgres_url):
    """Posts committed while the LISTEN backend was terminated (their NOTIFY went to nobody)
    reach on_inbox once LISTEN is back, with no heartbeat in between."""
    holder = PostgresCheckpointStore(postgres_url, replica_id="holder", lease_seconds=600)
    other = PostgresCheckpointStore(postgres_url, replica_id="other")
    runs = [uuid.uuid4().hex for _ in range(3)]
    now = time.time()
    for run_id in runs:
        holder.create_run(RunRecord(run_id, "Flow", "running", now, now, owner="server"))
    heads: dict[str, int] = {}
    arrived = asyncio.Event()

    def on_inbox(run_id: str, seq: int) -> None:
        heads[run_id] = max(seq, heads.get(run_id, 0))
        if heads == {runs[0]: 2, runs[1]: 1}:
            arrived.set()

    replication = Replication(holder, on_takeover=lambda r: None, on_inbox=on_inbox)
    try:
        await replication.start()
        await asyncio.wait_for(replication.listening.wait(), 10)
        assert await asyncio.to_thread(_terminate_listener, postgres_url, "holder") == 1
        for run_id in (runs[0], runs[0], runs[1]):
            other.post_event(run_id, '{"x": 1}')
        await asyncio.wait_for(arrived.wait(), 30)
        assert runs[2] not in heads  # an empty inbox is not reported
    finally:
        await replication.stop()
        holder.close()
        other.close()


async def test_after_listen_reconnects_the_readers_of_runs_held_elsewhere_look_again(
    postgres_url,
):
    """A stream reader on a replica waits for the NOTIFY of its run's next log entry; an entry
    logged while that replica's LISTEN was down woke nobody, so the reconnect wakes every
    reader (rather than their next keep-alive, 15 s later)."""
    from types import SimpleNamespace

    from batonflow.apps._replicas import ReplicaSet

    reader = PostgresCheckpointStore(postgres_url, replica_id="reader", lease_seconds=600)
    manager = SimpleNamespace(records=reader, workflows=None, live={}, checkpointers={})
    replicas = ReplicaSet(manager)  # type: ignore[arg-type]
    try:
        await replicas.start()
        await asyncio.wait_for(replicas.replication.listening.wait(), 10)
        followed = replicas.changed("run-held-elsewhere")
        await asyncio.sleep(0.5)
        assert not followed.is_set()
        replicas.replication.listening.clear()
        assert await asyncio.to_thread(_terminate_listener, postgres_url, "reader") == 1
        # Nothing is logged, nothing announced: only the reconnect can wake the reader.
        await asyncio.wait_for(followed.wait(), 30)
        assert replicas.replication.listening.is_set()
    finally:
        await replicas.replication.stop()
        reader.close()


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_answers_and_cancels_posted_while_listen_reconnects_reach_the_runs(postgres_url, tmp_path):
    """LISTEN of the holder terminated, answers and cancels posted through the other replica at
    once: every answer is taken, every cancel cancels, each run ends once."""
    # A heartbeat every 200 s: within the test only the re-read after LISTEN reconnects can
    # deliver what was posted while it was down.
    holder = Replica("r0", postgres_url, tmp_path, lease=600.0)
    other = Replica("r1", postgres_url, tmp_path, lease=600.0)
    try:
        runs = _start_waiting(holder, tmp_path / "steps.log", 6)
        answered, cancelled = runs[:4], runs[4:]
        _wait_listening(postgres_url, "r0")
        assert _terminate_listener(postgres_url, "r0") == 1
        for run_id in answered:
            assert other.client.answer(run_id, f"yes {run_id}").status == "running"
        cancels = [threading.Thread(target=other.client.cancel, args=(r,)) for r in cancelled]
        for thread in cancels:
            thread.start()
        ended = _wait_all(other, runs, timeout=60)
        for thread in cancels:
            thread.join(30)
        for run_id in answered:
            status, result = ended[run_id]
            assert status == "completed", (run_id, status, result)
            assert result["answer"] == f"yes {run_id}"
        for run_id in cancelled:
            assert ended[run_id][0] == "cancelled"
        for run_id in runs:
            ends = [e for e in other.client.events(run_id) if e.is_end]
            assert len(ends) == 1, run_id
        assert _wait_listening(postgres_url, "r0")  # and it listens again
    finally:
        holder.stop()
        other.stop()


class _Unannounced(PostgresCheckpointStore):
    """A store whose inbox posts send no ``NOTIFY``: as if every notification got lost."""

    def _posted(self, conn: object, run_id: str, seq: int) -> None:
        pass


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_heartbeat_alone_delivers_answers_and_cancels_nobody_announced(postgres_url, tmp_path):
    """Answers and a cancel committed with no NOTIFY while LISTEN stays up reach the runs on
    the holder's next heartbeat (one query for all its runs)."""
    holder = Replica("r0", postgres_url, tmp_path, lease=3.0)  # a heartbeat every second
    silent = _Unannounced(postgres_url)
    try:
        runs = _start_waiting(holder, tmp_path / "steps.log", 4)
        listening = _wait_listening(postgres_url, "r0")
        poster = WorkflowCheckpointer(StepsFlow(), store=silent)
        for run_id in runs[:3]:
            poster.send_event(run_id, HumanResponseEvent(response=f"late {run_id}"), answer=True)
        poster.request_cancel(runs[3])
        ended = _wait_all(holder, runs, timeout=60)
        for n, run_id in enumerate(runs[:3]):
            assert ended[run_id] == ("completed", {"value": 2 * n, "answer": f"late {run_id}"})
        assert ended[runs[3]][0] == "cancelled"
        assert _listener(postgres_url, "r0") == listening  # LISTEN never reconnected
    finally:
        silent.close()
        holder.stop()
