"""A durable run whose store's server is away for a while (StoreUnreachableError).

The store raises ``StoreUnreachableError`` with ``retry_after`` while its database restarts;
the run waits at the step boundary instead of failing, its stream events wait in order, and
it completes once the store answers again. With no ``retry_after`` (the budget spent) the run
fails with the store's error, as before.
"""

from __future__ import annotations

import pytest
from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
from batonflow.core.checkpoints import InMemoryCheckpointStore, WorkflowCheckpointer
from batonflow.core.errors import StoreUnreachableError


class Away(InMemoryCheckpointStore):
    """An in-memory store whose writes fail ``failures`` times, as a restarting server's."""

    def __init__(self, failures: int, retry_after: float | None = 0.01) -> None:
        super().__init__()
        self.failures = failures
        self.retry_after = retry_after

    def _away(self) -> None:
        if self.failures:
            self.failures -= 1
            raise StoreUnreachableError("the database restarts", retry_after=self.retry_after)

    def put(self, checkpoint):  # type: ignore[no-untyped-def]
        self._away()
        super().put(checkpoint)

    def append_event(self, run_id, kind, body, *, waiting=False):  # type: ignore[no-untyped-def]
        self._away()
        return super().append_event(run_id, kind, body, waiting=waiting)


class Middle(Event):
    n: int


class Progress(Event):
    n: int


class TwoSteps(Workflow):
    @step
    async def first(self, ctx: Context, ev: StartEvent) -> Middle:
        ctx.write_event_to_stream(Progress(n=1))
        ctx.write_event_to_stream(Progress(n=2))
        return Middle(n=1)

    @step
    async def second(self, ctx: Context, ev: Middle) -> StopEvent:
        return StopEvent(result=ev.n + 1)


@pytest.mark.parametrize("failures", [1, 3, 8])
async def test_a_run_waits_for_its_store_and_completes(failures):
    """The run completes with its result; every checkpoint and event is stored, in order."""
    store = Away(failures)
    cptr = WorkflowCheckpointer(TwoSteps(timeout=30), store=store)
    store.failures = 0  # the run is recorded; the outage starts at its first write after
    handler = cptr.run()
    store.failures = failures
    assert await handler == 2
    assert [c.step_name for c in store.list(handler.run_id)] == ["first", "second"]
    bodies = [e.body for e in store.events(handler.run_id)]
    assert [b for b in bodies if "Progress" in b] == [
        b for b in bodies if "Progress" in b and ('"n":1' in b or '"n":2' in b)
    ]
    assert sum("Progress" in b for b in bodies) == 2
    assert bodies.index(next(b for b in bodies if '"n":1' in b)) < bodies.index(
        next(b for b in bodies if '"n":2' in b)
    )


async def test_a_store_that_gave_up_fails_the_run():
    """No retry_after (the outage budget is spent): the run fails with the store's error."""
    store = Away(0, retry_after=None)
    cptr = WorkflowCheckpointer(TwoSteps(timeout=30), store=store)
    handler = cptr.run()
    store.failures = 100
    with pytest.raises(StoreUnreachableError, match="restarts"):
        await handler
