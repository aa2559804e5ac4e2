"""``GET /runs`` and ``GET /runs/{id}`` on PostgreSQL read the run store in a thread: a record
is several round trips (the run, its schedule, budget, usage), none made on the event loop."""

from __future__ import annotations

import time
from typing import Any

from batonflow.apps.server import BackgroundServer, create_app
from batonflow.client import Client
from batonflow.postgres import PostgresCheckpointStore
from loop_threads import on_a_loop
from replica_flows import ApprovalFlow

READS = ("run", "runs", "budget", "usage", "usage_many", "firings", "queue_place")


def test_a_runs_record_is_read_off_the_event_loop(postgres_url) -> None:
    with PostgresCheckpointStore(postgres_url, replica_id="r", lease_seconds=5) as store:
        on_loop: list[str] = []
        for name in READS:
            real = getattr(store, name, None)
            if real is None:
                continue

            def watched(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
                if on_a_loop():
                    on_loop.append(_name)
                return _real(*args, **kwargs)

            setattr(store, name, watched)
        app = create_app({"approval": ApprovalFlow(timeout=None)}, checkpoints=store)
        with BackgroundServer(app) as server, Client(server.url, timeout=20) as client:
            run = client.start("approval", {})
            deadline = time.monotonic() + 20
            while client.get(run.run_id).status != "waiting":
                assert time.monotonic() < deadline
                time.sleep(0.02)
            on_loop.clear()
            shown = client.get(run.run_id)
            listed = client.list()
            assert shown.status == "waiting" and run.run_id in [r.run_id for r in listed]
            assert on_loop == []
            client.cancel(run.run_id)


def test_the_runs_list_reads_waiting_children_off_the_event_loop(postgres_url) -> None:
    """``GET /runs`` finds a parent whose child run waits (``children_of``, one read per
    level of nesting) in a thread, not on the event loop."""
    from child_questions import Release

    with PostgresCheckpointStore(postgres_url) as store:
        reads: list[bool] = []
        real = store.children_of

        def watched(run_ids: Any) -> Any:
            reads.append(on_a_loop())
            return real(run_ids)

        store.children_of = watched  # type: ignore[method-assign]
        app = create_app({"release": Release()}, checkpoints=store)
        with BackgroundServer(app) as server, Client(server.url, timeout=20) as client:
            run = client.start("release", {"topic": "tides"})
            deadline = time.monotonic() + 20
            while client.get(run.run_id).status != "waiting":
                assert time.monotonic() < deadline
                time.sleep(0.02)
            reads.clear()
            (listed,) = [r for r in client.list(status="waiting") if r.run_id == run.run_id]
            assert listed.waiting_children and reads and not any(reads)
            client.cancel(run.run_id)
