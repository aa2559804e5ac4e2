"""The cost of one retried step attempt: batonflow against llama-index-workflows, side by side.

A step raises ``FAILS`` times and then succeeds, under a policy built from each engine's own
retry vocabulary (``retry_policy(retry=retry_if_exception_type(ValueError), wait=wait_fixed(0),
stop=stop_after_attempt(FAILS + 1))``), so the figure is the engine's work per failure: asking
the policy, recording the retry, running the step again. Each measurement runs in a fresh
process; engines alternate round by round and each figure is the median over rounds.

Usage::

    .venv/bin/python bench/retry_bench.py            # 3 rounds
    .venv/bin/python bench/retry_bench.py --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from typing import Any

FAILS = 2000
MARK = "@@US_PER_RETRY "


def _flow(engine: str) -> Any:
    if engine == "batonflow":
        from batonflow.core import StartEvent, StopEvent, Workflow, step
        from batonflow.core.retry_policy import (
            retry_if_exception_type,
            retry_policy,
            stop_after_attempt,
            wait_fixed,
        )
    else:
        from workflows import Workflow, step
        from workflows.events import StartEvent, StopEvent
        from workflows.retry_policy import (
            retry_if_exception_type,
            retry_policy,
            stop_after_attempt,
            wait_fixed,
        )

    policy = retry_policy(
        retry=retry_if_exception_type(ValueError),
        wait=wait_fixed(0),
        stop=stop_after_attempt(FAILS + 1),
    )

    class Flaky(Workflow):
        attempts = 0

        @step(retry_policy=policy)
        async def call(self, ev: StartEvent) -> StopEvent:
            type(self).attempts += 1
            if type(self).attempts <= FAILS:
                raise ValueError("try again")
            return StopEvent(result=type(self).attempts)

    return Flaky


async def _measure(engine: str) -> float:
    flow = _flow(engine)
    best = float("inf")
    for _ in range(4):  # the first is the warm-up
        flow.attempts = 0
        began = time.perf_counter()
        result = await flow(timeout=None).run()
        elapsed = time.perf_counter() - began
        if result != FAILS + 1:
            raise SystemExit(f"{engine}: wrong result {result!r}")
        best = min(best, elapsed)
    return best / FAILS * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engine", choices=("batonflow", "llama"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.engine:
        print(MARK + str(asyncio.run(_measure(args.engine))))
        return
    figures: dict[str, list[float]] = {"batonflow": [], "llama": []}
    for round_no in range(args.rounds):
        order = list(figures) if round_no % 2 == 0 else list(reversed(figures))
        for engine in order:
            out = subprocess.run(
                [sys.executable, __file__, "--engine", engine],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            figures[engine].append(float(out.split(MARK)[1]))
    ours, theirs = (statistics.median(figures[e]) for e in ("batonflow", "llama"))
    print(
        f"per retried attempt: batonflow {ours:.1f} us, llama-index {theirs:.1f} us, "
        f"speed-up {theirs / ours:.1f}x ({args.rounds} rounds)"
    )


if __name__ == "__main__":
    main()
