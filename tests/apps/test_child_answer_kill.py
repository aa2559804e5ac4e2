"""An answer to a child run survives a `batonflow serve` killed with SIGKILL.

The answer is posted to the parent run, committed to the child's inbox, and the server is
killed before the child's step that took it ends (or at once after the 202): the restarted
server (on PostgreSQL a new replica, taking the parent and its child over) resumes the
parent, which resumes its child, which takes the answer from its inbox: one answer stored,
none asked for again, the run completes with it.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from batonflow.core.stores import open_store
from waiting import until

from .sse import wait_status

FLOWS = str(Path(__file__).parent.parent / "child_questions.py")


@pytest.mark.slow
@pytest.mark.parametrize("when", ["answered", "at_once"])
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_an_answer_to_a_child_survives_a_killed_server(serve, tmp_path, request, backend, when):
    """kill -9 after the answer to the parent (202); the restarted server completes the run
    with that answer, stored once in the child's inbox."""
    args: tuple[str, ...] = ("--no-prebuilt", "-w", f"release={FLOWS}:Release")
    where = str(tmp_path / "runs.db")
    if backend == "postgres":  # the last --db wins over the one serve gives
        where = request.getfixturevalue("postgres_url")
        args += ("--db", where)
    first = serve(*args)
    with httpx.Client(base_url=first.url, timeout=20) as http:
        fields = {"topic": "tides", "folder": str(tmp_path)}
        run_id = http.post("/workflows/release/runs", json=fields).json()["run_id"]
        parent = wait_status(http, run_id, {"waiting"}, timeout=60)
        (child,) = parent["waiting_children"]
        answer = {"type": "HumanResponseEvent", "data": {"response": "yes"}}
        sent = http.post(f"/runs/{run_id}/events", json=answer)
        assert sent.status_code == 202, sent.text
    if when == "answered":  # the child took it; its step has not ended
        until((tmp_path / "answered").exists, "the child took the answer")
    first.proc.kill()
    first.proc.wait(30)
    (tmp_path / "answered").unlink(missing_ok=True)
    second = serve(*args)
    with httpx.Client(base_url=second.url, timeout=20) as http:
        until((tmp_path / "answered").exists, "the resumed child took the answer", 120)
        (tmp_path / "go").touch()
        done = wait_status(http, run_id, {"completed", "failed"}, timeout=60)
        assert done["result"] == "tides: yes", done
        again = http.post(f"/runs/{run_id}/events", json=answer)
        assert again.status_code == 409, again.text
    store = open_store(where)
    try:
        assert [item.key for item in store.inbox(child)] == ["answer:1"]
        assert store.run(child).status == "completed"
    finally:
        store.close()
