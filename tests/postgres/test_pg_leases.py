"""Replication: heartbeats keep leases, dead replicas' runs are taken over, NOTIFY wakes peers."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from batonflow.core.durable._records import RunRecord
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres.leases import Replication


def _record(run_id: str) -> RunRecord:
    now = time.time()
    return RunRecord(run_id, "Flow", "running", now, now, owner="server")


async def test_a_replica_takes_over_a_dead_replicas_runs(postgres_url):
    """Runs of a replica that stopped renewing are handed to the live one's on_takeover."""
    dead = PostgresCheckpointStore(postgres_url, replica_id="dead", lease_seconds=0.6)
    live = PostgresCheckpointStore(postgres_url, replica_id="live", lease_seconds=0.6)
    run_id = uuid.uuid4().hex
    dead.create_run(_record(run_id))
    taken: list[str] = []
    arrived = asyncio.Event()

    def on_takeover(record: RunRecord) -> None:
        taken.append(record.run_id)
        arrived.set()

    replication = Replication(live, on_takeover=on_takeover, interval=0.1)
    assert await replication.start() == []  # the dead replica's lease is still alive
    await asyncio.wait_for(arrived.wait(), 10)
    await replication.stop()
    assert taken == [run_id]
    assert live.lease_of(run_id)[0] == "live"
    dead.close()
    live.close()


async def test_heartbeats_keep_a_live_replicas_runs(postgres_url):
    """A replica that renews its leases keeps its runs for many lease lengths."""
    a = PostgresCheckpointStore(postgres_url, replica_id="a", lease_seconds=0.5)
    b = PostgresCheckpointStore(postgres_url, replica_id="b", lease_seconds=0.5)
    run_id = uuid.uuid4().hex
    a.create_run(_record(run_id))
    stolen: list[str] = []
    keeper = Replication(a, on_takeover=lambda r: None, interval=0.1)
    thief = Replication(b, on_takeover=lambda r: stolen.append(r.run_id), interval=0.1)
    await keeper.start()
    await thief.start()
    await asyncio.sleep(2.0)  # four lease lengths
    await thief.stop()
    await keeper.stop()
    assert stolen == []
    assert a.lease_of(run_id)[0] == "a"
    a.close()
    b.close()


async def test_inbox_and_event_log_changes_are_announced_to_every_replica(postgres_url):
    """An answer posted through one replica and an event logged by another reach listeners."""
    owner = PostgresCheckpointStore(postgres_url, replica_id="owner")
    other = PostgresCheckpointStore(postgres_url, replica_id="other")
    run_id = uuid.uuid4().hex
    owner.create_run(_record(run_id))
    inbox: asyncio.Queue[str] = asyncio.Queue()
    events: asyncio.Queue[tuple[str, int]] = asyncio.Queue()
    replication = Replication(
        owner,
        on_takeover=lambda r: None,
        on_inbox=lambda rid, seq: inbox.put_nowait(rid),
        on_events=lambda rid, seq: events.put_nowait((rid, seq)),
    )
    await replication.start()
    await asyncio.wait_for(replication.listening.wait(), 10)
    owner.append_event(run_id, "event", "{}")
    assert await asyncio.wait_for(events.get(), 10) == (run_id, 1)
    owner.append_event(run_id, "event", "{}", waiting=True)
    assert await asyncio.wait_for(events.get(), 10) == (run_id, 2)
    other.post_event(run_id, '{"answer": 1}', answer=True)
    assert await asyncio.wait_for(inbox.get(), 10) == run_id
    await replication.stop()
    owner.close()
    other.close()


def test_replication_needs_a_replica_id(postgres_url):
    """A store without a replica id cannot take part: the error says how to name it."""
    with PostgresCheckpointStore(postgres_url) as store:
        with pytest.raises(ValueError, match="replica_id='name-of-this-server'"):
            Replication(store, on_takeover=lambda r: None)
