"""Run one workload on one engine in this (fresh) process and print its figures.

Usage (run.py does this): ``python bench/_worker.py IMPL WORKLOAD N WARM_N REPEATS BUDGET_S
[nogc]``.

Warm-up at size ``WARM_N``, then up to ``REPEATS`` timed repeats at size ``N`` (stopping early
once ``BUDGET_S`` seconds of repeats are spent, after at least one), then the median of each
figure. With ``nogc`` the cyclic garbage collector is off during the timed repeats. The last
stdout line is ``@@RESULT {json}``: ``{"ok": {...}}``, ``{"na": reason}`` or
``{"fail": reason}`` (exit status 0, 0, 1).
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import sys
import time
import traceback
from typing import Any

from api import Unsupported, load_api

MARK = "@@RESULT "


def build(impl: str, workload: str) -> Any:
    """Return the workload's ``once`` for engine ``impl``."""
    if impl == "floor":
        from floor import FLOOR_WORKLOADS

        if workload not in FLOOR_WORKLOADS:
            raise Unsupported("no floor for this workload")
        return FLOOR_WORKLOADS[workload]()
    from extras import EXTRA_WORKLOADS
    from workloads import ENGINE_WORKLOADS

    if workload in EXTRA_WORKLOADS:
        return EXTRA_WORKLOADS[workload](load_api(impl))
    return ENGINE_WORKLOADS[workload](load_api(impl))


async def measure(
    impl: str, workload: str, n: int, warm_n: int, repeats: int, budget: float, nogc: bool = False
) -> dict[str, Any]:
    once = build(impl, workload)
    if warm_n:
        await once(warm_n)
    samples: list[dict[str, float]] = []
    spent = 0.0
    for _ in range(repeats):
        gc.collect()
        if nogc:
            gc.disable()
        t0 = time.perf_counter()
        try:
            samples.append(await once(n))
        finally:
            gc.enable()
        spent += time.perf_counter() - t0
        if spent >= budget:
            break
    figures = {key: statistics.median(s[key] for s in samples) for key in samples[0]}
    return {"figures": figures, "samples": samples}


def main(argv: list[str]) -> int:
    impl, workload = argv[0], argv[1]
    n, warm_n, repeats = int(argv[2]), int(argv[3]), int(argv[4])
    budget = float(argv[5])
    nogc = argv[6:7] == ["nogc"]
    try:
        result = asyncio.run(measure(impl, workload, n, warm_n, repeats, budget, nogc))
    except Unsupported as exc:
        print(MARK + json.dumps({"na": str(exc)}), flush=True)
        return 0
    except Exception as exc:
        traceback.print_exc()
        print(MARK + json.dumps({"fail": f"{type(exc).__name__}: {exc}"}), flush=True)
        return 1
    print(MARK + json.dumps({"ok": result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
