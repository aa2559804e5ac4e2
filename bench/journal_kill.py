"""SIGKILL trials of runs making journaled calls: side effects of committed calls repeated?

Usage::

    .venv/bin/python bench/journal_kill.py                   # 100 trials, seeds 8000-8099
    .venv/bin/python bench/journal_kill.py --trials 20 --first-seed 9000

Each trial (``tests/core/journal_worker.py``'s ``trial``) starts a 30-step durable run whose
every step makes one journaled call with a side effect written to a file, kills it with SIGKILL
once a seeded random number of side effects happened (then 0-4 ms later), resumes the run in a
new process and counts each call's side effects. The CI test (``tests/core/test_journal.py``)
runs 6 seeds; this script prints the totals docs/durability.md quotes.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "core"))

from journal_worker import Trial, trial


def main() -> int:
    """Run the trials, print the totals; exit 1 if a committed call repeated."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--first-seed", type=int, default=8000)
    args = parser.parse_args()
    seeds = range(args.first_seed, args.first_seed + args.trials)
    start = time.perf_counter()
    trials: list[Trial] = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            folder = Path(tmp) / str(seed)
            folder.mkdir()
            trials.append(trial(folder, seed))
    took = time.perf_counter() - start
    committed = sum(t.committed_before_kill for t in trials)
    repeated = sum(t.repeated_committed for t in trials)
    in_flight = sum(t.repeated_in_flight for t in trials)
    lost = sum(t.lost_result for t in trials) + sum(t.missing for t in trials)
    print(
        f"{len(trials)} trials (seeds {seeds.start}-{seeds.stop - 1}) in {took:.0f} s: "
        f"{committed} calls committed before their kill, {repeated} of them made again; "
        f"{in_flight} calls in flight at the kill made again; lost results or calls {lost}"
    )
    return 1 if repeated + lost else 0


if __name__ == "__main__":
    sys.exit(main())
