"""Profile one workload on one engine, to find where the time (or memory) goes.

Usage::

    .venv/bin/python bench/hotspots.py chain                     # cProfile, batonflow
    .venv/bin/python bench/hotspots.py fanout --tool pyinstrument
    .venv/bin/python bench/hotspots.py memory --tool tracemalloc  # allocations per parked run
    .venv/bin/python bench/hotspots.py state --impl llama --n 500

pyinstrument is not a project dependency: ``.venv/bin/pip install pyinstrument`` to use it.
(This file is not called ``profile.py``: that would shadow the stdlib module cProfile imports.)
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
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


async def profile(args: argparse.Namespace) -> str:
    once = build(args.impl, args.workload)
    n = args.n or DEFAULT_N.get(args.workload, 1000)
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
        "--tool", default="cprofile", choices=("cprofile", "pyinstrument", "tracemalloc")
    )
    parser.add_argument("--n", type=int, default=0)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--focus", default="", help="tracemalloc: path part of engine frames")
    args = parser.parse_args()
    print(asyncio.run(profile(args)))
    return 0


if __name__ == "__main__":
    tracemalloc.stop()
    sys.exit(main())
