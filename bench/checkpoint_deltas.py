"""Stored checkpoint bytes of a scripted agent conversation of 10, 30 and 100 LLM calls.

Usage::

    .venv/bin/python bench/checkpoint_deltas.py            # this tree: growing keys as edits
    .venv/bin/python bench/checkpoint_deltas.py --whole    # every changed key whole

The conversation is ``tests/testing/conversation.py``'s (see ``bench/journal_deltas.py``): a
FunctionAgent on a scripted LLM that calls a tool (a ~200-character result) once per turn, then
answers. Each figure is read from the SQLite run store: the bytes of the run's checkpoints
(``ctx_data``), their count, the biggest one, and the CPU time ``store.latest`` takes to read
the last checkpoint back (best of 7: it applies the changes since the run's whole state), and
the CPU time of the whole run (the first figure includes imports and warm-up). ``--whole`` stores each changed state key
whole (what a checkpoint held before keys were stored as edits of their previous text).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "testing"))

from batonflow.core import SqliteCheckpointStore
from conversation import checkpoint_bytes, durable_conversation


def measure(turns: int) -> tuple[list[int], float, float]:
    """The stored bytes of each checkpoint of a ``turns``-call conversation, in order, the CPU
    seconds the run took, and those reading its last checkpoint takes."""
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "runs.db"
        began = time.process_time()
        asyncio.run(durable_conversation(db, turns))
        run = time.process_time() - began
        with SqliteCheckpointStore(db) as store:
            times = []
            for _ in range(7):
                began = time.process_time()
                store.latest("talk")
                times.append(time.process_time() - began)
        return checkpoint_bytes(db), run, min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--whole", action="store_true", help="store changed keys whole")
    parser.add_argument("--turns", type=int, nargs="*", default=[10, 30, 100])
    args = parser.parse_args()
    if args.whole:
        from batonflow.core.durable import _state_extensions

        _state_extensions.MIN_KEPT = 10**12  # no edit keeps that much: every key whole
    print("turns  checkpoints  checkpoint bytes  biggest checkpoint  run CPU s  latest() ms")
    for turns in args.turns:
        sizes, run, read = measure(turns)
        print(
            f"{turns:5}  {len(sizes):11}  {sum(sizes):16}  {max(sizes):18}  {run:9.2f}  "
            f"{read * 1000:11.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
