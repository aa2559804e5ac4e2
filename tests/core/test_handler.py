"""The handler's lifecycle as LlamaIndex's: cancelled(), and a cancelled run saved and resumed."""

from __future__ import annotations

import asyncio
import threading

import pytest
from batonflow.core import (
    Context,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    PickleSerializer,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowCancelledByUser,
    step,
)


class Topic(StartEvent):
    topic: str


class AskFlow(Workflow):
    @step
    async def ask(self, ctx: Context, ev: Topic) -> InputRequiredEvent:
        await ctx.store.set("asked", await ctx.store.get("asked", default=0) + 1)
        return InputRequiredEvent(prefix=ev.topic)

    @step
    async def answer(self, ev: HumanResponseEvent) -> StopEvent:
        return StopEvent(result=f"{ev.response}!")


async def test_cancelled_is_true_after_cancel_run() -> None:
    """``handler.cancelled()`` is True after ``cancel_run()``; awaiting still raises the cause."""
    handler = AskFlow().run(topic="t")
    async for ev in handler.stream_events():
        if isinstance(ev, InputRequiredEvent):
            break
    assert handler.cancelled() is False
    await handler.cancel_run()
    assert handler.cancelled() is True
    assert isinstance(handler.exception(), WorkflowCancelledByUser)
    with pytest.raises(WorkflowCancelledByUser):
        await handler
    with pytest.raises(WorkflowCancelledByUser):
        await asyncio.gather(handler)  # asyncio's helpers still see the exception


async def test_completed_run_is_not_cancelled() -> None:
    """A run that finished normally reports ``cancelled() is False``."""

    class Flow(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            return StopEvent(result=1)

    handler = Flow().run()
    assert await handler == 1
    assert handler.cancelled() is False


async def test_cancelled_run_is_saved_as_resumable() -> None:
    """``to_dict()`` after ``cancel_run()`` keeps the run resumable; the answer finishes it."""
    flow = AskFlow()
    handler = flow.run(topic="pizza")
    async for ev in handler.stream_events():
        if isinstance(ev, InputRequiredEvent):
            assert ev.prefix == "pizza"
            break
    await handler.cancel_run()
    saved = handler.ctx.to_dict()
    assert saved["is_running"] is True

    resumed = flow.run(ctx=Context.from_dict(flow, saved))
    resumed.ctx.send_event(HumanResponseEvent(response="42"))
    events = [ev async for ev in resumed.stream_events()]
    assert events == [StopEvent(result="42!")]  # no second prompt, no cancel event
    assert await resumed == "42!"
    assert await resumed.ctx.store.get("asked") == 1


async def test_cancelled_mid_step_reruns_that_step() -> None:
    """A step running when the run was cancelled runs again after the resume."""
    started = asyncio.Event()
    release = asyncio.Event()
    runs = []

    class Slow(Event):
        pass

    class Flow(Workflow):
        @step
        async def first(self, ev: StartEvent) -> Slow:
            return Slow()

        @step
        async def slow(self, ev: Slow) -> StopEvent:
            runs.append(1)
            started.set()
            await release.wait()
            return StopEvent(result=len(runs))

    flow = Flow()
    handler = flow.run()
    await started.wait()
    await handler.cancel_run()
    saved = handler.ctx.to_dict()
    assert saved["is_running"] is True and [i["step"] for i in saved["in_progress"]] == ["slow"]
    release.set()
    assert await flow.run(ctx=Context.from_dict(flow, saved)) == 2


class Lock(Event):
    key: object


class Unpicklable:
    def __init__(self) -> None:
        self.lock = threading.Lock()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unpicklable)


async def test_waiter_requirements_need_not_be_serializable() -> None:
    """Requirements that cannot be encoded are saved as None and set again on resume."""

    class Flow(Workflow):
        @step
        async def wait(self, ctx: Context, ev: StartEvent) -> StopEvent:
            got = await ctx.wait_for_event(
                Lock,
                waiter_event=InputRequiredEvent(),
                waiter_id="lock",
                requirements={"key": Unpicklable()},
            )
            return StopEvent(result=type(got.key).__name__)

    flow = Flow()
    handler = flow.run()
    async for ev in handler.stream_events():
        if isinstance(ev, InputRequiredEvent):
            saved = handler.ctx.to_dict(serializer=PickleSerializer())
            await handler.cancel_run()
            break
    assert [w["requirements"] for w in saved["waiters"]] == [None]
    ctx = Context.from_dict(flow, saved, serializer=PickleSerializer())
    resumed = flow.run(ctx=ctx)
    resumed.ctx.send_event(Lock(key=Unpicklable()))
    assert await resumed == "Unpicklable"
