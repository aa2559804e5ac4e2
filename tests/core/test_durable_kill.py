"""SIGKILL at random points: nothing committed is lost, no completed step's event repeats."""

from __future__ import annotations

from pathlib import Path

import pytest
from durable_worker import trial


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_a_run_killed_anywhere_resumes_exactly(tmp_path: Path, seed: int) -> None:
    """Killed at a seeded random moment and resumed in a new process, a run gives its result,
    keeps every recorded event with its seq, and repeats only the interrupted step's event."""
    seen = trial(tmp_path, seed)
    assert seen.completed_before_kill <= 31, seen
    assert not seen.lost_result, seen
    assert (seen.lost_events, seen.repeated_completed, seen.renumbered) == (0, 0, 0), seen
    assert seen.rerun_interrupted <= 1, seen
