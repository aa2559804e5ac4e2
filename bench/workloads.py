"""The engine workloads, written once against :class:`api.Api`.

Each ``make_<workload>(api)`` defines its workflow classes for that engine (outside any timing)
and returns ``once(n)``: an async function that runs the workload at size ``n`` and returns its
figures (``{metric: value}``). Every ``once`` checks its own result and raises
:class:`WrongResult` on a wrong count, so a fast but broken engine can never post a figure.

No ``from __future__ import annotations`` here: the step annotations name classes local to the
``make_*`` functions, and both engines read annotations at class-definition time.
"""

import asyncio
import gc
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

from api import Api

Once = Callable[[int], Awaitable[dict[str, float]]]

#: Filled by the memory workload when ``hotspots.py`` asks for allocation snapshots.
SNAPSHOTS: dict[str, tracemalloc.Snapshot] = {}
TAKE_SNAPSHOTS = {"on": False}

# Generous: llama-index-workflows defaults to a 45 s timeout, and no workload should time out.
TIMEOUT = None


class WrongResult(Exception):
    """A workload produced a wrong result: its figure is void."""


def check(what: str, got: Any, expected: Any) -> None:
    """Fail loudly when ``got`` is not ``expected``."""
    if got != expected:
        raise WrongResult(f"{what}: expected {expected!r}, got {got!r}")


def make_chain(
    api: Api,
    workflow_kwargs: dict[str, Any] | None = None,
    wrap: Callable[[Any], Any] | None = None,
    after: Callable[[Any, int], None] | None = None,
) -> Once:
    """One step loops ``n`` times by returning its own event type (µs per step).

    ``workflow_kwargs`` go to the workflow's constructor (e.g. instruments); ``wrap`` turns the
    workflow into the object whose ``run(**kw)`` is timed (e.g. a checkpointer); ``after(handler,
    n)`` checks more of the outcome, outside the timing.
    """
    Event, StartEvent, StopEvent, step = api.Event, api.StartEvent, api.StopEvent, api.step

    class Tick(Event):
        i: int
        n: int

    class ChainFlow(api.Workflow):
        @step
        async def begin(self, ev: StartEvent) -> Tick:
            return Tick(i=0, n=ev.n)

        @step
        async def loop(self, ev: Tick) -> Tick | StopEvent:
            if ev.i + 1 >= ev.n:
                return StopEvent(result=ev.i + 1)
            return Tick(i=ev.i + 1, n=ev.n)

    flow = ChainFlow(timeout=TIMEOUT, **(workflow_kwargs or {}))
    runner = wrap(flow) if wrap is not None else flow

    async def once(n: int) -> dict[str, float]:
        t0, cpu0 = time.perf_counter(), time.process_time()
        handler = runner.run(n=n)
        result = await handler
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        check("chain loop count", result, n)
        if after is not None:
            after(handler, n)
        # CPU time (this process's user + system time) beside the wall time: on a shared
        # machine the wall time also holds other processes' time slices.
        return {"us_per_step": elapsed / n * 1e6, "cpu_us_per_step": cpu / n * 1e6}

    return once


def make_linear10(api: Api) -> Once:
    """A 10-step linear flow run ``n`` times in sequence (µs per run)."""
    Event, StartEvent, StopEvent, step = api.Event, api.StartEvent, api.StopEvent, api.step

    class E1(Event):
        x: int

    class E2(Event):
        x: int

    class E3(Event):
        x: int

    class E4(Event):
        x: int

    class E5(Event):
        x: int

    class E6(Event):
        x: int

    class E7(Event):
        x: int

    class E8(Event):
        x: int

    class E9(Event):
        x: int

    class Linear10(api.Workflow):
        @step
        async def s0(self, ev: StartEvent) -> E1:
            return E1(x=ev.x + 1)

        @step
        async def s1(self, ev: E1) -> E2:
            return E2(x=ev.x + 1)

        @step
        async def s2(self, ev: E2) -> E3:
            return E3(x=ev.x + 1)

        @step
        async def s3(self, ev: E3) -> E4:
            return E4(x=ev.x + 1)

        @step
        async def s4(self, ev: E4) -> E5:
            return E5(x=ev.x + 1)

        @step
        async def s5(self, ev: E5) -> E6:
            return E6(x=ev.x + 1)

        @step
        async def s6(self, ev: E6) -> E7:
            return E7(x=ev.x + 1)

        @step
        async def s7(self, ev: E7) -> E8:
            return E8(x=ev.x + 1)

        @step
        async def s8(self, ev: E8) -> E9:
            return E9(x=ev.x + 1)

        @step
        async def s9(self, ev: E9) -> StopEvent:
            return StopEvent(result=ev.x + 1)

    flow = Linear10(timeout=TIMEOUT)

    async def once(n: int) -> dict[str, float]:
        t0 = time.perf_counter()
        total = 0
        for i in range(n):
            total += await flow.run(x=i)
        elapsed = time.perf_counter() - t0
        check("linear10 results", total, sum(range(n)) + 10 * n)
        return {"us_per_run": elapsed / n * 1e6}

    return once


