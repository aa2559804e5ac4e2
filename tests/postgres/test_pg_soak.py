"""The soak: three replicas under load for a while as faults hit them and PostgreSQL.

``BATONFLOW_SOAK_SECONDS`` sets how long faults and load go on (60 by default, so the suite
runs a short soak; 600 for the full one), ``BATONFLOW_SOAK_SEED`` replays a seed the failure
message printed. What is checked is in ``soak_checks.py``; ``bench/soak.py`` runs the same soak
and prints its figures for docs/durability.md.
"""

from __future__ import annotations

import os

import pytest
from soak import SoakConfig, run_soak


def _env_number(name: str, default: str, kind: type) -> float | int | None:
    raw = os.environ.get(name, default)
    if raw == "":
        return None
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(
            f"{name}={raw!r} is not a number; set it to e.g. {default or '1234'}, or unset it."
        ) from None


SECONDS = float(_env_number("BATONFLOW_SOAK_SECONDS", "60", float) or 60)
SEED = _env_number("BATONFLOW_SOAK_SEED", "", int)


@pytest.mark.slow
@pytest.mark.timeout(SECONDS + 900)  # the soak, settling, starting and stopping replicas
def test_three_replicas_under_random_faults_lose_and_repeat_nothing(tmp_path, capsys):
    """Stalls, stops, kills and database restarts at random: each run completes once, right."""
    seed = None if SEED is None else int(SEED)
    report = run_soak(SoakConfig(seconds=SECONDS, seed=seed), tmp_path)
    with capsys.disabled():
        print("\n" + report.markdown())
    if report.violations:
        pytest.fail(report.failure_message(), pytrace=False)
