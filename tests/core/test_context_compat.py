"""Older Context/Workflow accessors (``ctx.get_result``, ``ctx.stream_events``,
``ctx.streaming_queue``, ``Workflow.runtime``) and ``ctx.waiting_for()``."""

from __future__ import annotations

import asyncio
import json

import pytest
from batonflow.core import (
    Context,
    ContextStateError,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    step,
)


class Progress(Event):
    n: int


class Counting(Workflow):
    @step
    async def count(self, ctx: Context, ev: StartEvent) -> StopEvent:
        for n in range(3):
            ctx.write_event_to_stream(Progress(n=n))
        return StopEvent(result="counted")


class Asking(Workflow):
    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        answer = await ctx.wait_for_event(
            HumanResponseEvent,
            waiter_event=InputRequiredEvent(prefix="?"),
            waiter_id="q1",
            requirements={"topic": "name"},
        )
        return StopEvent(result=answer.response)


async def test_get_result_of_a_finished_run() -> None:
    """``ctx.get_result()`` (deprecated) returns the result once the run completed."""
    handler = Counting().run()
    with (
        pytest.warns(DeprecationWarning),
        pytest.raises(ContextStateError, match=r"has no result \(running\); await the handler"),
    ):
        handler.ctx.get_result()
    await handler
    with pytest.warns(DeprecationWarning, match=r"ctx\.get_result\(\) is deprecated"):
        assert handler.ctx.get_result() == "counted"


async def test_ctx_stream_events_shares_the_handler_stream() -> None:
    """``ctx.stream_events()`` (deprecated) yields the same events as the handler's stream."""
    handler = Counting().run()
    with pytest.warns(DeprecationWarning, match=r"ctx\.stream_events\(\) is deprecated"):
        events = [ev async for ev in handler.ctx.stream_events()]
    assert [type(e).__name__ for e in events] == ["Progress"] * 3 + ["StopEvent"]
    assert await handler == "counted"


async def test_streaming_queue_reads_the_stream() -> None:
    """``ctx.streaming_queue`` (deprecated) is a queue view: get() until the StopEvent."""
    handler = Counting().run()
    with pytest.warns(DeprecationWarning, match=r"ctx\.streaming_queue is deprecated"):
        queue = handler.ctx.streaming_queue
    assert queue.empty() and queue.qsize() == 0
    with pytest.raises(asyncio.QueueEmpty):
        queue.get_nowait()
    seen = []
    while True:
        ev = await queue.get()
        seen.append(ev)
        if isinstance(ev, StopEvent):
            break
    assert [getattr(e, "n", None) for e in seen] == [0, 1, 2, None]
    assert await handler == "counted"
    with pytest.raises(ContextStateError, match=r"stream has ended and every event was read"):
        await queue.get()


async def test_runtime_property_is_none() -> None:
    """batonflow has no pluggable runtime."""
    assert Counting().runtime is None


async def test_waiting_for_lists_live_and_restored_waits() -> None:
    """``ctx.waiting_for()`` says which step waits for which event, also after a restore."""
    workflow = Asking(timeout=5)
    handler = workflow.run()
    assert handler.ctx.waiting_for() == []  # nothing ran yet
    async for ev in handler.stream_events():
        if isinstance(ev, InputRequiredEvent):
            break
    (waiting,) = handler.ctx.waiting_for()
    assert waiting.step == "ask" and waiting.event_type is HumanResponseEvent
    assert waiting.waiter_id == "q1" and waiting.requirements == {"topic": "name"}
    assert waiting.type_name.endswith(".HumanResponseEvent")

    data = json.loads(json.dumps(handler.ctx.to_dict()))
    await handler.cancel_run()
    restored = Context.from_dict(Asking(timeout=5), data)
    (again,) = restored.waiting_for()
    assert again.event_type is HumanResponseEvent and again.waiter_id == "q1"
    resumed = restored.workflow.run(ctx=restored)
    resumed.ctx.send_event(HumanResponseEvent(response="Ada", topic="name"))
    assert await resumed == "Ada"
    assert resumed.ctx.waiting_for() == []