def make_concurrent_runs(api: Api) -> Once:
    """``n`` runs of a 3-step flow started at once (runs per second)."""
    Event, StartEvent, StopEvent, step = api.Event, api.StartEvent, api.StopEvent, api.step

    class A(Event):
        x: int

    class B(Event):
        x: int

    class Three(api.Workflow):
        @step
        async def first(self, ev: StartEvent) -> A:
            return A(x=ev.x)

        @step
        async def second(self, ev: A) -> B:
            return B(x=ev.x * 2)

        @step
        async def third(self, ev: B) -> StopEvent:
            return StopEvent(result=ev.x + 1)

    flow = Three(timeout=TIMEOUT)

    async def once(n: int) -> dict[str, float]:
        t0 = time.perf_counter()
        results = await asyncio.gather(*[flow.run(x=i) for i in range(n)])
        elapsed = time.perf_counter() - t0
        check("concurrent_runs results", sum(results), 2 * sum(range(n)) + n)
        return {"runs_per_s": n / elapsed}

    return once


def make_fanout(api: Api) -> Once:
    """send_event ``n`` events to a num_workers=16 step, collect_events them all (events/s)."""
    Event, StartEvent, StopEvent, step = api.Event, api.StartEvent, api.StopEvent, api.step
    Context = api.Context

    class Item(Event):
        i: int
        n: int

    class Done(Event):
        i: int
        n: int

    # The list of expected types is built once per size, not once per event: the benchmark
    # measures the engine's join, not the user's list building.
    expected: dict[int, list[type]] = {}

    class FanOut(api.Workflow):
        @step
        async def start(self, ctx: Context, ev: StartEvent) -> Item | None:
            for i in range(ev.n):
                ctx.send_event(Item(i=i, n=ev.n))
            return None

        @step(num_workers=16)
        async def work(self, ev: Item) -> Done:
            return Done(i=ev.i * 2, n=ev.n)

        @step
        async def join(self, ctx: Context, ev: Done) -> StopEvent | None:
            wanted = expected.get(ev.n)
            if wanted is None:
                wanted = expected[ev.n] = [Done] * ev.n
            got = ctx.collect_events(ev, wanted)
            if got is None:
                return None
            return StopEvent(result=(len(got), sum(e.i for e in got)))

    flow = FanOut(timeout=TIMEOUT)

    async def once(n: int) -> dict[str, float]:
        t0 = time.perf_counter()
        c0 = time.process_time()
        result = await flow.run(n=n)
        cpu = time.process_time() - c0
        elapsed = time.perf_counter() - t0
        check("fanout (count, sum)", tuple(result), (n, 2 * sum(range(n))))
        return {"events_per_s": n / elapsed, "seconds": elapsed, "cpu_seconds": cpu}

    return once


