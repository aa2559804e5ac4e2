"""The cost of a journaled call (``ctx.journal``) next to a durable step, and of journaling nothing.

Usage::

    .venv/bin/python bench/journal_bench.py                # old core: before journaled calls
    .venv/bin/python bench/journal_bench.py --old-ref 33454b7 --rounds 20
    .venv/bin/python bench/journal_bench.py --old /tmp/old/core

In one process, alternately round by round, best round kept, in CPU time (as
``bench/core_ab.py``, whose loading and chain it uses): bench's chain as a durable run on a
SQLite file (a checkpoint after every step), the same chain whose step also makes one journaled
call (its result committed to the run's journal), and the durable chain on the core before
journaled calls existed (``--old-ref``, default ``main``): a run that journals nothing should
cost what it did. Prints µs per step and the ratios docs/durability.md quotes.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from core_ab import chain_flow, durable_chain, load  # noqa: E402

#: The last commit of main before #29 (journaled calls) was merged. The default was ``main``
#: while #29 was a branch; once merged, main has journaled calls too and compared with itself.
BEFORE_JOURNAL = "914744f"


def journaled_chain(core: Any, folder: Path) -> Any:
    """The durable chain whose looping step makes one journaled call per execution."""
    tick, _ = chain_flow(core)

    def add(i: int) -> int:
        return i + 1

    class JournaledChain(core.Workflow):
        @core.step
        async def begin(self, ev: core.StartEvent) -> tick:  # type: ignore[valid-type]
            return tick(i=0, n=ev.n)

        @core.step
        async def loop(self, ctx: core.Context, ev: tick) -> tick | core.StopEvent:  # type: ignore[valid-type]
            i = await ctx.journal("add", add, ev.i)
            if i >= ev.n:
                return core.StopEvent(result=i)
            return tick(i=i, n=ev.n)

    store = core.SqliteCheckpointStore(folder / "journaled.db")
    return core.WorkflowCheckpointer(JournaledChain(timeout=None), store=store)


def old_core(ref: str, root: Path) -> Path | None:
    """``core/`` of git ref ``ref``, extracted under ``root``; ``None`` without git or ref."""
    try:
        archive = subprocess.run(
            ["git", "archive", ref, "core"], cwd=HERE.parent, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(root / "old-src", filter="data")
    return root / "old-src" / "core"


async def measure(runs: dict[str, Any], rounds: int, n: int = 500) -> dict[str, float]:
    """Best CPU µs per step of each durable run factory in ``runs``."""
    best: dict[str, float] = {}
    for cptr in runs.values():
        assert await cptr.run(n=50) == 50  # warm-up
    for round_ in range(rounds):
        names = list(runs) if round_ % 2 else list(reversed(runs))
        for name in names:
            start = time.process_time()
            assert await runs[name].run(n=n) == n
            cost = (time.process_time() - start) / n * 1e6
            best[name] = min(best.get(name, cost), cost)
    return best


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", type=Path, help="the old core/ folder (else --old-ref)")
    parser.add_argument(
        "--old-ref", default=BEFORE_JOURNAL, help="git ref of the old core (before journaling)"
    )
    parser.add_argument("--rounds", type=int, default=20, help="rounds (best one kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sys.path.insert(0, tmp)
        new = load(HERE.parent / "core", "new_core", root)
        runs: dict[str, Any] = {}
        for name, make in (("durable step", durable_chain), ("journaled", journaled_chain)):
            (root / name).mkdir()
            runs[name] = make(new, root / name)
        old_dir = args.old or old_core(args.old_ref, root)
        if old_dir is not None:
            (root / "old").mkdir()
            runs["durable step, old core"] = durable_chain(
                load(old_dir, "old_core", root), root / "old"
            )
        best = asyncio.run(measure(runs, args.rounds))
    step, journaled = best["durable step"], best["journaled"]
    print("| what | CPU µs per step |")
    print("|---|---|")
    for name, value in best.items():
        print(f"| {name} | {value:.1f} |")
    print(
        f"\njournaled call: {journaled - step:.1f} µs, {(journaled - step) / step:.2f}× a durable step"
    )
    if "durable step, old core" in best:
        ratio = step / best["durable step, old core"]
        print(f"a run that journals nothing, new / old core: {ratio:.3f}")


if __name__ == "__main__":
    main()
