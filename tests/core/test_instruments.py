"""Instrument hooks: records, lineage (origins), joins, scopes, meta, and failing hooks."""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from batonflow.core import (
    Context,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    Instrument,
    StartEvent,
    StopEvent,
    Workflow,
    retry_policy,
    step,
    stop_after_attempt,
    wait_fixed,
)
from batonflow.core.instrument import (
    EventEmitted,
    EventsJoined,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    add_global_instrument,
    remove_global_instrument,
)

SCOPE: contextvars.ContextVar[str] = contextvars.ContextVar("scope", default="")


class Recorder(Instrument):
    def __init__(self) -> None:
        self.records: list[Any] = []

    def run_started(self, record: RunStarted) -> None:
        record.meta["traceparent"] = "00-abc-def-01"
        self.records.append(record)

    def run_finished(self, record: RunFinished) -> None:
        self.records.append(record)

    def step_started(self, record: StepStarted) -> None:
        self.records.append(record)

    def step_finished(self, record: StepFinished) -> None:
        self.records.append(record)

    def event_emitted(self, record: EventEmitted) -> None:
        self.records.append(record)

    def events_joined(self, record: EventsJoined) -> None:
        self.records.append(record)

    @contextlib.contextmanager
    def _scope(self, name: str) -> Iterator[None]:
        token = SCOPE.set(name)
        try:
            yield
        finally:
            SCOPE.reset(token)

    def step_scope(self, record: StepStarted) -> contextlib.AbstractContextManager[Any]:
        return self._scope(f"span:{record.step_name}")

    def of(self, kind: type) -> list[Any]:
        return [r for r in self.records if isinstance(r, kind)]


class Part(Event):
    n: int


class PartDone(Event):
    n: int


class Fan(Workflow):
    @step
    async def start(self, ctx: Context, ev: StartEvent) -> Part | None:
        ctx.send_event(Part(n=1))
        ctx.send_event(Part(n=2))
        return None

    @step
    async def work(self, ev: Part) -> PartDone:
        assert SCOPE.get() == "span:work"
        return PartDone(n=ev.n)

    @step
    def join(self, ctx: Context, ev: PartDone) -> StopEvent | None:
        assert SCOPE.get() == "span:join"  # entered in the sync step's thread
        assert threading.current_thread() is not threading.main_thread()
        done = ctx.collect_events(ev, [PartDone, PartDone])
        if done is None:
            return None
        return StopEvent(result=sorted(d.n for d in done))


async def test_records_lineage_and_joins() -> None:
    """Steps get execution ids; records carry origins; a join names all its emitters."""
    rec = Recorder()
    handler = Fan(instruments=[rec]).run(run_id="r1")
    assert await handler == [1, 2]

    (started,) = rec.of(RunStarted)
    assert started.run_id == "r1" and started.workflow_name == "Fan" and not started.resumed
    (finished,) = rec.of(RunFinished)
    assert finished.status == "completed" and finished.result == [1, 2] and finished.error is None

    steps = {(r.step_name, r.execution_id): r for r in rec.of(StepStarted)}
    start_id = next(i for (n, i) in steps if n == "start")
    assert steps[("start", start_id)].origins == ()
    work_ids = sorted(i for (n, i) in steps if n == "work")
    assert all(steps[("work", i)].origins == (start_id,) for i in work_ids)
    joins = [i for (n, i) in steps if n == "join"]
    assert sorted(steps[("join", i)].origins[0] for i in joins) == work_ids

    (joined,) = rec.of(EventsJoined)
    assert joined.step_name == "join"
    assert sorted(joined.origins) == work_ids
    assert [type(e) for e in joined.events] == [PartDone, PartDone]

    emitted = rec.of(EventEmitted)
    assert emitted[0].step_name is None and isinstance(emitted[0].event, StartEvent)
    assert {e.step_name for e in emitted[1:]} == {"start", "work", "join"}

    finishes = rec.of(StepFinished)
    assert all(f.error is None for f in finishes)
    assert handler.ctx.meta == {"traceparent": "00-abc-def-01"}


async def test_retries_show_attempts_and_will_retry() -> None:
    """Each attempt has its own records; a failed attempt that will be retried says so."""
    rec = Recorder()
    calls = 0

    class Flaky(Workflow):
        @step(retry_policy=retry_policy(wait=wait_fixed(0), stop=stop_after_attempt(2)))
        async def flaky(self, ev: StartEvent) -> StopEvent:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise RuntimeError("first")
            return StopEvent(result="ok")

    assert await Flaky(instruments=[rec]).run() == "ok"
    attempts = [(r.attempt, r.error is not None, r.will_retry) for r in rec.of(StepFinished)]
    assert attempts == [(1, True, True), (2, False, False)]
    assert [r.attempt for r in rec.of(StepStarted)] == [1, 2]


async def test_failed_run_is_reported() -> None:
    """A failing run finishes with status failed and the error."""
    rec = Recorder()

    class Bad(Workflow):
        @step
        async def bad(self, ev: StartEvent) -> StopEvent:
            raise ValueError("nope")

    with pytest.raises(ValueError):
        await Bad(instruments=[rec]).run()
    (finished,) = rec.of(RunFinished)
    assert finished.status == "failed" and isinstance(finished.error, ValueError)


