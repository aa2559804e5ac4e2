"""A restart is visible in the stream: a resumed run says which interrupted steps run again."""

from __future__ import annotations

import asyncio
import json

from batonflow.core import (
    Context,
    Event,
    HumanResponseEvent,
    InMemoryCheckpointStore,
    InputRequiredEvent,
    StartEvent,
    StepRestarted,
    StopEvent,
    StoreFullError,
    Workflow,
    WorkflowCheckpointer,
    step,
)


class Progress(Event):
    """What the working step streams."""

    i: int


class Go(Event):
    """The working step's input."""


class Report(Workflow):
    """``begin`` then ``work``: it streams ``writes`` Progress events, then waits for ``go``."""

    def __init__(self, writes: int = 2) -> None:
        super().__init__(timeout=None)
        self.writes = writes
        self.go = asyncio.Event()
        self.started = 0

    @step
    async def begin(self, ev: StartEvent) -> Go:
        return Go()

    @step
    async def work(self, ctx: Context, ev: Go) -> StopEvent:
        self.started += 1
        for i in range(self.writes):
            ctx.write_event_to_stream(Progress(i=i))
        await self.go.wait()
        return StopEvent(result="done")


class Side(Event):
    """What ``Pair.begin`` also sends: its step ends while ``work`` is in progress."""


class Pair(Report):
    """``Report`` whose ``begin`` also sends ``Side``: the checkpoint of ``side`` is taken with
    ``work`` in progress."""

    @step
    async def begin(self, ctx: Context, ev: StartEvent) -> Go | Side:
        ctx.send_event(Side())
        return Go()

    @step
    async def side(self, ev: Side) -> None:
        while not self.started:
            await asyncio.sleep(0.001)
        return None


async def _stopped_midway(
    store, flow: Report, run_id: str | None = None, last_step: str = "begin"
) -> str:
    """Run (or resume) until ``work`` has started and ``last_step`` wrote the latest
    checkpoint, then drop the run as a crash does."""
    cptr = WorkflowCheckpointer(flow, store=store)
    handler = cptr.resume(run_id) if run_id is not None else cptr.run()
    rid = str(handler.run_id)
    async with asyncio.timeout(10):
        while not flow.started or getattr(store.latest(rid), "step_name", None) != last_step:
            await asyncio.sleep(0.005)
    await asyncio.sleep(0.01)
    cptr.release(str(handler.run_id))
    await handler.cancel_run()
    cptr.detach()
    return str(handler.run_id)


async def _resumed(store, run_id: str) -> list[Event]:
    flow = Report()
    flow.go.set()
    handler = WorkflowCheckpointer(flow, store=store).resume(run_id)
    seen = [ev async for ev in handler.stream_events()]
    assert await handler == "done"
    return seen


def _log(store, run_id: str) -> list[tuple[int, dict]]:
    return [(e.seq, json.loads(e.body)) for e in store.events(run_id) if e.kind == "event"]


async def test_a_resumed_step_is_announced_before_its_first_event(store):
    """The StepRestarted comes first in the stream, naming the first event the interrupted
    attempt wrote; the re-run's events follow it."""
    run_id = await _stopped_midway(store, Report())
    first = next(seq for seq, body in _log(store, run_id) if body["type"] == "Progress")
    seen = await _resumed(store, run_id)
    assert seen[0] == StepRestarted(step_name="work", attempt=2, first_event_id=first)
    assert [type(e).__name__ for e in seen[1:]] == ["Progress", "Progress", "StopEvent"]
    marker_seq, marker = next(
        (s, b) for s, b in _log(store, run_id) if b["type"] == "StepRestarted"
    )
    again = [s for s, b in _log(store, run_id) if b["type"] == "Progress" and s > marker_seq]
    assert marker["value"] == {"step_name": "work", "attempt": 2, "first_event_id": first}
    assert len(again) == 2 and marker_seq < min(again)


async def test_each_logged_event_names_the_step_execution_that_wrote_it(store):
    """A stream event in the log carries its step and execution id; a resumed execution keeps
    its id, so the interrupted attempt's entries and the re-run's match."""
    run_id = await _stopped_midway(store, Report())
    await _resumed(store, run_id)
    tags = {(b["step"], b["execution"]) for _, b in _log(store, run_id) if "step" in b}
    assert tags == {("work", 2)}


async def test_a_second_crash_counts_the_attempt_and_points_at_its_own_output(store):
    """Crashed again after its restart, the step's next StepRestarted says attempt 3 and
    names the first event of the second attempt."""
    run_id = await _stopped_midway(store, Report())
    await _stopped_midway(store, Report(), run_id)
    restarted = max(s for s, b in _log(store, run_id) if b["type"] == "StepRestarted")
    second = min(s for s, b in _log(store, run_id) if b["type"] == "Progress" and s > restarted)
    seen = await _resumed(store, run_id)
    assert seen[0] == StepRestarted(step_name="work", attempt=3, first_event_id=second)


