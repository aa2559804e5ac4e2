"""An answer to a child run posted through a replica that does not run it.

Two ``batonflow serve`` replicas on one PostgreSQL database serve ``Release``; the parent and
its asking child run on the one that started them. The other replica shows the parent
``waiting`` with the child's question, takes the answer posted to the parent (the child's
workflow is not served by name there: the parent's step declares it), commits it to the
child's inbox, and the holder's ``NOTIFY`` delivers it to the child it runs.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from replicas import Replica

FLOWS = str(Path(__file__).resolve().parent.parent / "child_questions.py")


@pytest.mark.slow
def test_an_answer_to_a_parent_through_another_replica_reaches_the_child(postgres_url, tmp_path):
    """Posted through the replica that does not run it, the answer reaches the child."""
    flows = (f"release={FLOWS}:Release",)
    holder = Replica("h0", postgres_url, tmp_path, lease=600.0, flows=flows)
    other = Replica("h1", postgres_url, tmp_path, lease=600.0, flows=flows)
    try:
        with (
            httpx.Client(base_url=holder.url, timeout=20) as a,
            httpx.Client(base_url=other.url, timeout=20) as b,
        ):
            run_id = a.post("/workflows/release/runs", json={"topic": "tides"}).json()["run_id"]
            deadline = time.monotonic() + 60
            while (seen := b.get(f"/runs/{run_id}").json())["status"] != "waiting":
                assert time.monotonic() < deadline, seen
                time.sleep(0.05)
            assert seen["question"]["value"]["prefix"] == "approve tides?"
            answer = {"type": "HumanResponseEvent", "data": {"response": "yes"}}
            sent = b.post(f"/runs/{run_id}/events", json=answer)
            assert sent.status_code == 202, sent.text
            while (done := a.get(f"/runs/{run_id}").json())["status"] != "completed":
                assert time.monotonic() < deadline + 60, (done, holder.tail(), other.tail())
                time.sleep(0.05)
            assert done["result"] == "tides: yes"
            assert b.post(f"/runs/{run_id}/events", json=answer).status_code == 409
    finally:
        holder.stop()
        other.stop()
