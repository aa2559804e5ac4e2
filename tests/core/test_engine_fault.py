"""An error inside the engine itself ends the run with a clear error; the run never hangs.

The faults are injected into the engine's own methods (the only way to reach this path: a
step's errors are handled as step failures). Each run is awaited with a deadline, so a run
left waiting for a worker that died fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
from batonflow.core.engine._executing import StepRunner
from batonflow.core.engine._lanes import Executions
from batonflow.core.errors import WorkflowRuntimeError

DEADLINE = 10.0


class OneStep(Workflow):
    @step
    async def only(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result="done")


class Mid(Event):
    pass


class TwoSteps(Workflow):
    @step
    async def first(self, ev: StartEvent) -> Mid:
        return Mid()

    @step
    async def second(self, ev: Mid) -> StopEvent:
        return StopEvent(result="done")


class Item(Event):
    i: int


class Fan(Workflow):
    @step
    async def start(self, ctx: Context, ev: StartEvent) -> Item | None:
        for i in range(4):
            ctx.send_event(Item(i=i))
        return None

    @step(num_workers=4)
    async def work(self, ev: Item) -> StopEvent | None:
        if ev.i == 0:
            return StopEvent(result="first")  # its finish is where the fault is injected
        await asyncio.sleep(30)  # still running when the run ends: cancelled
        return None


async def _run(flow: Workflow) -> Any:
    return await asyncio.wait_for(flow.run(), DEADLINE)


async def test_a_fault_after_a_step_returned_fails_the_run_naming_the_step(monkeypatch):
    def broken(self: StepRunner, ex: Any, result: Any, began: float) -> None:
        raise KeyError("lost-entry")

    monkeypatch.setattr(StepRunner, "succeeded", broken)
    with pytest.raises(WorkflowRuntimeError, match=r"inside its engine while running step 'only'"):
        await _run(OneStep(timeout=None))


async def test_the_engine_error_says_it_is_a_bug_and_keeps_its_cause(monkeypatch):
    def broken(self: StepRunner, ex: Any, result: Any, began: float) -> None:
        raise KeyError("lost-entry")

    monkeypatch.setattr(StepRunner, "succeeded", broken)
    with pytest.raises(WorkflowRuntimeError) as info:
        await _run(OneStep(timeout=None))
    assert "KeyError: 'lost-entry'" in str(info.value)
    assert "bug in batonflow" in str(info.value) and "report it" in str(info.value)
    assert isinstance(info.value.__cause__, KeyError)


async def test_a_fault_while_releasing_an_execution_fails_the_run(monkeypatch):
    original = Executions.release
    calls = {"n": 0}

    def broken(self: Executions, ex: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise AttributeError("half-released")
        original(self, ex)

    monkeypatch.setattr(Executions, "release", broken)
    with pytest.raises(WorkflowRuntimeError, match=r"step 'first' \(AttributeError: half-rel"):
        await _run(TwoSteps(timeout=None))


async def test_a_fault_after_the_run_completed_keeps_its_result(monkeypatch):
    """The StopEvent had ended the run before the fault: the result stands, nothing hangs."""
    original = Executions.release

    def broken(self: Executions, ex: Any) -> None:
        original(self, ex)
        raise AttributeError("after the end")

    monkeypatch.setattr(Executions, "release", broken)
    assert await _run(OneStep(timeout=None)) == "done"


async def test_a_fault_with_other_steps_in_flight_cancels_them_and_ends(monkeypatch):
    original = StepRunner.succeeded

    def broken(self: StepRunner, ex: Any, result: Any, began: float) -> None:
        if isinstance(result, StopEvent):
            raise RuntimeError("routing table out of step")
        original(self, ex, result, began)

    monkeypatch.setattr(StepRunner, "succeeded", broken)
    flow = Fan(timeout=None)
    handler = flow.run()
    run = handler._run
    with pytest.raises(WorkflowRuntimeError, match=r"while running step 'work'"):
        await asyncio.wait_for(handler, DEADLINE)
    assert handler.is_done()
    await asyncio.sleep(0)  # the cancelled steps' workers finish their turn
    assert run is not None and not run.running  # the sleeping steps were cancelled


async def test_the_workflow_runs_again_once_the_fault_is_gone(monkeypatch):
    """Nothing of the failed run stays behind in the workflow."""

    def broken(self: StepRunner, ex: Any, result: Any, began: float) -> None:
        raise KeyError("lost-entry")

    flow = OneStep(timeout=None)
    with monkeypatch.context() as patch:
        patch.setattr(StepRunner, "succeeded", broken)
        with pytest.raises(WorkflowRuntimeError):
            await _run(flow)
    assert await _run(flow) == "done"
