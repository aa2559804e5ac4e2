"""Finished step executions are freed by reference counting, not left for the cyclic GC."""

from __future__ import annotations

import gc

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


def _executions() -> list[object]:
    return [
        o
        for o in gc.get_objects()
        if type(o).__name__ == "Execution" and type(o).__module__ == "batonflow.core._runtime"
    ]


async def test_finished_executions_leave_no_cyclic_garbage():
    """After a fan-out run, no step execution is left alive waiting for a GC pass."""
    gc.collect()
    gc.disable()
    try:
        assert await Fan(timeout=10).run(count=40) == sum(range(40))
        alive = _executions()
    finally:
        gc.enable()
    assert alive == []
