"""Human in the loop: InputRequiredEvent/HumanResponseEvent, wait_for_event, across processes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from batonflow.core import (
    Context,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    step,
)
from batonflow.core.errors import WorkflowRuntimeError

ROOT = Path(__file__).resolve().parents[2]


class HumanInTheLoopWorkflow(Workflow):
    @step
    async def step1(self, ev: StartEvent) -> InputRequiredEvent:
        return InputRequiredEvent(prefix="Enter a number: ")

    @step
    async def step2(self, ev: HumanResponseEvent) -> StopEvent:
        return StopEvent(result=ev.response)


async def test_answer_while_streaming() -> None:
    """Seed pattern 1: answer the InputRequiredEvent from inside the stream loop."""
    workflow = HumanInTheLoopWorkflow()
    handler = workflow.run()
    prompts = []
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            prompts.append(event.prefix)
            handler.ctx.send_event(HumanResponseEvent(response="42"))
    assert await handler == "42"
    assert prompts == ["Enter a number: "]


async def test_break_out_then_answer_and_resume_streaming() -> None:
    """Seed pattern 2: break out of the stream, answer later, stream the rest."""
    workflow = HumanInTheLoopWorkflow()
    handler = workflow.run()
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            break
    await asyncio.sleep(0.01)
    handler.ctx.send_event(HumanResponseEvent(response="later"))
    rest = [event async for event in handler.stream_events()]
    assert [type(e) for e in rest] == [StopEvent]
    assert await handler == "later"


class Approval(Event):
    approved: bool
    request_id: str = ""


class WaitFlow(Workflow):
    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        await ctx.store.set("asked", True)
        answer = await ctx.wait_for_event(
            HumanResponseEvent,
            waiter_event=InputRequiredEvent(prefix="name?"),
            waiter_id="name",
            requirements={"kind": "name"},
        )
        return StopEvent(result=f"hello {answer.response}")


async def test_wait_for_event_with_requirements() -> None:
    """``wait_for_event`` writes its waiter event; an answer without the required values is
    refused by ``send_event`` (it would be dropped unseen) and the step keeps waiting."""
    handler = WaitFlow().run()
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            with pytest.raises(
                WorkflowRuntimeError,
                match=r"^No waiting step takes this HumanResponseEvent: step ask waits for "
                r"HumanResponseEvent with kind='name', and the event has other values, so it "
                r"would be dropped\. Send it with those values, e\.g\. "
                r"HumanResponseEvent\(\.\.\., kind='name'\)\.$",
            ):
                handler.ctx.send_event(HumanResponseEvent(response="wrong", kind="other"))
            assert [w.requirements for w in handler.ctx.waiting_for()] == [{"kind": "name"}]
            handler.ctx.send_event(HumanResponseEvent(response="Ada", kind="name"))
    assert await handler == "hello Ada"


async def test_wait_for_event_timeout() -> None:
    """A wait that times out raises TimeoutError in the step (and fails the run)."""

    class Impatient(Workflow):
        @step
        async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
            await ctx.wait_for_event(HumanResponseEvent, timeout=0.01)
            return StopEvent()

    with pytest.raises(
        TimeoutError,
        match=r"^Step ask waited 0\.01 seconds for HumanResponseEvent \(waiter_id 'ask:1:0'\) and "
        r"none arrived\. Send it with handler\.ctx\.send_event\(\.\.\.\), or pass a larger "
        r"timeout= to ctx\.wait_for_event \(None waits forever\)\.$",
    ):
        await Impatient().run()


async def test_wait_for_event_survives_to_dict_from_dict() -> None:
    """A waiting run is serialised, restored in a fresh workflow, and finished by send_event."""
    handler = WaitFlow().run()
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            break
    data = json.loads(json.dumps(handler.ctx.to_dict()))
    await handler.cancel_run()

    fresh = WaitFlow()
    ctx = Context.from_dict(fresh, data)
    resumed = fresh.run(ctx=ctx)
    resumed.ctx.send_event(HumanResponseEvent(response="Grace", kind="name"))
    # The waiter event is not written again for the same waiter_id.
    streamed = [event async for event in resumed.stream_events()]
    assert [type(e) for e in streamed] == [StopEvent]
    assert await resumed == "hello Grace"
    assert await resumed.ctx.store.get("asked") is True


async def test_send_before_resume_is_delivered() -> None:
    """An answer sent to a restored context before ``run(ctx=...)`` is delivered on resume."""
    handler = HumanInTheLoopWorkflow().run()
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            break
    data = json.loads(json.dumps(handler.ctx.to_dict()))
    await handler.cancel_run()

    fresh = HumanInTheLoopWorkflow()
    ctx = Context.from_dict(fresh, data)
    ctx.send_event(HumanResponseEvent(response="early"))
    assert await fresh.run(ctx=ctx) == "early"


SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    from batonflow.core import (
        Context, Event, HumanResponseEvent, InputRequiredEvent, StartEvent, StopEvent,
        Workflow, step,
    )

    class NameEvent(Event):
        name: str

    class Greeter(Workflow):
        @step
        async def ask(self, ctx: Context, ev: StartEvent) -> NameEvent:
            await ctx.store.set("greeting", ev.greeting)
            answer = await ctx.wait_for_event(
                HumanResponseEvent, waiter_event=InputRequiredEvent(prefix="Your name? ")
            )
            return NameEvent(name=answer.response)

        @step
        async def greet(self, ctx: Context, ev: NameEvent) -> StopEvent:
            greeting = await ctx.store.get("greeting")
            return StopEvent(result=f"{greeting}, {ev.name} (pid changed)")

    async def first(path):
        w = Greeter()
        handler = w.run(greeting="Hello")
        async for event in handler.stream_events():
            if isinstance(event, InputRequiredEvent):
                print("PROMPT", event.prefix)
                break
        with open(path, "w") as f:
            json.dump(handler.ctx.to_dict(), f)

    async def second(path):
        with open(path) as f:
            data = json.load(f)
        w = Greeter()
        ctx = Context.from_dict(w, data)
        handler = w.run(ctx=ctx)
        handler.ctx.send_event(HumanResponseEvent(response="Ada"))
        print("RESULT", await handler)

    phase, path = sys.argv[1], sys.argv[2]
    asyncio.run(first(path) if phase == "first" else second(path))
    """
)


@pytest.mark.slow
async def test_hitl_across_two_processes(tmp_path: Path) -> None:
    """Process 1 stops at the prompt and saves the context; process 2 answers and finishes."""
    script = tmp_path / "greeter.py"
    script.write_text(SCRIPT)
    state = tmp_path / "ctx.json"

    def run(phase: str) -> str:
        proc = subprocess.run(
            [sys.executable, str(script), phase, str(state)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert "PROMPT Your name?" in run("first")
    assert json.loads(state.read_text())["is_running"] is True
    assert "RESULT Hello, Ada (pid changed)" in run("second")
