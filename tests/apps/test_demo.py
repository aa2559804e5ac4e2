"""`batonflow demo` (the README's first command) works offline, and again in the same folder."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_demo_runs_offline_twice(tmp_path):
    """The demo ingests, answers, loops, asks a human, serves; a second run reuses the data."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
    for attempt in (1, 2):
        proc = subprocess.run(
            [sys.executable, "-m", "batonflow.apps", "demo"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, f"attempt {attempt}:\n{proc.stdout}\n{proc.stderr}"
        out = proc.stdout
        assert "ingested 4 file(s)" in out
        assert out.count("Sources:") == 2 and "[1] durability.md" in out
        assert "Found 73 in " in out
        guesses = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("attempt ")]
        assert guesses[-1].endswith("73 is correct")  # the winner shows its own verdict
        assert all(" is too " in ln for ln in guesses[:-1])
        assert "the demo answers: yes" in out and "'approved': True" in out
        assert "GET /runs/{id} → completed" in out
        assert "traces: not exported" in out
    assert (tmp_path / ".batonflow" / "runs.db").exists()
    assert (tmp_path / ".batonflow" / "qdrant").is_dir()
