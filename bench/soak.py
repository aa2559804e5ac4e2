"""The soak of docs/durability.md: three replicas under load while faults hit them and PostgreSQL.

Usage::

    .venv/bin/python bench/soak.py                      # 600 s (or $BATONFLOW_SOAK_SECONDS)
    .venv/bin/python bench/soak.py --seconds 60 --seed 1234 --keep /tmp/soak-logs

Runs ``tests/postgres/soak.py``'s soak (its own PostgreSQL server, three ``batonflow serve``
replicas, clients, SSE readers and a fault injector that stalls, stops and kills replicas and
restarts or kills PostgreSQL at random), then prints the row for the soak table of
docs/durability.md, all the figures, and every broken invariant with the logs that tell more.
It exits 1 when an invariant broke.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "postgres"))

from soak import SoakConfig, SoakReport, run_soak

ROOT = Path(__file__).resolve().parents[1]


def _commit() -> str:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seconds",
        type=float,
        default=float(os.environ.get("BATONFLOW_SOAK_SECONDS", "600")),
        help="how long faults and load go on (default 600, or $BATONFLOW_SOAK_SECONDS)",
    )
    parser.add_argument("--seed", type=int, help="replay a seed (default: a new one, printed)")
    parser.add_argument("--lease", type=float, default=2.0, help="the replicas' lease, seconds")
    parser.add_argument("--keep", type=Path, help="keep the replicas' logs in this folder")
    args = parser.parse_args()
    config = SoakConfig(seconds=args.seconds, seed=args.seed, lease=args.lease)
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        report = run_soak(config, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="batonflow-soak-") as tmp:
            report = run_soak(config, Path(tmp))
    _print(report)
    return 1 if report.violations else 0


def _print(report: SoakReport) -> None:
    today = datetime.date.today().isoformat()
    print("\nThe row for docs/durability.md:\n")
    print(SoakReport.ROW_HEADER)
    print(report.row(today, _commit()))
    print("\nAll the figures:\n")
    print(report.markdown())
    for note in report.notes:
        print(f"\nnote: {note}")
    if report.violations:
        print("\n" + report.failure_message())


if __name__ == "__main__":
    sys.exit(main())
