"""Events sent to a queued run on real PostgreSQL, across ``batonflow serve`` replicas.

Two replicas serve ``collect`` (``tests/push_flow.py``'s ``PushFlow``: it ends with the first
three items pushed into it) one run at a time, cluster-wide. A run waits queued behind another;
one replica accepts two pushes for it and is killed (SIGKILL) while the run is still queued.
The other replica runs it: the two pushes reach it once each, in order, and a third one sent
while it runs completes it.
"""

from __future__ import annotations

import time

import pytest
from batonflow.client import Client
from replicas import ROOT, Replica

FLOWS = (f"collect={ROOT / 'tests' / 'push_flow.py'}:PushFlow",)
LIMITS = ("--limit", "collect:concurrency=1")


def _wait_status(client: Client, run_id: str, status: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while (found := client.get(run_id).status) != status:
        assert time.monotonic() < deadline, f"run {run_id} stayed {found}, not {status}"
        time.sleep(0.05)


@pytest.mark.timeout(300)
def test_events_a_killed_replica_accepted_for_a_queued_run_are_delivered_once(
    postgres_url, tmp_path
):
    """SIGKILL the replica that took a queued run's events: another runs it, each event once."""
    victim, survivor = (
        Replica(name, postgres_url, tmp_path, 2.0, flows=FLOWS, extra=LIMITS)
        for name in ("victim", "survivor")
    )
    try:
        holder = survivor.client.start("collect").run_id
        _wait_status(survivor.client, holder, "running")
        fed = victim.client.start("collect").run_id
        assert victim.client.get(fed).status == "queued"
        for item in "ab":
            assert victim.client.send_event(fed, "Push", {"item": item}).status == "queued"
        assert survivor.client.get(fed).status == "queued"
        victim.kill()
        for item in "123":  # the holder ends (taken over first if the victim held it)
            survivor.client.send_event(holder, "Push", {"item": item})
        _wait_status(survivor.client, holder, "completed")
        _wait_status(survivor.client, fed, "running")
        survivor.client.send_event(fed, "Push", {"item": "c"})
        _wait_status(survivor.client, fed, "completed")
        run = survivor.client.get(fed)
        assert run.result == ["a", "b", "c"], survivor.tail()  # twice would give a, b, a
        assert sum(1 for e in survivor.client.events(fed) if e.is_end) == 1
    finally:
        victim.stop()
        survivor.stop()
