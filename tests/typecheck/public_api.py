"""A user's program whose types mypy --strict checks: the public API's types, pinned.

``tests/typecheck/test_public_api.py`` runs mypy on this file, and on a copy whose
``from batonflow.core import (...)`` names llama-index-workflows' classes instead, so each
``assert_type`` here holds for batonflow and for the library it is compatible with.
``tests/typecheck/test_install.py`` checks it from a fresh install outside the repository.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, assert_type

from batonflow.core import (
    Context,
    DictState,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowHandler,
    step,
)
from pydantic import BaseModel


class Counter(BaseModel):
    """Typed state."""

    count: int = 0


class Ping(Event):
    """An event with a field."""

    n: int


class Typed(Workflow):
    """Steps with typed and untyped contexts."""

    @step
    async def start(self, ctx: Context[Counter], ev: StartEvent) -> Ping:
        assert_type(ev.topic, Any)  # extra fields of an event
        state = await ctx.store.get_state()
        assert_type(state, Counter)
        async with ctx.store.edit_state() as editing:
            assert_type(editing, Counter)
            editing.count += 1
        await ctx.store.set_state(state)
        ctx.send_event(Ping(n=1))
        ctx.write_event_to_stream(Ping(n=2))
        return Ping(n=state.count)

    @step(num_workers=2)
    async def ping(self, ctx: Context, ev: Ping) -> StopEvent | None:
        assert_type(await ctx.store.get_state(), DictState)
        assert_type(await ctx.store.get("n", default=0), Any)
        assert_type(ev.n, int)
        joined = ctx.collect_events(ev, [Ping, Ping])
        assert_type(joined, list[Event] | None)
        answer = await ctx.wait_for_event(HumanResponseEvent)
        assert_type(answer, HumanResponseEvent)
        return StopEvent(result=answer.response)

    @step
    async def ask(self, ev: InputRequiredEvent) -> None:
        assert_type(ev, InputRequiredEvent)


async def use() -> None:
    """Run it as a caller does."""
    # @step keeps the signature (LlamaIndex's StepFunction is a callable of that signature)
    start: Callable[[Typed, Context[Counter], StartEvent], Coroutine[Any, Any, Ping]]
    start = Typed.start
    assert start is not None
    handler = Typed(timeout=10).run(topic="pirates")
    assert_type(handler, WorkflowHandler)
    events = handler.stream_events()
    async for event in events:
        assert_type(event, Event)
    result: str = await handler  # the result is untyped (StopEvent.result is Any)
    assert result
    assert isinstance(handler.ctx, Context)
    assert_type(handler.is_done(), bool)
    assert_type(StopEvent(result=1).result, Any)
    saved: dict[str, Any] = handler.ctx.to_dict()  # JSON-ready, stored by the caller
    restored = Context.from_dict(Typed(), saved)
    again = Typed().run(ctx=restored)
    assert_type(again, WorkflowHandler)
    await again.cancel_run()


def stream_of(handler: WorkflowHandler) -> AsyncIterator[Event]:
    """Streams are async iterables of events."""
    return handler.stream_events()
