"""A replica stopped cleanly (SIGTERM: a rolling deploy, a scale-down) hands its runs over.

It stops running them without recording them ended, then releases their leases with a
``NOTIFY``; the replicas listening take them over at once, and any replica's heartbeat takes
released runs in progress as a fallback. The leases here are long (600 s): a takeover within
the test can only come from the release, never from a lease that expired.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
import uuid

import pytest
from batonflow.core import (
    Context,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    step,
)
from batonflow.core.checkpoints import RunInfo, WorkflowCheckpointer
from batonflow.core.durable._records import RunRecord
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres.leases import Replication
from replica_flows import Worked
from replicas import Replica, executions

LEASE = 600.0


def _record(run_id: str, owner: str = "server") -> RunRecord:
    now = time.time()
    return RunRecord(run_id, "Flow", "running", now, now, owner=owner)


def test_released_runs_in_progress_are_claimed_at_once_by_another_replica(postgres_url):
    """release_all frees the leases; claim_expired of another replica then takes the running
    and waiting runs, and leaves a CLI run, an ended run and an interrupted one alone."""
    with (
        PostgresCheckpointStore(postgres_url, replica_id="a", lease_seconds=LEASE) as a,
        PostgresCheckpointStore(postgres_url, replica_id="b", lease_seconds=LEASE) as b,
    ):
        running, waiting, cli, done, interrupted = (uuid.uuid4().hex for _ in range(5))
        for run_id in (running, waiting, done, interrupted):
            a.create_run(_record(run_id))
        a.create_run(_record(cli, owner="cli"))
        a.append_event(waiting, "event", "{}", waiting=True)
        a.set_status(done, "completed")
        a.set_status(interrupted, "interrupted")
        assert b.claim_expired() == []  # a holds them all, for ten minutes
        released = a.release_all([running, waiting, cli, done, interrupted])
        assert sorted(released) == sorted([running, waiting, cli, interrupted])
        assert sorted(r.run_id for r in b.claim_expired()) == sorted([running, waiting])
        assert b.lease_of(running)[0] == b.lease_of(waiting)[0] == "b"
        assert a.lease_of(cli)[0] is None and a.lease_of(interrupted)[0] is None
        assert a.release_all([running]) == []  # no longer a's to release


@pytest.mark.parametrize("successor", ["b", "a"], ids=["another-replica", "same-replica-id"])
async def test_a_release_is_announced_and_taken_over_without_a_heartbeat(postgres_url, successor):
    """A replica listening takes released runs over on the release's NOTIFY, also a new
    process under the releasing replica's own id (a rolling deploy that keeps names)."""
    a = PostgresCheckpointStore(postgres_url, replica_id="a", lease_seconds=LEASE)
    b = PostgresCheckpointStore(postgres_url, replica_id=successor, lease_seconds=LEASE)
    runs = [uuid.uuid4().hex for _ in range(3)]
    for run_id in runs:
        a.create_run(_record(run_id))
    taken: list[str] = []
    all_taken = asyncio.Event()

    def on_takeover(record: RunRecord) -> None:
        taken.append(record.run_id)
        if len(taken) == len(runs):
            all_taken.set()

    replication = Replication(b, on_takeover=on_takeover)  # a heartbeat every 200 s
    try:
        assert await replication.start() == []
        await asyncio.wait_for(replication.listening.wait(), 10)
        a.release_all(runs)
        await asyncio.wait_for(all_taken.wait(), 30)
        assert sorted(taken) == sorted(runs)
        assert {b.lease_of(run_id)[0] for run_id in runs} == {successor}
    finally:
        await replication.stop()
        a.close()
        b.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigterm_of_a_replica_hands_its_runs_to_the_survivors(postgres_url, tmp_path):
    """SIGTERM one of three replicas with runs in flight, some waiting for an answer: it exits
    0, every one of its runs is taken over by a survivor and completes once with its result,
    counting the answers posted after the stop."""
    log = tmp_path / "steps.log"
    replicas = [Replica(f"r{i}", postgres_url, tmp_path, LEASE) for i in range(3)]
    victim, survivors = replicas[0], replicas[1:]
    try:
        asks: dict[str, bool] = {}
        for i in range(10):
            ask = i % 2 == 0
            pause = 0.2 if ask else 4.0  # the others are in their first step at the stop
            asks[victim.client.start("steps", log=str(log), n=i, ask=ask, pause=pause).run_id] = ask
        runs = list(asks)
        deadline = time.monotonic() + 60
        for run_id, ask in asks.items():
            while (ask and survivors[0].client.get(run_id).status != "waiting") or (
                (run_id, "work") not in executions(log)
            ):
                assert time.monotonic() < deadline, f"run {run_id} never got going"
                time.sleep(0.05)

        victim.client.close()
        victim.proc.send_signal(signal.SIGTERM)
        assert victim.proc.wait(60) == 0
        stopped = victim.log.read_text()
        assert "Traceback" not in stopped, stopped
        assert "released 10 run(s) to the other replicas" in stopped, stopped
        # Nothing it ran ended: the runs are the survivors' to finish.
        assert not any(survivors[0].client.get(run_id).done for run_id in runs)

        for n, run_id in enumerate(r for r in runs if asks[r]):
            survivors[n % 2].client.answer(run_id, f"yes {run_id}")

        deadline = time.monotonic() + 120  # far less than a lease: only the release explains it
        finals = {}
        for n, run_id in enumerate(runs):
            left = max(0.1, deadline - time.monotonic())
            finals[run_id] = survivors[n % 2].client.wait(run_id, timeout=left)
        ran = executions(log)
        for n, run_id in enumerate(runs):
            run = finals[run_id]
            assert run.status == "completed", (run_id, run.status, run.error)
            answer = f"yes {run_id}" if asks[run_id] else "auto"
            assert run.result == {"value": 2 * n, "answer": answer}
            events = list(survivors[1].client.events(run_id))
            assert [e.is_end for e in events].count(True) == 1
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            # Each run finished on a survivor; a step ran twice only when the stop cut it
            # short on the victim.
            for step in ("work", "check", "finish"):
                pids = ran[(run_id, step)]
                assert len(pids) in (1, 2), (run_id, step, pids)
                if len(pids) == 2:
                    assert pids[0] == victim.proc.pid != pids[1], (run_id, step, pids)
            assert ran[(run_id, "finish")][-1] != victim.proc.pid
    finally:
        for replica in replicas:
            if replica.proc.poll() is None:
                replica.stop()


