"""SIGKILL trials of durable runs: what a crash at a random point loses or repeats.

Usage::

    .venv/bin/python bench/durable_kill.py                    # 200 trials, seeds 7000-7199
    .venv/bin/python bench/durable_kill.py --trials 20 --first-seed 9000 --jobs 2

Each trial (``tests/core/durable_worker.py``'s ``trial``) starts a 30-step durable run in a
subprocess, kills it with SIGKILL once a seeded random number of its events is in the event log
(then a random 0-4 ms later), so anywhere: in a step, between steps, in a checkpoint or an
event-log write; then resumes the run in a new process and compares the log and the result with
a run that did not crash. The CI test (``tests/core/test_durable_kill.py``) runs 8 of these
seeds; this script runs as many as asked and prints the totals docs/durability.md quotes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "core"))

from durable_worker import Trial, trial


def run(seeds: range, jobs: int) -> list[Trial]:
    """The trials of ``seeds``, ``jobs`` at a time (each in its own folder)."""
    with tempfile.TemporaryDirectory() as tmp:

        def one(seed: int) -> Trial:
            folder = Path(tmp) / str(seed)
            folder.mkdir()
            return trial(folder, seed)

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, seeds))


def totals(trials: list[Trial], steps: int = 30) -> dict[str, int]:
    """What the trials saw, summed; ``killed_mid_run`` counts kills before the last step."""
    return {
        "trials": len(trials),
        "killed_mid_run": sum(t.completed_before_kill < steps for t in trials),
        "lost_results": sum(t.lost_result for t in trials),
        "lost_events": sum(t.lost_events for t in trials),
        "repeated_completed": sum(t.repeated_completed for t in trials),
        "renumbered": sum(t.renumbered for t in trials),
        "rerun_interrupted": sum(t.rerun_interrupted for t in trials),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--first-seed", type=int, default=7000)
    parser.add_argument("--jobs", type=int, default=1, help="trials run at the same time")
    parser.add_argument("--json", type=Path, help="also write every trial here")
    args = parser.parse_args()
    seeds = range(args.first_seed, args.first_seed + args.trials)
    start = time.perf_counter()
    trials = run(seeds, args.jobs)
    took = time.perf_counter() - start
    sums = totals(trials)
    print(
        f"{sums['trials']} trials (seeds {seeds.start}-{seeds.stop - 1}), "
        f"{sums['killed_mid_run']} killed before the run's last step, in {took:.0f} s"
    )
    print(
        f"lost results {sums['lost_results']}, lost events {sums['lost_events']}, "
        f"repeated events of completed steps {sums['repeated_completed']}, "
        f"renumbered entries {sums['renumbered']}; "
        f"events written again by the interrupted step {sums['rerun_interrupted']}"
    )
    if args.json:
        args.json.write_text(json.dumps([asdict(t) for t in trials], indent=2) + "\n")
    bad = sums["lost_results"] + sums["lost_events"] + sums["repeated_completed"]
    return 1 if bad + sums["renumbered"] else 0


if __name__ == "__main__":
    sys.exit(main())
