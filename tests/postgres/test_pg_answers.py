"""An agent's approval answered through the replica that does not run it, on real PostgreSQL.

Two :func:`create_app` replicas share one database. The run of the FunctionAgent of
``tests/apps/waiting_flows.py`` (its tool waits for ``HumanResponseEvent`` with
``requirements={"tool": "transfer"}``) is held by replica ``a``; replica ``b`` reads what it
waits for from the question in the database, refuses an answer the step would not take before
committing anything, and commits the right one to the run's inbox, which ``a`` takes in.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from batonflow.apps.registry import load_workflow
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.client import Client, InvalidRequestError
from batonflow.postgres import PostgresCheckpointStore

FLOWS = Path(__file__).resolve().parents[1] / "apps" / "waiting_flows.py"

pytestmark = pytest.mark.slow


@pytest.fixture
def replicas(postgres_url):
    """Replicas ``a`` and ``b`` serving the transfer agent; their base URLs."""
    opened = []
    for name in ("a", "b"):
        store = PostgresCheckpointStore(postgres_url, replica_id=name, lease_seconds=5)
        agent = load_workflow(f"{FLOWS}:transfer_agent")
        server = BackgroundServer(create_app({"agent": agent}, checkpoints=store)).start()
        opened.append((server, store))
    yield [server.url for server, _ in opened]
    for server, store in opened:
        server.stop()
        store.close()


def test_an_answer_posted_to_the_replica_without_the_run_is_checked_then_taken(replicas):
    """b refuses the bare "yes" with what the tool waits for; b's client answer finishes a's run."""
    a_url, b_url = replicas
    with Client(a_url) as a, Client(b_url) as b:
        run_id = a.start("agent", {"user_msg": "send 30 to Ada"}).run_id
        for event in b.events(run_id):
            if "waiting_for" in event.data or event.is_end:
                break
        waiting = b.get(run_id)
        assert waiting.status == "waiting"
        assert [(w["type"], w["requirements"]) for w in waiting.waiting_for] == [
            ("HumanResponseEvent", {"tool": "transfer"})
        ]
        refused = httpx.post(
            f"{b_url}/runs/{run_id}/events",
            json={"type": "HumanResponseEvent", "data": {"response": "yes"}},
        )
        assert refused.status_code == 422
        assert "HumanResponseEvent with tool='transfer'" in refused.json()["detail"]
        with pytest.raises(InvalidRequestError, match="its tool is 'other'"):
            b.answer(run_id, "yes", fields={"tool": "other"})
        assert a.get(run_id).status == "waiting"
        b.answer(run_id, "yes")
        done = b.wait(run_id, timeout=30)
    assert done.status == "completed"
    assert done.result["response"]["blocks"][0]["text"] == "Done: Transferred 30 EUR to Ada."