#: Whether Flaky's second step fails (the first run) or asks a question (the resumed one).
FAIL = [True]


class Flaky(Workflow):
    """Fails in its second step the first time; asks a question when continued."""

    @step
    async def first(self, ev: StartEvent) -> Worked:
        return Worked(value=1)

    @step
    async def second(self, ctx: Context, ev: Worked) -> StopEvent:
        if FAIL[0]:
            raise RuntimeError("boom")
        reply = await ctx.wait_for_event(
            HumanResponseEvent, waiter_event=InputRequiredEvent(prefix="go on? ")
        )
        return StopEvent(result=reply.response)


async def test_a_run_a_server_resumed_is_handed_over_like_the_runs_it_started(postgres_url):
    """A failed server run continued with run_from (what ``POST /runs/{id}/resume`` does) is
    recorded as a server run of the same served name, so when its replica releases it (or
    dies) another replica takes it over."""
    with (
        PostgresCheckpointStore(postgres_url, replica_id="a", lease_seconds=LEASE) as a,
        PostgresCheckpointStore(postgres_url, replica_id="b", lease_seconds=LEASE) as b,
    ):
        cptr = WorkflowCheckpointer(Flaky(timeout=30), store=a)
        FAIL[0] = True
        failed = cptr.start(info=RunInfo({}, None, owner="server", name="flaky"))
        with pytest.raises(RuntimeError, match="boom"):
            await failed
        FAIL[0] = False
        resumed = cptr.run_from(a.latest(str(failed.run_id)))
        run_id = str(resumed.run_id)
        record = a.run(run_id)
        assert record is not None
        assert (record.owner, record.workflow_name) == ("server", "flaky")
        try:
            deadline = time.monotonic() + 30
            while a.run(run_id).status != "waiting":
                assert time.monotonic() < deadline, "the resumed run never asked its question"
                await asyncio.sleep(0.05)
            assert a.release_all([run_id]) == [run_id]
            assert [r.run_id for r in b.claim_expired(workflows=["flaky"])] == [run_id]
        finally:
            await resumed.cancel_run()
            with contextlib.suppress(BaseException):
                await resumed