async def test_raising_hook_is_disabled_not_fatal(caplog: pytest.LogCaptureFixture) -> None:
    """A hook that raises is logged and disabled; the run still succeeds."""

    class Broken(Instrument):
        calls = 0

        def step_started(self, record: StepStarted) -> None:
            Broken.calls += 1
            raise RuntimeError("instrument bug")

    class Two(Workflow):
        @step
        async def first(self, ev: StartEvent) -> Part:
            return Part(n=1)

        @step
        async def second(self, ev: Part) -> StopEvent:
            return StopEvent(result="fine")

    with caplog.at_level(logging.ERROR, logger="batonflow.instrument"):
        assert await Two(instruments=[Broken()]).run() == "fine"
    assert Broken.calls == 1
    assert "instrument bug" in caplog.text


async def test_disabled_hooks_belong_to_their_instrument_set() -> None:
    """A hook disabled after raising stays disabled for that workflow's instrument set only.

    They used to be kept process-wide by ``id(instrument)``, so a new instrument reusing a freed
    instrument's id inherited its disabled hooks.
    """

    class Flaky(Instrument):
        def __init__(self) -> None:
            self.calls = 0

        def step_started(self, record: StepStarted) -> None:
            self.calls += 1
            if self.calls == 1:
                raise RuntimeError("instrument bug")

    class One(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            return StopEvent(result=1)

    flaky = Flaky()
    first = One(instruments=[flaky])
    await first.run()
    await first.run()
    assert flaky.calls == 1  # disabled for `first` from then on
    await One(instruments=[flaky]).run()
    assert flaky.calls == 2  # another set: called again


async def test_global_instrument_sees_every_workflow() -> None:
    """``add_global_instrument`` reaches runs of any workflow until removed."""
    rec = Recorder()

    class One(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            return StopEvent(result=1)

    w = One()
    add_global_instrument(rec)
    try:
        await w.run()
    finally:
        remove_global_instrument(rec)
    await w.run()
    assert len(rec.of(RunStarted)) == 1


class Asker(Workflow):
    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        answer = await ctx.wait_for_event(
            HumanResponseEvent, waiter_event=InputRequiredEvent(prefix="?")
        )
        return StopEvent(result=answer.response)


async def test_meta_is_saved_and_restored_and_resume_is_flagged() -> None:
    """``meta`` written by an instrument survives to_dict/from_dict; the resume says resumed."""
    rec = Recorder()
    handler = Asker(instruments=[rec]).run()
    async for ev in handler.stream_events():
        if isinstance(ev, InputRequiredEvent):
            break
    data = json.loads(json.dumps(handler.ctx.to_dict()))
    await handler.cancel_run()
    assert data["meta"] == {"traceparent": "00-abc-def-01"}

    rec2 = Recorder()
    fresh = Asker(instruments=[rec2])
    ctx = Context.from_dict(fresh, data)
    assert ctx.meta == {"traceparent": "00-abc-def-01"}
    resumed = fresh.run(ctx=ctx)
    resumed.ctx.send_event(HumanResponseEvent(response="yes"))
    assert await resumed == "yes"
    (started,) = rec2.of(RunStarted)
    assert started.resumed and started.run_id == handler.run_id


async def test_wants_run_removes_an_instrument_from_a_run() -> None:
    """An instrument whose ``wants_run`` says no sees nothing of that run."""

    class Picky(Recorder):
        def wants_run(self, run_id: str, workflow_name: str) -> bool:
            return run_id.startswith("watch")

    class One(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            return StopEvent(result=1)

    picky = Picky()
    w = One(instruments=[picky])
    await w.run(run_id="ignore-me")
    assert picky.records == []
    await w.run(run_id="watch-me")
    assert [r.run_id for r in picky.of(RunStarted)] == ["watch-me"]


async def test_a_returned_event_is_emitted_once_its_step_is_no_longer_in_progress() -> None:
    """A snapshot taken in ``event_emitted`` for a step's returned event does not list that
    execution as in progress (it is over: a resumed run would run it again), while the
    step still running when it sends an event is listed."""
    in_progress: dict[str, list[str]] = {}

    class Mid(Event):
        pass

    class Sent(Event):
        pass

    class Snapshots(Instrument):
        def event_emitted(self, record: EventEmitted) -> None:
            if record.step_name is not None:
                data = handler.ctx.to_dict()
                in_progress[type(record.event).__name__] = [
                    item["step"] for item in data["in_progress"]
                ]

    class W(Workflow):
        @step
        async def first(self, ctx: Context, ev: StartEvent) -> Mid | Sent:
            ctx.send_event(Sent())
            return Mid()

        @step
        async def sent(self, ev: Sent) -> None:
            return None

        @step
        async def second(self, ev: Mid) -> StopEvent:
            return StopEvent(result="done")

    handler = W(instruments=[Snapshots()]).run()
    assert await handler == "done"
    assert "first" in in_progress["Sent"]  # sent while first runs
    assert "first" not in in_progress["Mid"]  # returned: first is over
