"""SIGKILL trials of a served run mid-step: does the resumed stream announce the repeat?

Usage::

    .venv/bin/python bench/restart_stream.py               # 20 trials, seeds 0-19
    .venv/bin/python bench/restart_stream.py --trials 40 --first-seed 100

Each trial starts ``batonflow serve`` on a SQLite file, starts ``tests/restart_stream.py``'s
``ReportFlow`` (10 Progress events, 50 ms apart), reads a seeded random 1-6 of its events over
SSE, kills the server with SIGKILL (a random 0-100 ms later), starts it again and reads the rest
of the stream with ``Last-Event-ID``. A stream *repeats* when a Progress event comes twice; the
repeat is *announced* when a ``StepRestarted`` naming the interrupted attempt's first event
comes before the re-run's first event. Prints one line per trial and the totals.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from restart_stream import SERVE  # noqa: E402

from tests.apps.sse import read_sse  # noqa: E402
from tests.apps.test_server_restart import ServerProcess  # noqa: E402


def trial(folder: Path, seed: int) -> dict[str, Any]:
    """One kill and restart; what the stream read across it shows."""
    rng = random.Random(seed)
    db = folder / "runs.db"
    first = ServerProcess(db, None, True, *SERVE)
    try:
        run_id = first.client.post("/workflows/report/runs", json={"n": 10, "pause": 0.05})
        run_id = run_id.json()["run_id"]
        path = f"/runs/{run_id}/events"
        before = read_sse(first.client, path, stop_after=rng.randint(1, 6))
        time.sleep(rng.uniform(0.0, 0.1))
    finally:
        first.kill()
    second = ServerProcess(db, None, True, *SERVE)
    try:
        after = read_sse(second.client, path, headers={"Last-Event-ID": before[-1]["id"]})
    finally:
        second.kill()
    messages = before + after
    chunks = [m["data"]["value"]["i"] for m in messages if m["data"].get("type") == "Progress"]
    repeated = len(chunks) != len(set(chunks))
    kinds = [m["data"].get("type") for m in messages]
    announced = False
    if "StepRestarted" in kinds:
        at = kinds.index("StepRestarted")
        value = messages[at]["data"]["value"]
        killed = before[0]["data"]["value"]["pid"]
        rerun = [
            i
            for i, m in enumerate(messages)
            if m["data"].get("type") == "Progress" and m["data"]["value"]["pid"] != killed
        ]
        announced = value["first_event_id"] == int(before[0]["id"]) and at < min(rerun)
    return {
        "seed": seed,
        "repeated": repeated,
        "announced": announced,
        "restarts": kinds.count("StepRestarted"),
    }


def main() -> None:
    """Run the trials and print the totals."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.first_seed, args.first_seed + args.trials):
            folder = Path(tmp) / str(seed)
            folder.mkdir()
            results.append(trial(folder, seed))
            print(results[-1], flush=True)
    repeated = [r for r in results if r["repeated"]]
    print(
        f"{len(results)} streams; {len(repeated)} repeated an interrupted step's events; "
        f"{sum(r['announced'] for r in repeated)} of those announced it with StepRestarted; "
        f"{sum(1 for r in results if r['restarts'] and not r['repeated'])} StepRestarted "
        "without a repeat."
    )


if __name__ == "__main__":
    main()
