"""Prebuilt agents journal their LLM and tool calls in a durable run.

A process that dies (``os._exit``, no clean-up) right after an agent's LLM call was committed
to the run's journal, before the agent's step completed: the run resumed in a new process does
not ask the LLM that question again (counted in a file the scripted LLM writes to). In a plain
run nothing is journaled and the agent works as before.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from batonflow.core.checkpoints import SqliteCheckpointStore

WORKER = str(Path(__file__).with_name("agent_journal_worker.py"))


@pytest.mark.slow
def test_an_agent_killed_after_its_llm_call_resumes_without_asking_again(tmp_path):
    """One LLM call per turn across both processes; the journal holds the calls."""
    db, effects = str(tmp_path / "runs.db"), str(tmp_path / "effects.txt")
    died = subprocess.run([sys.executable, WORKER, "start", db, effects], timeout=120)
    assert died.returncode == 9
    assert Path(effects).read_text().split() == ["llm"]  # the first turn was asked, once
    done = subprocess.run(
        [sys.executable, WORKER, "resume", db, effects],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["result"] == "The answer is 42."
    # The first turn came back from the journal: two LLM calls in all, one tool call.
    assert Path(effects).read_text().split() == ["llm", "tool", "llm"]
    with SqliteCheckpointStore(db) as store:
        names = [e.name for e in store.journal("agent-run")]
    assert names == ["llm", "tool:lookup", "llm"]


async def test_a_plain_agent_run_journals_nothing(tmp_path):
    """Without a checkpointer the agent's calls are made as they are."""
    sys.path.insert(0, str(Path(__file__).parent))
    from agent_journal_worker import agent

    effects = str(tmp_path / "effects.txt")
    assert str(await agent(effects).run(user_msg="What is the answer?")) == "The answer is 42."
    assert Path(effects).read_text().split() == ["llm", "tool", "llm"]
