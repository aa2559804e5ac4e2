"""The raw-asyncio floor: the same workloads on a tiny queue-and-task router.

No validation, no pydantic, no instruments, no state snapshots: one queue per run, one task per
step execution (a pool of worker tasks for a ``num_workers`` step). This is about the least an
event-driven engine on asyncio can do, so "batonflow / floor" says how close to the limit the
engine is. ``fanout_pool`` is the stricter floor for fan-out: every step a pool of long-lived
worker tasks fed directly, no central dispatcher, no task per event; ``make_fanout_pool(Event)``
runs it on the workload's own pydantic events, so both sides build the same events.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable
from typing import Any

from workloads import Once, WrongResult, check, wait_until


class Stop:
    __slots__ = ("result",)

    def __init__(self, result: Any) -> None:
        self.result = result


class Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class Ev:
    """A plain event: a slotted object with a few fields."""

    __slots__ = ("i", "n")

    def __init__(self, i: int = 0, n: int = 0) -> None:
        self.i = i
        self.n = n


Handler = Callable[["Run", Any], Awaitable[Any]]


class Router:
    """Maps event types to async handlers (and optional worker limits)."""

    def __init__(self, handlers: dict[type, tuple[Handler, int | None]]) -> None:
        self.handlers = handlers

    def run(self, start: Any) -> asyncio.Task[Any]:
        """Start a run on ``start`` and return its task (await it for the result)."""
        run = Run(self)
        task = asyncio.ensure_future(run.loop(start))
        task.run = run  # type: ignore[attr-defined]
        return task


class Run:
    """One run: its queue, its tasks, its worker pools, its join buffer, its stream."""

    def __init__(self, router: Router) -> None:
        self.router = router
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.pools: dict[type, asyncio.Queue[Any]] = {}
        self.stream: asyncio.Queue[Any] = asyncio.Queue()
        self.buffer: list[Any] = []

    def send_event(self, ev: Any) -> None:
        self.queue.put_nowait(ev)

    def spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def loop(self, start: Any) -> Any:
        self.queue.put_nowait(start)
        handlers = self.router.handlers
        try:
            while True:
                ev = await self.queue.get()
                kind = type(ev)
                if kind is Stop:
                    self.stream.put_nowait(ev)
                    return ev.result
                if kind is Failed:
                    raise ev.error
                fn, workers = handlers[kind]
                if workers is None:
                    # An unlimited step: one task per event.
                    self.spawn(self.execute(fn, ev))
                    continue
                # A num_workers step: a pool of that many tasks reading one queue.
                pool = self.pools.get(kind)
                if pool is None:
                    pool = self.pools[kind] = asyncio.Queue()
                    for _ in range(workers):
                        self.spawn(self.worker(fn, pool))
                pool.put_nowait(ev)
        finally:
            for task in self.tasks:
                task.cancel()

    async def worker(self, fn: Handler, pool: asyncio.Queue[Any]) -> None:
        while True:
            await self.execute(fn, await pool.get())

    async def execute(self, fn: Handler, ev: Any) -> None:
        try:
            out = await fn(self, ev)
        except Exception as exc:
            self.queue.put_nowait(Failed(exc))
            return
        if out is not None:
            self.queue.put_nowait(out)


class Start(Ev):
    __slots__ = ()


class Tick(Ev):
    __slots__ = ()


def make_chain() -> Once:
    async def loop(run: Run, ev: Tick) -> Any:
        if ev.i + 1 >= ev.n:
            return Stop(ev.i + 1)
        return Tick(ev.i + 1, ev.n)

    async def begin(run: Run, ev: Start) -> Tick:
        return Tick(0, ev.n)

    router = Router({Start: (begin, None), Tick: (loop, None)})

    async def once(n: int) -> dict[str, float]:
        t0 = time.perf_counter()
        result = await router.run(Start(0, n))
        elapsed = time.perf_counter() - t0
        check("chain loop count", result, n)
        return {"us_per_step": elapsed / n * 1e6}

    return once


def make_linear10() -> Once:
    kinds = [type(f"L{k}", (Ev,), {"__slots__": ()}) for k in range(10)]

    def stage(k: int) -> Handler:
        nxt = kinds[k + 1] if k < 9 else None

        async def handle(run: Run, ev: Ev) -> Any:
            if nxt is None:
                return Stop(ev.i + 1)
            return nxt(ev.i + 1)

        return handle

    router = Router({kinds[k]: (stage(k), None) for k in range(10)})

    async def once(n: int) -> dict[str, float]:
        t0 = time.perf_counter()
        total = 0
        for i in range(n):
            total += await router.run(kinds[0](i))
        elapsed = time.perf_counter() - t0
        check("linear10 results", total, sum(range(n)) + 10 * n)
        return {"us_per_run": elapsed / n * 1e6}

    return once


def make_concurrent_runs() -> Once:
    class A(Ev):
        __slots__ = ()

    class B(Ev):
        __slots__ = ()

    async def first(run: Run, ev: Start) -> A:
        return A(ev.i)

    async def second(run: Run, ev: A) -> B:
        return B(ev.i * 2)

    async def third(run: Run, ev: B) -> Stop:
        return Stop(ev.i + 1)

    router = Router({Start: (first, None), A: (second, None), B: (third, None)})

    async def once(n: int) -> dict[str, float]:
        t0 = time.perf_counter()
        results = await asyncio.gather(*[router.run(Start(i)) for i in range(n)])
        elapsed = time.perf_counter() - t0
        check("concurrent_runs results", sum(results), 2 * sum(range(n)) + n)
        return {"runs_per_s": n / elapsed}

    return once


def make_fanout() -> Once:
    class Item(Ev):
        __slots__ = ()

    class Done(Ev):
        __slots__ = ()

    async def start(run: Run, ev: Start) -> None:
        for i in range(ev.n):
            run.send_event(Item(i, ev.n))

    async def work(run: Run, ev: Item) -> Done:
        return Done(ev.i * 2, ev.n)

    async def join(run: Run, ev: Done) -> Stop | None:
        run.buffer.append(ev)
        if len(run.buffer) < ev.n:
            return None
        got, run.buffer = run.buffer, []
        return Stop((len(got), sum(e.i for e in got)))

    router = Router({Start: (start, None), Item: (work, 16), Done: (join, None)})

    async def once(n: int) -> dict[str, float]:
        t0 = time.perf_counter()
        result = await router.run(Start(0, n))
        elapsed = time.perf_counter() - t0
        check("fanout (count, sum)", result, (n, 2 * sum(range(n))))
        return {"events_per_s": n / elapsed, "seconds": elapsed}

    return once


class PoolRun:
    """A run where every step is a pool of long-lived worker tasks reading its own queue.

    No central dispatcher and no task per event: an event goes straight into the queue of the
    step that takes it, and the step's workers (started once per run) pull from it. This is
    the floor the engine's worker tasks are measured against (``fanout_pool``).
    """

    def __init__(self, handlers: dict[type, tuple[Handler, int]]) -> None:
        self.queues: dict[type, asyncio.Queue[Any]] = {}
        self.workers: list[asyncio.Task[Any]] = []
        self.done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.buffer: list[Any] = []
        for kind, (fn, workers) in handlers.items():
            queue: asyncio.Queue[Any] = asyncio.Queue()
            self.queues[kind] = queue
            for _ in range(workers):
                self.workers.append(asyncio.create_task(self.worker(fn, queue)))

    def send_event(self, ev: Any) -> None:
        if type(ev) is Stop:
            if not self.done.done():
                self.done.set_result(ev.result)
            return
        self.queues[type(ev)].put_nowait(ev)

    async def worker(self, fn: Handler, queue: asyncio.Queue[Any]) -> None:
        while True:
            ev = await queue.get()
            try:
                out = await fn(self, ev)  # type: ignore[arg-type]
            except Exception as exc:
                if not self.done.done():
                    self.done.set_exception(exc)
                return
            if out is not None:
                self.send_event(out)

    async def run(self, start: Any) -> Any:
        self.send_event(start)
        try:
            return await self.done
        finally:
            for task in self.workers:
                task.cancel()


class Record:
    """The least an engine that snapshots and traces lineage keeps per execution.

    Its id (lineage, ``wait_for_event``), step and event (what a snapshot re-queues), the
    ids of the executions whose outputs it took (origins), and when it started (durations,
    timeouts). Nothing else: no attempts, worker numbers, retry or recovery state.
    """

    __slots__ = ("event", "id", "origins", "started", "step")

    def __init__(self, eid: int, step: Any, event: Any, origin: int | None) -> None:
        self.id = eid
        self.step = step
        self.event = event
        self.origins = () if origin is None else (origin,)
        self.started = 0.0


#: The execution a worker is running now, as an engine's ``ctx.send_event`` needs it to know
#: the sender (a one-element cell, set once per execution, as batonflow does).
CURRENT: contextvars.ContextVar[list[Record | None]] = contextvars.ContextVar("current")


class RecordedPoolRun(PoolRun):
    """:class:`PoolRun` keeping a :class:`Record` per execution in a table of running ones.

    The table is what a snapshot reads (the executions queued or under way); an execution
    enters it when its event is sent and leaves it when its step returns. This is the
    worker-pool floor plus the per-execution record, nothing more (``fanout_pool_record``).
    """

    def __init__(self, handlers: dict[type, tuple[Handler, int]]) -> None:
        super().__init__(handlers)
        self.running: dict[int, Record] = {}
        self.next_id = 0

    def send_event(self, ev: Any, origin: int | None = None) -> None:
        if type(ev) is Stop:
            if not self.done.done():
                self.done.set_result(ev.result)
            return
        eid = self.next_id
        self.next_id = eid + 1
        kind = type(ev)
        record = Record(eid, kind, ev, origin)
        self.running[eid] = record
        self.queues[kind].put_nowait(record)

    async def worker(self, fn: Handler, queue: asyncio.Queue[Any]) -> None:
        clock = time.monotonic
        while True:
            record = await queue.get()
            cell: list[Record | None] = [record]
            CURRENT.set(cell)
            record.started = clock()
            try:
                out = await fn(self, record.event)  # type: ignore[arg-type]
            except Exception as exc:
                if not self.done.done():
                    self.done.set_exception(exc)
                return
            cell[0] = None
            del self.running[record.id]
            if out is not None:
                self.send_event(out, record.id)


def make_fanout_pool(event: type | None = None, record: bool = False) -> Once:
    """``fanout`` on :class:`PoolRun`: start, 16 workers, and a join, each a worker pool.

    Args:
        event: The event base class to build ``Item`` and ``Done`` from (the workload's own,
            e.g. ``batonflow.core.Event``, so both sides construct the same pydantic events);
            default: slotted plain objects, the floor of the router alone.
        record: Run on :class:`RecordedPoolRun`: the pool plus a minimal record per execution.
    """
    run_class = RecordedPoolRun if record else PoolRun
    if event is None:

        class Item(Ev):
            __slots__ = ()

        class Done(Ev):
            __slots__ = ()

        def item(i: int, n: int) -> Any:
            return Item(i, n)

        def done(i: int, n: int) -> Any:
            return Done(i, n)

    else:
        Item = type("Item", (event,), {"__annotations__": {"i": int, "n": int}})  # type: ignore[assignment]
        Done = type("Done", (event,), {"__annotations__": {"i": int, "n": int}})  # type: ignore[assignment]

        def item(i: int, n: int) -> Any:
            return Item(i=i, n=n)  # type: ignore[call-arg]

        def done(i: int, n: int) -> Any:
            return Done(i=i, n=n)  # type: ignore[call-arg]

    async def start(run: PoolRun, ev: Start) -> None:
        for i in range(ev.n):
            run.send_event(item(i, ev.n))

    async def work(run: PoolRun, ev: Any) -> Any:
        return done(ev.i * 2, ev.n)

    async def join(run: PoolRun, ev: Any) -> Stop | None:
        run.buffer.append(ev)
        if len(run.buffer) < ev.n:
            return None
        got, run.buffer = run.buffer, []
        return Stop((len(got), sum(e.i for e in got)))

    handlers: dict[type, tuple[Handler, int]] = {
        Start: (start, 1),  # type: ignore[dict-item]
        Item: (work, 16),  # type: ignore[dict-item]
        Done: (join, 1),  # type: ignore[dict-item]
    }

    async def once(n: int) -> dict[str, float]:
        t0 = time.perf_counter()
        c0 = time.process_time()
        result = await run_class(handlers).run(Start(0, n))
        cpu = time.process_time() - c0
        elapsed = time.perf_counter() - t0
        check("fanout (count, sum)", result, (n, 2 * sum(range(n))))
        return {"events_per_s": n / elapsed, "seconds": elapsed, "cpu_seconds": cpu}

    return once


def make_stream() -> Once:
    class Progress(Ev):
        __slots__ = ()

    async def emit(run: Run, ev: Start) -> Stop:
        for i in range(ev.n):
            run.stream.put_nowait(Progress(i))
        return Stop(ev.n)

    router = Router({Start: (emit, None)})

    async def once(n: int) -> dict[str, float]:
        t0 = time.perf_counter()
        task = router.run(Start(0, n))
        stream: asyncio.Queue[Any] = task.run.stream  # type: ignore[attr-defined]
        count = 0
        total = 0
        while True:
            ev = await stream.get()
            if type(ev) is Stop:
                break
            count += 1
            total += ev.i
        result = await task
        elapsed = time.perf_counter() - t0
        check("stream events seen", (count, total, result), (n, sum(range(n)), n))
        return {"events_per_s": n / elapsed}

    return once


class Store:
    """A minimal async state store: a dict and a lock."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.lock = asyncio.Lock()

    async def set(self, key: str, value: Any) -> None:
        self.data[key] = value

    async def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)


