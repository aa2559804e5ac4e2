"""Finished step executions are freed by reference counting, not left for the cyclic GC."""

from __future__ import annotations

import gc

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
        and type(o).__module__ == "batonflow.core._runtime"
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
