"""Journaled calls (``ctx.journal``) on every backend, and SIGKILLed runs counted by side effects.

A call's outcome is committed when it returns; a step re-run (after its process stopped, here
a release and a resume; in ``test_a_killed_run_never_repeats_a_committed_call`` a SIGKILL)
gets it back without calling again; an exception is recorded and raised again; a result the
serializer cannot encode is refused before anything is recorded; a re-run that makes another
call at a position is a ``JournalMismatchError`` naming both; a retry calls a failed call again.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from batonflow.core import (
    Context,
    InMemoryCheckpointStore,
    JournalMismatchError,
    SerializationError,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowCheckpointer,
    retry_policy,
    step,
    stop_after_attempt,
)
from batonflow.core.stores import open_store
from journal_worker import trial


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request, tmp_path):
    """A fresh store of each backend."""
    if request.param == "memory":
        s = InMemoryCheckpointStore()
    elif request.param == "sqlite":
        s = open_store(tmp_path / "runs.db")
    else:
        s = open_store(request.getfixturevalue("postgres_url"))
    yield s
    s.close()


class Paid(Exception):
    """What a declined payment raises."""


class Checkout(Workflow):
    """One step: journaled calls (``calls`` names them), then it waits until ``go`` is set."""

    def __init__(self, calls: tuple[str, ...] = ("charge",), fail: bool = False, **kw) -> None:
        super().__init__(timeout=None, **kw)
        self.calls = calls
        self.fail = fail
        self.made: list[str] = []
        self.go = asyncio.Event()

    def charge(self, amount: int) -> dict:
        self.made.append("charge")
        if self.fail:
            raise Paid(f"card declined for {amount}")
        return {"charged": amount}

    async def email(self, to: str) -> str:
        self.made.append("email")
        return f"sent to {to}"

    @step
    async def pay(self, ctx: Context, ev: StartEvent) -> StopEvent:
        got = []
        for name in self.calls:
            fn, arg = (self.charge, 30) if name == "charge" else (self.email, "ada")
            try:
                got.append(await ctx.journal(name, fn, arg))
            except Paid as exc:
                got.append(f"declined: {exc}")
        await self.go.wait()
        return StopEvent(result=got)


async def _stopped_midway(store, flow: Checkout) -> str:
    """Start a run, let its step make its calls, then stop the process's hold on it (as a
    crash does: the run stays ``running`` with the step in progress)."""
    cptr = WorkflowCheckpointer(flow, store=store)
    handler = cptr.run()
    while len(flow.made) < len(flow.calls):
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.01)
    cptr.release(str(handler.run_id))
    await handler.cancel_run()
    cptr.detach()
    return str(handler.run_id)


async def _resumed(store, flow: Checkout, run_id: str):
    flow.go.set()
    return await WorkflowCheckpointer(flow, store=store).resume(run_id)


async def test_a_rerun_step_gets_the_recorded_results_without_calling_again(store):
    """Sync and async calls run once; the re-run gets their results back."""
    first = Checkout(calls=("charge", "email"))
    run_id = await _stopped_midway(store, first)
    assert first.made == ["charge", "email"]
    again = Checkout(calls=("charge", "email"))
    assert await _resumed(store, again, run_id) == [{"charged": 30}, "sent to ada"]
    assert again.made == []
    assert [(e.step, e.call, e.name) for e in store.journal(run_id)] == [
        ("pay", 0, "charge"),
        ("pay", 1, "email"),
    ]


async def test_an_exception_is_recorded_and_raised_again(store):
    """The call's exception is journaled; the re-run raises it again without calling."""
    first = Checkout(fail=True)
    run_id = await _stopped_midway(store, first)
    again = Checkout(fail=True)
    assert await _resumed(store, again, run_id) == ["declined: card declined for 30"]
    assert again.made == []
    assert [e.error for e in store.journal(run_id)] == [True]


async def test_another_call_at_a_recorded_position_is_a_mismatch(store):
    """A re-run whose step makes another call first gets an error naming both calls."""
    run_id = await _stopped_midway(store, Checkout(calls=("charge",)))
    changed = Checkout(calls=("email",))
    with pytest.raises(
        JournalMismatchError,
        match=r"Step 'pay' \(execution \d+\) made journaled call #0 'email', but run \w+ "
        r"recorded 'charge' at that position",
    ):
        await _resumed(store, changed, run_id)
    assert changed.made == []


class Opaque(Workflow):
    """Journals a call whose result no serializer of the run encodes."""

    @step
    async def go(self, ctx: Context, ev: StartEvent) -> StopEvent:
        return StopEvent(result=await ctx.journal("client", object))


async def test_an_unencodable_result_is_refused_before_it_is_recorded(store):
    """The result cannot be kept: a clear error, nothing in the journal."""
    cptr = WorkflowCheckpointer(Opaque(), store=store)
    handler = cptr.run()
    with pytest.raises(
        SerializationError,
        match=r"ctx.journal\('client'\) in step 'go': the result of 'object' cannot be "
        r"recorded, so a re-run would call it again",
    ):
        await handler
    assert store.journal(str(handler.run_id)) == []


class Flaky(Workflow):
    """A journaled call that fails once; the step retries."""

    def __init__(self) -> None:
        super().__init__(timeout=None)
        self.calls = 0

    def fetch(self) -> str:
        self.calls += 1
        if self.calls == 1:
            raise ConnectionError("reset")
        return "page"

    @step(retry_policy=retry_policy(stop=stop_after_attempt(3)))
    async def get(self, ctx: Context, ev: StartEvent) -> StopEvent:
        return StopEvent(result=await ctx.journal("fetch", self.fetch))


async def test_a_retry_calls_a_failed_call_again(store):
    """The retry policy is for retrying: a recorded failure of an earlier attempt is called
    again, and its new outcome replaces it."""
    flow = Flaky()
    handler = WorkflowCheckpointer(flow, store=store).run()
    assert await handler == "page"
    assert flow.calls == 2
    (entry,) = store.journal(str(handler.run_id))  # the success, in the failure's place
    assert entry.error is False and entry.body == '"page"'


async def test_outside_a_durable_run_the_call_is_just_made():
    """A plain run has no journal: ctx.journal calls fn (sync or async) and returns."""
    flow = Checkout(calls=("charge", "email"))
    flow.go.set()
    assert await flow.run() == [{"charged": 30}, "sent to ada"]
    assert flow.made == ["charge", "email"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_a_killed_run_never_repeats_a_committed_call(tmp_path: Path, seed: int) -> None:
    """SIGKILLed at a seeded random moment and resumed in a new process: every call whose
    outcome was committed made its side effect once; at most the call in flight repeats."""
    seen = trial(tmp_path, seed)
    assert not seen.lost_result, seen
    assert (seen.repeated_committed, seen.missing) == (0, 0), seen
    assert seen.repeated_in_flight <= 1, seen
