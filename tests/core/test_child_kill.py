"""A parent and its child run killed with SIGKILL, resumed in a new process (SQLite,
PostgreSQL): the child resumes, its finished steps and the parent's journaled call do not run
again (counted by their side effects, see ``child_kill_worker.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from child_kill_worker import trial


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_killed_parent_resumes_its_child_without_repeating_finished_steps(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str, seed: int
) -> None:
    """Killed at a seeded random moment: one child, resumed; nothing committed runs twice."""
    if backend == "sqlite":
        url = str(tmp_path / "runs.db")
    else:
        url = request.getfixturevalue("postgres_url")
    seen = trial(tmp_path, url, seed)
    assert not seen.lost_result, seen
    assert (seen.repeated_committed, seen.missing) == (0, 0), seen
    assert seen.children == 1, seen
