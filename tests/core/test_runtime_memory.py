"""Finished runs and step executions are freed by reference counting; fan-outs reuse tasks."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

import pytest
from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step


class Item(Event):
    n: int


class Done(Event):
    n: int


class Fan(Workflow):
    @step
    async def start(self, ctx: Context, ev: StartEvent) -> Item | None:
        for i in range(ev.count):
            ctx.send_event(Item(n=i))
        return None

    @step(num_workers=8)
    async def work(self, ev: Item) -> Done:
        return Done(n=ev.n)

    @step
    async def join(self, ctx: Context, ev: Done) -> StopEvent | None:
        got = ctx.collect_events(ev, [Done] * 40)
        return None if got is None else StopEvent(result=sum(d.n for d in got))


def _executions_of(workflow: Workflow, step_name: str | None = None) -> list[object]:
    """The step executions of ``workflow``'s runs (of one step, if named) still in memory."""
    return [
        o
        for o in gc.get_objects()
        if type(o).__name__ == "Execution"
        and type(o).__module__ == "batonflow.core.engine._lanes"
        and o.run.workflow is workflow
        and step_name in (None, o.lane.spec.name)
    ]


async def test_finished_executions_leave_no_cyclic_garbage():
    """After a fan-out run, no step execution is left alive waiting for a GC pass."""
    gc.collect()
    gc.disable()
    try:
        flow = Fan(timeout=10)
        assert await flow.run(count=40) == sum(range(40))
        alive = _executions_of(flow)
    finally:
        gc.enable()
    assert alive == []


class Boom(Workflow):
    @step
    async def start(self, ctx: Context, ev: StartEvent) -> Item | None:
        for i in range(ev.count):
            ctx.send_event(Item(n=i))
        raise RuntimeError("boom")  # fails the run while the sent items' tasks wait to start

    @step(num_workers=8)
    async def work(self, ev: Item) -> StopEvent:
        return StopEvent(result=ev.n)


async def test_executions_cancelled_before_starting_leave_no_cyclic_garbage():
    """A run that fails with step tasks not yet started frees those executions too."""
    gc.collect()
    gc.disable()
    try:
        flow = Boom(timeout=10)
        with pytest.raises(RuntimeError, match="boom"):
            await flow.run(count=20)
        # (the failed start step's own execution stays reachable from the raised traceback)
        alive = _executions_of(flow, "work")
    finally:
        gc.enable()
    assert alive == []


def _runs_of(workflow: Workflow) -> list[object]:
    """The runs of ``workflow`` still in memory."""
    return [
        o
        for o in gc.get_objects()
        if type(o).__name__ == "Run"
        and type(o).__module__ == "batonflow.core.engine._runtime"
        and o.workflow is workflow
    ]


async def test_finished_runs_are_freed_by_refcount():
    """A finished run whose handler and Context are dropped is freed at once, with no GC pass."""
    gc.collect()
    gc.disable()
    try:
        flow = Fan(timeout=10)
        for _ in range(3):
            assert await flow.run(count=40) == sum(range(40))
        # One loop turn: the handle that woke us (it holds the last handler) is released.
        await asyncio.sleep(0)
        alive = _runs_of(flow)
    finally:
        gc.enable()
    assert alive == []
    assert flow.execution_trace()  # the last run's trace is kept for drawing, not the run


async def test_workflow_not_pinned_by_timer_handles_its_steps_create():
    """A timer a step schedules (its context copied) does not keep the workflow alive."""
    handles: list[asyncio.TimerHandle] = []

    class Timers(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            handles.append(asyncio.get_running_loop().call_later(3600, lambda: None))
            return StopEvent(result="done")

    refs = []
    try:
        for _ in range(3):
            flow = Timers()
            refs.append(weakref.ref(flow))
            assert await flow.run() == "done"
            del flow
        await asyncio.sleep(0)  # the handle that woke us holds the last handler until then
        gc.collect()
        assert [r() for r in refs] == [None, None, None]
    finally:
        for handle in handles:
            handle.cancel()


async def _tasks_of_a_fan_out(count: int) -> int:
    """How many tasks a run of ``count`` events through Fan's num_workers=8 step creates."""
    loop = asyncio.get_running_loop()
    created = 0
    previous = loop.get_task_factory()

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        nonlocal created
        created += 1
        return asyncio.Task(coro, loop=loop, **kwargs)

    class Wide(Fan):
        @step
        async def join(self, ctx: Context, ev: Done) -> StopEvent | None:
            got = ctx.collect_events(ev, Done, count=count)
            return None if got is None else StopEvent(result=len(got))

    flow = Wide(timeout=60)
    loop.set_task_factory(counting)
    try:
        assert await flow.run(count=count) == count
    finally:
        loop.set_task_factory(previous)
    return created


@pytest.mark.parametrize("count", [2_000, 10_000])
async def test_a_fan_out_runs_on_a_few_worker_tasks(count: int) -> None:
    """A fan-out whose steps never suspend runs on a handful of tasks, not one per event
    (20,000 for 10,000 events before): a worker takes the next ready execution itself, and
    adds one worker only in case its step suspends."""
    assert await _tasks_of_a_fan_out(count) <= 4


async def test_runs_started_beside_many_parked_runs_leave_nothing_for_the_gc() -> None:
    """Runs that start and finish while 2,000 others are parked leave no garbage for the
    cyclic GC: 300 of them set off no collection, so a run's start cost does not grow with
    the number of live runs (the GC passes that made it grow traverse every live run)."""
    gate = asyncio.Event()
    parked = 0

    class Parked(Workflow):
        @step
        async def park(self, ev: StartEvent) -> StopEvent:
            nonlocal parked
            parked += 1
            await gate.wait()
            return StopEvent(result=1)

    class Tiny(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            return StopEvent(result=ev.i)

    parked_flow = Parked(timeout=None)
    tiny = Tiny(timeout=None)
    handlers = [parked_flow.run() for _ in range(2_000)]
    while parked < 2_000:
        await asyncio.sleep(0.01)
    for i in range(100):  # warm-up: caches filled once
        assert await tiny.run(i=i) == i
    gc.collect()
    collections: list[int] = []

    def watch(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(watch)
    try:
        for i in range(300):
            assert await tiny.run(i=i) == i
    finally:
        gc.callbacks.remove(watch)
        gate.set()
    assert sum(await asyncio.gather(*handlers)) == 2_000
    assert collections == []