def make_stream(api: Api) -> Once:
    """``n`` write_event_to_stream consumed by stream_events (events/s)."""
    Event, StartEvent, StopEvent, step = api.Event, api.StartEvent, api.StopEvent, api.step
    Context = api.Context

    class Progress(Event):
        i: int

    class Streamer(api.Workflow):
        @step
        async def emit(self, ctx: Context, ev: StartEvent) -> StopEvent:
            for i in range(ev.n):
                ctx.write_event_to_stream(Progress(i=i))
            return StopEvent(result=ev.n)

    flow = Streamer(timeout=TIMEOUT)

    async def once(n: int) -> dict[str, float]:
        t0 = time.perf_counter()
        handler = flow.run(n=n)
        count = 0
        total = 0
        async for ev in handler.stream_events():
            if isinstance(ev, Progress):
                count += 1
                total += ev.i
        result = await handler
        elapsed = time.perf_counter() - t0
        check("stream events seen", (count, total, result), (n, sum(range(n)), n))
        return {"events_per_s": n / elapsed}

    return once


def make_state(api: Api) -> Once:
    """ctx.store set+get pairs and edit_state increments, timed inside one step (µs per op)."""
    StartEvent, StopEvent, step = api.StartEvent, api.StopEvent, api.step
    Context = api.Context

    class StateFlow(api.Workflow):
        @step
        async def work(self, ctx: Context, ev: StartEvent) -> StopEvent:
            n = ev.n
            store = ctx.store
            t0 = time.perf_counter()
            for i in range(n):
                await store.set("item", i)
                if await store.get("item") != i:
                    raise WrongResult("ctx.store.get did not return what set stored")
            t1 = time.perf_counter()
            for _ in range(n):
                async with store.edit_state() as state:
                    state["counter"] = state.get("counter", 0) + 1
            t2 = time.perf_counter()
            counter = await store.get("counter")
            return StopEvent(result=(t1 - t0, t2 - t1, counter))

    flow = StateFlow(timeout=TIMEOUT)

    async def once(n: int) -> dict[str, float]:
        pairs, edits, counter = await flow.run(n=n)
        check("edit_state increments", counter, n)
        return {"us_per_pair": pairs / n * 1e6, "us_per_edit": edits / n * 1e6}

    return once


def make_memory(api: Api) -> Once:
    """``n`` runs parked in a step awaiting an asyncio.Event (bytes per parked run)."""
    StartEvent, StopEvent, step = api.StartEvent, api.StopEvent, api.step
    gate: dict[str, Any] = {}

    class Parked(api.Workflow):
        @step
        async def park(self, ev: StartEvent) -> StopEvent:
            gate["parked"] += 1
            await gate["event"].wait()
            return StopEvent(result=1)

    flow = Parked(timeout=TIMEOUT)

    async def once(n: int) -> dict[str, float]:
        gate["event"] = asyncio.Event()
        gate["parked"] = 0
        gc.collect()
        tracemalloc.start(25 if TAKE_SNAPSHOTS["on"] else 1)
        base = tracemalloc.get_traced_memory()[0]
        if TAKE_SNAPSHOTS["on"]:
            SNAPSHOTS["base"] = tracemalloc.take_snapshot()
        handlers = [flow.run() for _ in range(n)]
        await wait_until(lambda: gate["parked"] == n, f"{n} runs to park")
        gc.collect()
        parked = tracemalloc.get_traced_memory()[0]
        if TAKE_SNAPSHOTS["on"]:
            SNAPSHOTS["parked"] = tracemalloc.take_snapshot()
        tracemalloc.stop()
        gate["event"].set()
        results = await asyncio.gather(*handlers)
        check("parked runs finished", sum(results), n)
        return {"bytes_per_run": (parked - base) / n}

    return once


async def wait_until(cond: Callable[[], bool], what: str, limit: float = 60.0) -> None:
    """Poll ``cond`` on the running loop until true; fail after ``limit`` seconds."""
    deadline = time.perf_counter() + limit
    while not cond():
        if time.perf_counter() > deadline:
            raise WrongResult(f"timed out waiting for {what}")
        await asyncio.sleep(0.001)


ENGINE_WORKLOADS: dict[str, Callable[[Api], Once]] = {
    "chain": make_chain,
    "linear10": make_linear10,
    "concurrent_runs": make_concurrent_runs,
    "fanout": make_fanout,
    "stream": make_stream,
    "state": make_state,
    "memory": make_memory,
}
