"""Two ``batonflow serve`` replicas through a PostgreSQL outage (a server of their own).

Runs are in flight, some waiting for answers, while the database restarts (``pg_ctl restart
-m fast``, or its postmaster SIGKILLed and started again ~2 s later). Meanwhile a client keeps
asking both replicas: every answer is a 2xx or a 503 with ``Retry-After``, never a 500 or a
dropped connection. Afterwards every run completes once with its right result, nothing ends
interrupted or failed, and both replicas are still up.
"""

from __future__ import annotations

import threading
import time

import httpx
import psycopg
import pytest
from batonflow.client.errors import ClientError
from pg_server import kill_postmaster, restart_fast, running_server, start_server
from test_pg_failover import Replica


def _holder(url: str, run_id: str) -> str:
    """The replica holding the run's lease."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT lease_owner FROM checkpoint_runs WHERE run_id = %s", (run_id,)
        ).fetchone()
    assert row is not None and row[0] is not None, run_id
    return str(row[0])


def _until_served(replicas: list[Replica]) -> None:
    """Wait until every replica answers from the database again (its pool reconnected)."""
    deadline = time.monotonic() + 60
    for replica in replicas:
        while httpx.get(replica.url + "/runs", timeout=30).status_code != 200:
            assert time.monotonic() < deadline, f"{replica.name} never recovered"
            time.sleep(0.1)


def _restart_fast(server) -> None:
    restart_fast(server)


def _kill_postmaster(server) -> None:
    kill_postmaster(server)
    time.sleep(2.0)
    start_server(server)


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "outage",
    [
        pytest.param(_restart_fast, id="restart-fast"),
        pytest.param(_kill_postmaster, id="postmaster-killed"),
    ],
)
def test_replicas_ride_out_a_database_outage(tmp_path, outage):
    """Runs in flight through a restart: each completes once, right; requests get 503s."""
    with running_server(synchronous_commit=True) as server:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE outage")
        url = server.url("outage")
        log = tmp_path / "steps.log"
        # Leases longer than the outage: the runs stay on their replicas.
        replicas = [Replica(f"r{i}", url, tmp_path, 10.0) for i in range(2)]
        try:
            runs: dict[str, tuple[int, bool]] = {}
            for i in range(12):
                ask = i % 3 == 0
                run = replicas[i % 2].client.start("steps", log=str(log), n=i, ask=ask, pause=1.0)
                runs[run.run_id] = (i, ask)
            time.sleep(0.7)  # runs in their first step; none has asked yet

            answers: list[int | str] = []
            stop = threading.Event()

            def ask_around() -> None:
                with httpx.Client(timeout=30) as http:
                    while not stop.is_set():
                        for replica in replicas:
                            for path in ("/runs", f"/runs/{next(iter(runs))}"):
                                try:
                                    resp = http.get(replica.url + path)
                                except httpx.HTTPError as exc:
                                    answers.append(type(exc).__name__)
                                    continue
                                if resp.status_code == 503:
                                    assert int(resp.headers["retry-after"]) >= 1
                                answers.append(resp.status_code)
                        time.sleep(0.02)

            asker = threading.Thread(target=ask_around)
            asker.start()
            try:
                outage(server)
                _until_served(replicas)
            finally:
                stop.set()
                asker.join(60)
            assert set(answers) <= {200, 503}, answers

            pending = {run_id for run_id, (_, ask) in runs.items() if ask}
            deadline = time.monotonic() + 90
            while pending and time.monotonic() < deadline:
                for run_id in sorted(pending):
                    # Answered on the replica running it: an answer posted elsewhere reaches
                    # it by NOTIFY, whose loss while LISTEN reconnects is another matter.
                    client = replicas[int(_holder(url, run_id)[1:])].client
                    if client.get(run_id).status == "waiting":
                        try:
                            client.answer(run_id, "yes")
                            pending.discard(run_id)
                        except ClientError:
                            pass  # the status tells on the next round
                time.sleep(0.1)
            assert not pending, f"runs never asked after the outage: {pending}"
            for run_id, (n, ask) in runs.items():
                final = replicas[1].client.wait(run_id, timeout=120)
                assert final.status == "completed", (run_id, final.status, final.error)
                assert final.result == {"value": n * 2, "answer": "yes" if ask else "auto"}
                ends = [e for e in replicas[0].client.events(run_id) if e.is_end]
                assert len(ends) == 1
            for replica in replicas:
                assert replica.proc.poll() is None, replica.log.read_text()[-3000:]
        finally:
            for replica in replicas:
                replica.stop()
