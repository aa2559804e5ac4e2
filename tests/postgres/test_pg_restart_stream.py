"""A restart is visible in the stream on PostgreSQL: a replica killed mid-step, another takes
the run over, and a client reconnecting with ``Last-Event-ID`` reads a StepRestarted first."""

from __future__ import annotations

import itertools

import pytest
from batonflow.client import RunEvent
from replicas import Replica
from restart_stream import SERVE, check_restart

N = 30


def _message(event: RunEvent) -> dict:
    return {"id": str(event.seq), "event": event.kind, "data": event.data}


@pytest.mark.slow
@pytest.mark.timeout(300)  # two servers starting on two cores can take a while
def test_a_replica_taking_over_a_run_announces_the_step_restart(postgres_url, tmp_path):
    """kill -9 the replica while its step streams; the replica that takes the run over writes
    StepRestarted before the re-run's events, and the client tells which earlier events the
    re-run supersedes."""
    victim = Replica("a", postgres_url, tmp_path, 2.0, extra=SERVE)
    taker = Replica("b", postgres_url, tmp_path, 2.0, extra=SERVE)
    try:
        run_id = victim.client.start("report", n=N, pause=0.1).run_id
        read = list(itertools.islice(victim.client.events(run_id, reconnect=False), 3))
        victim.kill()
        after = list(taker.client.events(run_id, after=read[-1].seq, timeout=120))
        check_restart([_message(e) for e in read], [_message(e) for e in after], N)
        restart = next(e for e in after if e.is_restart)
        assert (restart.step, restart.execution) == ("report", read[0].execution)
        dropped = [e.seq for e in (*read, *after) if restart.supersedes(e)]
        assert dropped == [e.seq for e in (*read, *after) if e.seq < restart.seq]
    finally:
        victim.kill()
        taker.stop()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_run_on_postgres_that_never_crashes_has_no_step_restarted(postgres_url, tmp_path):
    """Served to its end on PostgreSQL: no StepRestarted, each event names its step."""
    server = Replica("a", postgres_url, tmp_path, 2.0, extra=SERVE)
    try:
        run_id = server.client.start("report", n=3, pause=0.01).run_id
        events = list(server.client.events(run_id, timeout=60))
        assert [e.type for e in events] == ["Progress", "Progress", "Progress", "StopEvent", None]
        assert not any(e.is_restart for e in events)
        assert [e.step for e in events[:3]] == ["report"] * 3
    finally:
        server.stop()