def make_state() -> Once:
    async def work(run: Run, ev: Start) -> Stop:
        n = ev.n
        store = Store()
        t0 = time.perf_counter()
        for i in range(n):
            await store.set("item", i)
            if await store.get("item") != i:
                raise WrongResult("state lost a write")
        t1 = time.perf_counter()
        for _ in range(n):
            async with store.lock:
                state = store.data
                state["counter"] = state.get("counter", 0) + 1
        t2 = time.perf_counter()
        return Stop((t1 - t0, t2 - t1, await store.get("counter")))

    router = Router({Start: (work, None)})

    async def once(n: int) -> dict[str, float]:
        pairs, edits, counter = await router.run(Start(0, n))
        check("edit_state increments", counter, n)
        return {"us_per_pair": pairs / n * 1e6, "us_per_edit": edits / n * 1e6}

    return once


def make_memory() -> Once:
    import gc
    import tracemalloc

    gate: dict[str, Any] = {}

    async def park(run: Run, ev: Start) -> Stop:
        gate["parked"] += 1
        await gate["event"].wait()
        return Stop(1)

    router = Router({Start: (park, None)})

    async def once(n: int) -> dict[str, float]:
        gate["event"] = asyncio.Event()
        gate["parked"] = 0
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        tasks = [router.run(Start()) for _ in range(n)]
        await wait_until(lambda: gate["parked"] == n, f"{n} runs to park")
        gc.collect()
        parked = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        gate["event"].set()
        results = await asyncio.gather(*tasks)
        check("parked runs finished", sum(results), n)
        return {"bytes_per_run": (parked - base) / n}

    return once


FLOOR_WORKLOADS: dict[str, Callable[[], Once]] = {
    "chain": make_chain,
    "linear10": make_linear10,
    "concurrent_runs": make_concurrent_runs,
    "fanout": make_fanout,
    "fanout_pool": make_fanout_pool,
    "stream": make_stream,
    "state": make_state,
    "memory": make_memory,
}
