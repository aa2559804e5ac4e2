"""Two versions of ``batonflow.core`` side by side in one process: event creation and the chain.

Usage::

    mkdir /tmp/old && git archive <commit> core | tar -x -C /tmp/old
    .venv/bin/python bench/core_ab.py /tmp/old/core core

Both ``core`` folders are copied into a temporary folder as packages ``old_core`` and
``new_core`` (``core`` imports only itself relatively), loaded in one interpreter, and measured
alternately, round by round, in CPU time (``time.process_time``), taking each figure's best
round: on a shared, noisy machine that is the figure least disturbed by other processes. The
workloads are event creation (a two-field event, ``StopEvent(result=...)``,
``StartEvent(topic=...)``), bench's ``chain`` (one step looping by returning its own event),
bench's ``fanout`` (2,000 sent events through a ``num_workers=16`` step and a join) and the same
chain as a durable run (``WorkflowCheckpointer`` on a ``SqliteCheckpointStore`` file in a
temporary folder: a checkpoint after every step), also with each step writing a stream event
(one event-log entry a step besides its checkpoint).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import shutil
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

ROUNDS = 30


def load(core_dir: Path, name: str, root: Path) -> Any:
    """Copy ``core_dir`` to ``root/name/core`` and import it as ``name.core``."""
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copytree(core_dir, package / "core")
    return importlib.import_module(f"{name}.core")


def chain_flow(core: Any) -> Any:
    """bench's chain workload for one core."""

    class Tick(core.Event):
        i: int
        n: int

    class ChainFlow(core.Workflow):
        @core.step
        async def begin(self, ev: core.StartEvent) -> Tick:
            return Tick(i=0, n=ev.n)

        @core.step
        async def loop(self, ev: Tick) -> Tick | core.StopEvent:
            if ev.i + 1 >= ev.n:
                return core.StopEvent(result=ev.i + 1)
            return Tick(i=ev.i + 1, n=ev.n)

    return Tick, ChainFlow(timeout=None)


def fanout_flow(core: Any) -> Any:
    """bench's fanout workload for one core: sent events through a ``num_workers=16`` step,
    joined with ``collect_events``."""

    class Item(core.Event):
        i: int
        n: int

    class Done(core.Event):
        i: int
        n: int

    class FanOut(core.Workflow):
        @core.step
        async def start(self, ctx: core.Context, ev: core.StartEvent) -> Item | None:
            for i in range(ev.n):
                ctx.send_event(Item(i=i, n=ev.n))
            return None

        @core.step(num_workers=16)
        async def work(self, ev: Item) -> Done:
            return Done(i=ev.i * 2, n=ev.n)

        @core.step
        async def join(self, ctx: core.Context, ev: Done) -> core.StopEvent | None:
            got = ctx.collect_events(ev, Done, count=ev.n)
            if got is None:
                return None
            return core.StopEvent(result=(len(got), sum(e.i for e in got)))

    return FanOut(timeout=None)


def streaming_chain(core: Any, folder: Path) -> Any:
    """The chain, each step writing one stream event (kept in the run's event log), durable
    on a SQLite file in ``folder``."""

    class Tick(core.Event):
        i: int
        n: int

    class StreamingChain(core.Workflow):
        @core.step
        async def begin(self, ev: core.StartEvent) -> Tick:
            return Tick(i=0, n=ev.n)

        @core.step
        async def loop(self, ctx: core.Context, ev: Tick) -> Tick | core.StopEvent:
            ctx.write_event_to_stream(ev)
            if ev.i + 1 >= ev.n:
                return core.StopEvent(result=ev.i + 1)
            return Tick(i=ev.i + 1, n=ev.n)

    store = core.SqliteCheckpointStore(folder / "streaming.db")
    return core.WorkflowCheckpointer(StreamingChain(timeout=None), store=store)


def durable_chain(core: Any, folder: Path) -> Any:
    """The chain through a ``WorkflowCheckpointer`` on a SQLite file in ``folder``."""
    store = core.SqliteCheckpointStore(folder / "checkpoints.db")
    return core.WorkflowCheckpointer(chain_flow(core)[1], store=store)


async def measure(
    cores: dict[str, Any], folder: Path, rounds: int = ROUNDS
) -> dict[tuple[str, str], float]:
    """Best per-item CPU time in µs for each (core, workload)."""
    setups = {name: chain_flow(core) for name, core in cores.items()}
    fanouts = {name: fanout_flow(core) for name, core in cores.items()}
    durable = {}
    streaming = {}
    for name, core in cores.items():
        (folder / name).mkdir()
        durable[name] = durable_chain(core, folder / name)
        streaming[name] = streaming_chain(core, folder / name)
    statements = {
        "event(i, n)": "Tick(i=1, n=2)",
        "StopEvent(result)": "StopEvent(result=1)",
        "StartEvent(topic)": "StartEvent(topic='x')",
    }
    best: dict[tuple[str, str], float] = {}
    for flow in (setup[1] for setup in setups.values()):
        assert await flow.run(n=500) == 500  # warm-up
    for cptr in durable.values():
        assert await cptr.run(n=100) == 100
    for cptr in streaming.values():
        assert await cptr.run(n=100) == 100
    for round_ in range(rounds):
        names = list(cores) if round_ % 2 else list(reversed(cores))
        for name in names:
            core, (tick, flow) = cores[name], setups[name]
            scope = {"Tick": tick, "StopEvent": core.StopEvent, "StartEvent": core.StartEvent}
            for label, statement in statements.items():
                timer = timeit.Timer(statement, globals=scope, timer=time.process_time)
                cost = timer.timeit(20_000) / 20_000 * 1e6
                best[(name, label)] = min(best.get((name, label), cost), cost)
            n = 3_000
            start = time.process_time()
            assert await flow.run(n=n) == n
            cost = (time.process_time() - start) / n * 1e6
            best[(name, "chain (per step)")] = min(best.get((name, "chain (per step)"), cost), cost)
            n = 2_000
            start = time.process_time()
            assert await fanouts[name].run(n=n) == (n, n * (n - 1))
            cost = (time.process_time() - start) / n * 1e6
            label = "fanout (per event)"
            best[(name, label)] = min(best.get((name, label), cost), cost)
            n = 500
            start = time.process_time()
            assert await durable[name].run(n=n) == n
            cost = (time.process_time() - start) / n * 1e6
            label = "durable chain (per step)"
            best[(name, label)] = min(best.get((name, label), cost), cost)
            start = time.process_time()
            assert await streaming[name].run(n=n) == n
            cost = (time.process_time() - start) / n * 1e6
            label = "durable chain, a stream event a step (per step)"
            best[(name, label)] = min(best.get((name, label), cost), cost)
    return best


def main() -> None:
    """Parse the two folders, measure, print a table of new/old ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path, help="the old version's core/ folder")
    parser.add_argument("new", type=Path, help="the new version's core/ folder")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds (best one kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sys.path.insert(0, tmp)
        cores = {"old": load(args.old, "old_core", root), "new": load(args.new, "new_core", root)}
        best = asyncio.run(measure(cores, root, args.rounds))
    report(best)


def report(best: dict[tuple[str, str], float]) -> None:
    """Print one row per workload: old, new, and their ratio."""
    print("| workload | old (µs) | new (µs) | new / old |")
    print("|---|---|---|---|")
    for label in dict.fromkeys(label for _, label in best):
        old, new = best[("old", label)], best[("new", label)]
        print(f"| {label} | {old:.2f} | {new:.2f} | {new / old:.3f} |")


if __name__ == "__main__":
    main()
