"""Stored journal bytes of a scripted agent conversation of 10, 30 and 100 LLM calls.

Usage::

    .venv/bin/python bench/journal_deltas.py            # this tree: compact message lists
    .venv/bin/python bench/journal_deltas.py --whole    # each call's whole message list
    PYTHONPATH=/tmp/old/src .venv/bin/python bench/journal_deltas.py   # an older batonflow

The conversation is ``tests/testing/conversation.py``'s: a FunctionAgent on a scripted LLM that
calls a tool (a ~200-character result) once per turn, then answers; each of its LLM calls sends
the whole conversation so far. Each size is read from the SQLite run store: the bytes of the
bodies of the run's journaled calls (LLM and tool calls), the biggest LLM call's, and the
exported cassette's. ``--whole`` stores every call's whole message list (what the journal held
before calls were stored compactly, plus the ``ref`` of each call).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "testing"))

from conversation import durable_conversation, exported, journal_bytes, llm_entry_sizes


def measure(turns: int) -> tuple[int, int, int]:
    """``(journal bytes, biggest LLM entry, exported cassette bytes)`` of a ``turns``-call run."""
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "runs.db"
        asyncio.run(durable_conversation(db, turns))
        cassette = exported(db, Path(folder) / "run.json")
        return journal_bytes(db), max(llm_entry_sizes(db)), len(cassette)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--whole", action="store_true", help="store whole message lists")
    parser.add_argument("--turns", type=int, nargs="*", default=[10, 30, 100])
    args = parser.parse_args()
    if args.whole:
        import batonflow.agents.journaled as journaled

        journaled._bases = lambda ctx: []  # type: ignore[attr-defined]
    print("turns  journal bytes  biggest LLM entry  cassette bytes")
    for turns in args.turns:
        total, biggest, cassette = measure(turns)
        print(f"{turns:5}  {total:13}  {biggest:17}  {cassette:14}", flush=True)


if __name__ == "__main__":
    main()
