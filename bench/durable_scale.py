"""Durable step cost as the state and the unread stream grow (issue 19), beside LangGraph.

``python bench/durable_scale.py [--sizes 0,100,1000,10000] [--steps 200] [--rounds 3]``

Each figure is measured in a fresh subprocess, implementations alternating round by round, so
a ratio compares runs made side by side on the same (noisy) machine:

* ``state``: one durable step that sets one key, with ``size`` other keys in the state. The
  per-step cost is ``(T(2n) - T(n)) / n`` of two runs of ``n`` and ``2n`` steps, so the set-up
  (the first checkpoint, which writes every key) is not counted. batonflow with a
  ``SqliteCheckpointStore``; LangGraph with its ``SqliteSaver`` and one channel per key
  (it writes only the channels a node changed). KiB written per step is the file growth.
* ``stream``: 4,000 durable steps that each write a stream event nobody reads; the cost per
  step in the first, middle and last 500.

Install the rival for the benchmark only: ``pip install -r bench/requirements.txt``, or in a
venv of its own and point ``--rival-python`` at it (LangGraph's workers then run there)::

    python -m venv /work/bench-venv
    /work/bench-venv/bin/pip install langgraph==1.2.24 langgraph-checkpoint-sqlite==3.1.2
    .venv/bin/python bench/durable_scale.py --rival-python /work/bench-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
#: Runs per measured length; the fastest counts (the least disturbed by the machine).
REPEATS = 3


# -- workers (run in a subprocess) --------------------------------------------------------------


def _size(folder: str) -> int:
    return sum(p.stat().st_size for p in Path(folder).iterdir())


def _figures(
    short: tuple[float, float, int], long: tuple[float, float, int], steps: int
) -> dict[str, float]:
    """Per-step wall time, CPU time and file growth: ``(T(2n) - T(n)) / n`` of two runs."""
    return {
        "us_per_step": (long[0] - short[0]) / steps * 1e6,
        "cpu_us_per_step": (long[1] - short[1]) / steps * 1e6,
        "kib_per_step": (long[2] - short[2]) / steps / 1024,
    }


def batonflow_state(size: int, steps: int) -> dict[str, float]:
    import asyncio

    from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
    from batonflow.core.checkpoints import SqliteCheckpointStore, WorkflowCheckpointer

    class Tick(Event):
        i: int

    class Flow(Workflow):
        @step
        async def begin(self, ctx: Context, ev: StartEvent) -> Tick:
            for k in range(int(ev.size)):
                await ctx.store.set(f"k{k}", k)
            await ctx.store.set("steps", int(ev.steps))
            return Tick(i=0)

        @step
        async def work(self, ctx: Context, ev: Tick) -> Tick | StopEvent:
            await ctx.store.set("counter", ev.i)
            if ev.i + 1 >= await ctx.store.get("steps"):
                return StopEvent(result=ev.i)
            return Tick(i=ev.i + 1)

    async def once(n: int) -> tuple[float, int]:
        folder = tempfile.mkdtemp(prefix="bf-durable-")
        store = SqliteCheckpointStore(os.path.join(folder, "runs.db"))
        cptr = WorkflowCheckpointer(Flow(timeout=None), store=store)
        start = time.perf_counter()
        cpu = time.process_time()
        result = await cptr.run(size=size, steps=n)
        cpu = time.process_time() - cpu
        took = time.perf_counter() - start
        assert result == n - 1, result
        written = _size(folder)
        store.close()
        return took, cpu, written

    async def best(n: int) -> tuple[float, float, int]:
        runs = [await once(n) for _ in range(REPEATS)]
        return min(r[0] for r in runs), min(r[1] for r in runs), runs[0][2]

    async def main() -> dict[str, float]:
        await once(10)  # warm-up
        return _figures(await best(steps), await best(2 * steps), steps)

    return asyncio.run(main())


def langgraph_state(size: int, steps: int) -> dict[str, float]:
    import operator  # noqa: F401  (LangGraph resolves annotations)
    import sqlite3
    from typing import TypedDict

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, StateGraph

    fields = {f"k{k}": int for k in range(size)}
    fields.update(counter=int, steps=int)
    State = TypedDict("State", fields)  # type: ignore[misc]  # one channel per key

    def work(state: dict) -> dict:
        return {"counter": state["counter"] + 1}

    def more(state: dict) -> str:
        return "work" if state["counter"] < state["steps"] else END

    def once(n: int) -> tuple[float, int]:
        folder = tempfile.mkdtemp(prefix="lg-durable-")
        conn = sqlite3.connect(os.path.join(folder, "lg.db"), check_same_thread=False)
        saver = SqliteSaver(conn)
        graph = StateGraph(State)
        graph.add_node("work", work)
        graph.set_entry_point("work")
        graph.add_conditional_edges("work", more)
        app = graph.compile(checkpointer=saver)
        start_state = {f"k{k}": k for k in range(size)} | {"counter": 0, "steps": n}
        config = {"configurable": {"thread_id": "t"}, "recursion_limit": n + 10}
        start = time.perf_counter()
        cpu = time.process_time()
        out = app.invoke(start_state, config)
        cpu = time.process_time() - cpu
        took = time.perf_counter() - start
        assert out["counter"] == n, out["counter"]
        conn.close()
        return took, cpu, _size(folder)

    def best(n: int) -> tuple[float, float, int]:
        runs = [once(n) for _ in range(REPEATS)]
        return min(r[0] for r in runs), min(r[1] for r in runs), runs[0][2]

    once(10)
    return _figures(best(steps), best(2 * steps), steps)


def batonflow_stream(steps: int) -> dict[str, float]:
    import asyncio

    from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
    from batonflow.core.checkpoints import SqliteCheckpointStore, WorkflowCheckpointer

    stamps: list[float] = []

    class Tick(Event):
        i: int

    class Flow(Workflow):
        @step
        async def begin(self, ev: StartEvent) -> Tick:
            return Tick(i=0)

        @step
        async def work(self, ctx: Context, ev: Tick) -> Tick | StopEvent:
            stamps.append(time.perf_counter())
            ctx.write_event_to_stream(Tick(i=ev.i))  # nobody reads the stream
            if ev.i + 1 >= steps:
                return StopEvent(result=ev.i)
            return Tick(i=ev.i + 1)

    async def main() -> dict[str, float]:
        folder = tempfile.mkdtemp(prefix="bf-stream-")
        store = SqliteCheckpointStore(os.path.join(folder, "runs.db"))
        await WorkflowCheckpointer(Flow(timeout=None), store=store).run()
        store.close()
        window = 500
        mid = steps // 2

        def cost(a: int) -> float:
            return (stamps[a + window - 1] - stamps[a]) / (window - 1) * 1e6

        return {
            "first_us": cost(1),
            "middle_us": cost(mid - window // 2),
            "last_us": cost(steps - window),
        }

    return asyncio.run(main())


WORKERS = {
    "batonflow_state": batonflow_state,
    "langgraph_state": langgraph_state,
    "batonflow_stream": batonflow_stream,
}


# -- the driver -----------------------------------------------------------------------------------


#: The interpreter LangGraph's workers run in (``--rival-python``).
RIVAL_PYTHON = sys.executable


def _measure(worker: str, *args: int) -> dict[str, float] | str:
    python = RIVAL_PYTHON if worker.startswith("langgraph") else sys.executable
    done = subprocess.run(
        [python, str(HERE), "--worker", worker, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        return f"failed: {tail}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def _have(module: str, python: str) -> bool:
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return subprocess.run([python, "-c", probe], capture_output=True).returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="0,100,1000,10000")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--stream-steps", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", nargs="*")
    parser.add_argument(
        "--rival-python", default=sys.executable, help="the Python that has LangGraph installed"
    )
    args = parser.parse_args()
    global RIVAL_PYTHON
    RIVAL_PYTHON = args.rival_python
    if args.worker:
        name, *rest = args.worker
        print(json.dumps(WORKERS[name](*map(int, rest))))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    impls = ["batonflow_state"]
    if _have("langgraph", RIVAL_PYTHON):
        impls.append("langgraph_state")
    else:
        print(f"LangGraph is not installed for {RIVAL_PYTHON}: batonflow only", file=sys.stderr)
    figures: dict[tuple[str, int], list[dict[str, float]]] = {}
    for _ in range(args.rounds):
        for size in sizes:
            for impl in impls:
                got = _measure(impl, size, args.steps)
                if isinstance(got, str):
                    print(f"{impl} size {size}: {got}", file=sys.stderr)
                    continue
                figures.setdefault((impl, size), []).append(got)
    print(f"Durable step cost by state size ({args.rounds} rounds, median; {args.steps} steps)\n")
    print(
        "| state keys | batonflow µs/step (CPU) | wall | KiB/step | LangGraph µs/step (CPU) | wall "
        "| KiB/step | LangGraph / batonflow (CPU) | (wall) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    def med(impl: str, size: int, key: str) -> float:
        got = figures.get((impl, size), [])
        return statistics.median(f[key] for f in got) if got else float("nan")

    for size in sizes:
        bf = [med("batonflow_state", size, k) for k in ("cpu_us_per_step", "us_per_step")]
        lg = [med("langgraph_state", size, k) for k in ("cpu_us_per_step", "us_per_step")]
        print(
            f"| {size:,} | {bf[0]:,.0f} | {bf[1]:,.0f} | "
            f"{med('batonflow_state', size, 'kib_per_step'):.2f} | {lg[0]:,.0f} | {lg[1]:,.0f} | "
            f"{med('langgraph_state', size, 'kib_per_step'):.2f} | {lg[0] / bf[0]:.2f}× | "
            f"{lg[1] / bf[1]:.2f}× |"
        )
    first = med("batonflow_state", sizes[0], "cpu_us_per_step")
    last = med("batonflow_state", sizes[-1], "cpu_us_per_step")
    print(f"\nbatonflow at {sizes[-1]:,} keys / at {sizes[0]:,} keys (CPU): {last / first:.2f}×")
    streams = [_measure("batonflow_stream", args.stream_steps) for _ in range(args.rounds)]
    ok = [s for s in streams if isinstance(s, dict)]
    if ok:
        med = {k: statistics.median(s[k] for s in ok) for k in ok[0]}
        print(
            f"\nUnread stream, {args.stream_steps:,} durable steps: µs/step first 500 "
            f"{med['first_us']:.0f}, middle {med['middle_us']:.0f}, last {med['last_us']:.0f} "
            f"(last/first {med['last_us'] / med['first_us']:.2f}×)"
        )


if __name__ == "__main__":
    main()
