"""One workflow in several versions, for the tests of versions (``core/durable/_versions.py``).

``make_flow(...)`` builds the workflow ``Orders`` as a given deploy of its code would define
it: ``take`` (from the StartEvent) returns an ``Order`` and sets the typed state's ``count``;
the second step (``ship``, or ``second=`` another name) waits for an answer, then ends the run
(or, with ``third=True``, passes a ``Shipped`` to a new step ``notify``). Each call makes new
classes under the same names, as a new process importing changed code would: the engine
registers the latest ones, so a run recorded with one version is read with the next.

No ``from __future__ import annotations`` here: the steps' annotations name the factory's
local classes, which only a real annotation can.
"""

import asyncio
import time
from typing import Any

from batonflow.core import (
    Context,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowCheckpointer,
    step,
)
from pydantic import BaseModel

#: What the steps of every version ran, in order (``"take"``, ``"ship"``...): a test clears it.
CALLS: list[str] = []


def make_flow(
    *,
    second: str = "ship",
    order: str = "v1",
    state: str = "int",
    third: bool = False,
    body: str = "v1",
    version: str | None = None,
) -> type[Workflow]:
    """The ``Orders`` workflow as one deploy of its code defines it.

    Args:
        second: The name of the step that takes the ``Order``: ``ship``, or ``dispatch``.
        order: ``"v1"`` (``item: str``), ``"optional"`` (adds ``note: str | None = None``),
            ``"required"`` (adds ``qty: int``), ``"retyped"`` (``item: int``).
        state: The state's ``count`` type: ``"int"``, or ``"list"`` (``list[int]``).
        third: The second step passes a ``Shipped`` to a new step ``notify``.
        body: ``"v1"``, or ``"v2"``: the second step answers in upper case (same shape).
        version: A declared version.
    """

    class Order(Event):
        if order == "retyped":
            item: int
        else:
            item: str
        if order == "optional":
            note: str | None = None
        if order == "required":
            qty: int

    class Counts(BaseModel):
        if state == "list":
            count: list[int] = []
        else:
            count: int = 0

    class Shipped(Event):
        answer: str

    async def wait_answer(ctx: Context[Counts]) -> str:
        answer = await ctx.wait_for_event(
            HumanResponseEvent, waiter_event=InputRequiredEvent(prefix="ship it?")
        )
        text = str(answer.response)
        return text.upper() if body == "v2" else text

    async def finish(ctx: Context[Counts]) -> Event:
        CALLS.append(second)
        text = await wait_answer(ctx)
        return Shipped(answer=text) if third else StopEvent(result=text)

    class Orders(Workflow):
        @step
        async def take(self, ctx: Context[Counts], ev: StartEvent) -> Order:
            CALLS.append("take")
            await ctx.store.set("count", [1] if state == "list" else 1)
            fields: dict[str, Any] = {"item": 7 if order == "retyped" else "tea"}
            if order == "required":
                fields["qty"] = 2
            return Order(**fields)

        if third:

            @step
            async def ship(self, ctx: Context[Counts], ev: Order) -> Shipped:
                return await finish(ctx)  # type: ignore[return-value]

            @step
            async def notify(self, ev: Shipped) -> StopEvent:
                CALLS.append("notify")
                return StopEvent(result=f"notified: {ev.answer}")

        elif second == "ship":

            @step
            async def ship(self, ctx: Context[Counts], ev: Order) -> StopEvent:
                return await finish(ctx)  # type: ignore[return-value]

        else:

            @step
            async def dispatch(self, ctx: Context[Counts], ev: Order) -> StopEvent:
                return await finish(ctx)  # type: ignore[return-value]

    if version is not None:
        Orders.version = version  # type: ignore[assignment,method-assign]
    return Orders


async def park(cptr: WorkflowCheckpointer, **start: Any) -> str:
    """Start a run and stop it, in flight, where it waits for its answer, as a process that
    stops does (released, then cancelled): its record stays ``waiting``. Returns its id."""
    handler = cptr.run(**start)
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            break
    cptr.release(handler.run_id)
    await handler.cancel_run()
    return str(handler.run_id)


async def answer(cptr: WorkflowCheckpointer, run_id: str, text: str) -> Any:
    """Resume ``run_id`` with ``cptr``, answer its question with ``text``, return its result."""
    handler = cptr.resume(run_id)
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):  # asked again by the re-run step
            cptr.send_event(run_id, HumanResponseEvent(response=text), answer=True)
    result = await handler
    deadline = time.monotonic() + 10
    while (record := cptr.store.run(run_id)) is not None and record.status != "completed":
        assert time.monotonic() < deadline, f"run {run_id} stayed {record.status}"
        await asyncio.sleep(0.01)  # its end is recorded by a done-callback
    return result


__all__ = ["CALLS", "answer", "make_flow", "park"]