async def test_a_step_that_wrote_nothing_is_announced_without_an_event_id(store):
    """A step in progress at the checkpoint that had streamed nothing restarts with
    ``first_event_id=None``."""
    run_id = await _stopped_midway(store, Pair(writes=0), last_step="side")
    flow = Pair(writes=0)
    flow.go.set()
    handler = WorkflowCheckpointer(flow, store=store).resume(run_id)
    seen = [ev async for ev in handler.stream_events()]
    assert seen[0] == StepRestarted(step_name="work", attempt=2, first_event_id=None)


async def test_a_run_that_never_crashes_has_no_step_restarted(store):
    """Without a crash the stream and the log hold no StepRestarted."""
    flow = Report()
    flow.go.set()
    handler = WorkflowCheckpointer(flow, store=store).run()
    seen = [ev async for ev in handler.stream_events()]
    assert await handler == "done"
    assert not any(isinstance(e, StepRestarted) for e in seen)
    assert not any(b["type"] == "StepRestarted" for _, b in _log(store, str(handler.run_id)))


class Ask(Workflow):
    """One step: it streams ``progress`` Progress events, then asks and waits for the answer."""

    def __init__(self, progress: int) -> None:
        super().__init__(timeout=None)
        self.progress = progress

    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        for i in range(self.progress):
            ctx.write_event_to_stream(Progress(i=i))
        question = InputRequiredEvent(prefix="ok?")
        reply = await ctx.wait_for_event(HumanResponseEvent, waiter_event=question)
        return StopEvent(result=reply.response)


async def _answered_after_a_crash(store, progress: int) -> tuple[str, list[Event]]:
    cptr = WorkflowCheckpointer(Ask(progress), store=store)
    handler = cptr.run()
    run_id = str(handler.run_id)
    async with asyncio.timeout(10):
        # Waiting, with the snapshot that holds the wait (the resumed run finds it).
        while store.run(run_id).status != "waiting" or store.latest(run_id) is None:
            await asyncio.sleep(0.005)
    cptr.release(run_id)
    await handler.cancel_run()
    cptr.detach()
    resumed = WorkflowCheckpointer(Ask(progress), store=store).resume(run_id)
    resumed.ctx.send_event(HumanResponseEvent(response="yes"))
    assert await resumed == "yes"
    return run_id, [ev async for ev in resumed.stream_events()]


async def test_a_waiting_step_that_streamed_is_announced_its_question_kept(store):
    """A step that streamed, then asked: its restart names the streamed event, not the
    question (which it does not ask again)."""
    run_id, seen = await _answered_after_a_crash(store, progress=1)
    log = _log(store, run_id)
    streamed = next(s for s, b in log if b["type"] == "Progress")
    assert seen[0] == StepRestarted(step_name="ask", attempt=2, first_event_id=streamed)
    assert [b["type"] for _, b in log].count("InputRequiredEvent") == 1


async def test_a_step_that_only_waited_for_an_answer_is_not_announced(store):
    """A step that wrote nothing but its question takes up its wait: no StepRestarted."""
    _, seen = await _answered_after_a_crash(store, progress=0)
    assert not any(isinstance(e, StepRestarted) for e in seen)


class Solo(Workflow):
    """One step, taking the start event: it streams, then waits for ``go`` (no checkpoint
    precedes it)."""

    def __init__(self) -> None:
        super().__init__(timeout=None)
        self.go = asyncio.Event()
        self.started = 0

    @step
    async def work(self, ctx: Context, ev: StartEvent) -> StopEvent:
        self.started += 1
        ctx.write_event_to_stream(Progress(i=0))
        await self.go.wait()
        return StopEvent(result="done")


async def test_a_run_killed_before_its_first_checkpoint_announces_its_first_step(store):
    """A run that dies in its first step (no checkpoint yet) starts again from its start
    event: that step's restart names what it had streamed."""
    first = Solo()
    cptr = WorkflowCheckpointer(first, store=store)
    handler = cptr.run()
    run_id = str(handler.run_id)
    async with asyncio.timeout(10):
        while not first.started:
            await asyncio.sleep(0.005)
    cptr.release(run_id)
    await handler.cancel_run()
    cptr.detach()
    assert store.latest(run_id) is None
    again = Solo()
    again.go.set()
    resumed = WorkflowCheckpointer(again, store=store).resume(run_id)
    assert await resumed == "done"
    seen = [ev async for ev in resumed.stream_events()]
    streamed = min(s for s, b in _log(store, run_id) if b["type"] == "Progress")
    assert seen[0] == StepRestarted(step_name="work", attempt=2, first_event_id=streamed)


class FullForRestarts(InMemoryCheckpointStore):
    """A memory store that refuses to log a StepRestarted, as a full disk would."""

    def append_event(self, run_id, kind, body, *, waiting=False):  # type: ignore[no-untyped-def]
        if '"StepRestarted"' in body:
            raise StoreFullError("The store is full; nothing was written. Free space.")
        return super().append_event(run_id, kind, body, waiting=waiting)


async def test_a_store_refusing_the_announcement_costs_it_not_the_resume(caplog):
    """The resumed run goes on without its StepRestarted, with a warning saying why."""
    store = FullForRestarts()
    run_id = await _stopped_midway(store, Report())
    seen = await _resumed(store, run_id)
    assert not any(isinstance(e, StepRestarted) for e in seen)
    assert "its restarted steps could not be recorded: The store is full" in caplog.text
