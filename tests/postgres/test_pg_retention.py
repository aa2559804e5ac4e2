"""Retention on PostgreSQL while runs go on: two replicas sweep at once, nothing live is lost."""

from __future__ import annotations

import threading
import time
import uuid

from batonflow.core import Retention
from batonflow.core.durable._records import RunRecord
from batonflow.core.stores import open_store


def test_two_replicas_sweep_while_runs_are_written(postgres_url: str) -> None:
    writer, sweeper_a, sweeper_b = (open_store(postgres_url) for _ in range(3))
    live: list[str] = []
    ended: list[str] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def write_runs() -> None:
        # Runs as a server writes them: record, log entries, then (for most) an end.
        try:
            n = 0
            while not stop.is_set():
                run_id = uuid.uuid4().hex
                now = time.time()
                writer.create_run(RunRecord(run_id, "Flow", "running", now, now))
                for seq in range(3):
                    writer.append_event(run_id, "event", f'{{"n": {seq}}}')
                if n % 4 == 3:
                    live.append(run_id)  # left running: must survive every sweep
                else:
                    writer.finish_run(run_id, "completed", result='"ok"', end='{"end": true}')
                    ended.append(run_id)
                n += 1
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    def sweep(store) -> None:
        try:
            policy = Retention(0, batch=7)
            while not stop.is_set():
                policy.sweep(store)
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=write_runs),
        threading.Thread(target=sweep, args=(sweeper_a,)),
        threading.Thread(target=sweep, args=(sweeper_b,)),
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(ended) < 200 and time.monotonic() < deadline and not errors:
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert len(ended) >= 200
    Retention(0).sweep(sweeper_a)  # what the last pass may have missed
    assert all(writer.run(r) is None and writer.events(r) == [] for r in ended)
    for run_id in live:
        record = writer.run(run_id)
        assert record is not None and record.status == "running"
        assert [e.body for e in writer.events(run_id)] == [f'{{"n": {s}}}' for s in range(3)]
    for store in (writer, sweeper_a, sweeper_b):
        store.close()
