"""A parent and its child run in a real `batonflow serve` killed with SIGKILL (or stopped with
SIGTERM): the restarted server resumes the parent, which resumes its child; the child's
finished step and the parent's journaled call make their side effects once."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from waiting import until

from .sse import wait_status

CHILD_FLOWS = str(Path(__file__).with_name("child_flows.py"))


@pytest.mark.slow
@pytest.mark.parametrize("how", ["kill", "terminate"])
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_killed_server_resumes_the_parent_and_its_unfinished_child(
    serve, tmp_path, request, backend, how
):
    """kill -9 while the child waits in its second step; after the restart the run completes,
    one child run, ``pay`` and the child's ``first`` made once (on PostgreSQL the new replica
    takes the parent over, and the child's lease with it)."""
    args: tuple[str, ...] = ("--no-prebuilt", "-w", f"filebook={CHILD_FLOWS}:FileBook")
    if backend == "postgres":  # the last --db wins over the one serve gives
        args += ("--db", request.getfixturevalue("postgres_url"))
    first = serve(*args)
    with httpx.Client(base_url=first.url, timeout=20) as http:
        parent = http.post("/workflows/filebook/runs", json={"folder": str(tmp_path)}).json()
    until((tmp_path / "second-started").exists, "the child's second step")
    # SIGKILL: no shutdown hook runs; SIGTERM: a clean stop releases the parent and its child.
    getattr(first.proc, how)()
    first.proc.wait(30)
    (tmp_path / "second-started").unlink()
    second = serve(*args)
    with httpx.Client(base_url=second.url, timeout=20) as http:
        # On PostgreSQL the restarted server (a new replica) takes the parent over once the
        # killed one's lease runs out.
        until((tmp_path / "second-started").exists, "the resumed child's second step", 120)
        (tmp_path / "go").touch()
        done = wait_status(http, parent["run_id"], {"completed"}, timeout=60)
        assert done["result"] == "pay, chained"
        children = http.get(f"/runs/{parent['run_id']}/lineage").json()["children"]
    assert [c["status"] for c in children] == ["completed"]
    assert (tmp_path / "effects").read_text().splitlines() == ["pay", "first", "second"]
