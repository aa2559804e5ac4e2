"""Profile one workload on one engine, to find where the time (or memory) goes.

Usage::

    .venv/bin/python bench/hotspots.py chain                     # cProfile, batonflow
    .venv/bin/python bench/hotspots.py fanout --tool pyinstrument
    .venv/bin/python bench/hotspots.py memory --tool tracemalloc  # allocations per parked run
    .venv/bin/python bench/hotspots.py state --impl llama --n 500
    .venv/bin/python bench/hotspots.py fanout --tool instructions --n 4000  # needs valgrind

pyinstrument is not a project dependency: ``.venv/bin/pip install pyinstrument`` to use it.
(This file is not called ``profile.py``: that would shadow the stdlib module cProfile imports.)

``--tool instructions`` counts interpreter instructions per item with valgrind's callgrind
(Debian's ``valgrind`` package): the workload runs twice under it, with ``--n`` items and
with one, after the same warm-up and with ``PYTHONHASHSEED=0``, and the difference divided by
``n - 1`` is what one item costs, free of start-up and import. Instruction counts do not
depend on the other processes on a shared machine, which makes them the steadiest way to see
whether a change to the hot path made it do less.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import re
import shutil
import subprocess
import sys
import tracemalloc

import workloads
from _worker import build

DEFAULT_N = {
    "chain": 2000,
    "linear10": 500,
    "concurrent_runs": 2000,
    "fanout": 1000,
    "stream": 5000,
    "state": 2000,
    "memory": 1000,
    "tracing_nosdk": 2000,
    "tracing_off": 2000,
    "tracing_on": 2000,
    "durable": 1000,
}


#: Items run before the counted run of ``--tool instructions`` (the same for both runs).
WARM_UP = 50


def instructions(args: argparse.Namespace) -> str:
    """Interpreter instructions per item: callgrind's totals for ``n`` items and for one."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--tool instructions needs valgrind: apt-get install valgrind")
    n = args.n or DEFAULT_N.get(args.workload, 1000)
    if n < 2:
        raise SystemExit("--tool instructions needs --n 2 or more")
    totals = []
    for items in (n, 1):
        proc = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--callgrind-out-file=/dev/null",
                sys.executable,
                __file__,
                args.workload,
                "--impl",
                args.impl,
                "--tool",
                "count-run",
                "--n",
                str(items),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
            check=False,
        )
        found = re.search(r"Collected : (\d+)", proc.stderr)
        if proc.returncode != 0 or found is None:
            raise SystemExit(f"the run under valgrind failed:\n{proc.stderr[-2000:]}")
        totals.append(int(found.group(1)))
    per_item = (totals[0] - totals[1]) / (n - 1)
    return (
        f"{args.impl} {args.workload}: {per_item:,.0f} instructions per item "
        f"({totals[0]:,} for {n}, {totals[1]:,} for 1)"
    )


async def profile(args: argparse.Namespace) -> str:
    once = build(args.impl, args.workload)
    n = args.n or DEFAULT_N.get(args.workload, 1000)
    if args.tool == "count-run":  # the program --tool instructions runs under valgrind
        await once(WARM_UP)
        return f"{await once(n)}"
    await once(max(1, n // 10))  # warm-up
    if args.tool == "cprofile":
        prof = cProfile.Profile()
        prof.enable()
        figures = await once(n)
        prof.disable()
        out = io.StringIO()
        stats = pstats.Stats(prof, stream=out)
        stats.sort_stats("tottime").print_stats(args.top)
        stats.sort_stats("cumulative").print_stats(args.top)
        return f"{figures}\n{out.getvalue()}"
    if args.tool == "pyinstrument":
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.0002, async_mode="disabled")
        profiler.start()
        figures = await once(n)
        profiler.stop()
        return f"{figures}\n{profiler.output_text(unicode=True, color=False, show_all=False)}"
    if args.tool == "tracemalloc":
        if args.workload != "memory":
            raise SystemExit("--tool tracemalloc applies to the memory workload")
        workloads.TAKE_SNAPSHOTS["on"] = True
        figures = await once(n)
        parked, base = workloads.SNAPSHOTS["parked"], workloads.SNAPSHOTS["base"]
        lines = [f"{figures}", f"top allocating lines, per parked run (n={n}):"]
        for stat in parked.compare_to(base, "lineno")[: args.top]:
            frame = stat.traceback[0]
            lines.append(
                f"{stat.size_diff / n:9.0f} B/run {stat.count_diff / n:6.1f} blocks/run  "
                f"{frame.filename}:{frame.lineno}"
            )
        # The same bytes charged to the innermost frame inside the engine, to see which
        # engine line caused an allocation made deep inside asyncio or pydantic.
        focus = args.focus or {"batonflow": "/core/", "llama": "/workflows/"}.get(args.impl, "/")
        charged: dict[str, list[float]] = {}
        for stat in parked.compare_to(base, "traceback"):
            where = next(
                (
                    f"{f.filename}:{f.lineno}"
                    for f in reversed(stat.traceback)
                    if focus in f.filename
                ),
                "(outside the engine)",
            )
            acc = charged.setdefault(where, [0.0, 0.0])
            acc[0] += stat.size_diff
            acc[1] += stat.count_diff
        lines.append(f"charged to the innermost frame matching {focus!r}:")
        ranked = sorted(charged.items(), key=lambda kv: -kv[1][0])[: args.top]
        for where, (size, count) in ranked:
            lines.append(f"{size / n:9.0f} B/run {count / n:6.1f} blocks/run  {where}")
        return "\n".join(lines)
    raise SystemExit(f"unknown tool {args.tool!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workload")
    parser.add_argument("--impl", default="batonflow", choices=("batonflow", "llama", "floor"))
    parser.add_argument(
        "--tool",
        default="cprofile",
        choices=("cprofile", "pyinstrument", "tracemalloc", "instructions", "count-run"),
    )
    parser.add_argument("--n", type=int, default=0)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--focus", default="", help="tracemalloc: path part of engine frames")
    args = parser.parse_args()
    if args.tool == "instructions":
        print(instructions(args))
        return 0
    print(asyncio.run(profile(args)))
    return 0


if __name__ == "__main__":
    tracemalloc.stop()
    sys.exit(main())
