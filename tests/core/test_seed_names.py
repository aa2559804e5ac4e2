"""Names the seeds (older LlamaIndex) use keep working next to the current ones."""

from __future__ import annotations

import asyncio
import io

import pytest
from batonflow.core import (
    Context,
    Event,
    PrintingInstrument,
    StartEvent,
    StepState,
    StepStateChanged,
    StopEvent,
    Workflow,
    WorkflowCheckpointer,
    WorkflowConfigurationError,
    WorkflowRuntimeError,
    step,
)


class JokeEvent(Event):
    joke: str


class JokeFlow(Workflow):
    @step
    async def generate(self, ev: StartEvent) -> JokeEvent:
        return JokeEvent(joke=f"about {ev.topic}")

    @step
    async def critique(self, ev: JokeEvent) -> StopEvent:
        return StopEvent(result=f"critique of {ev.joke}")


async def test_checkpoint_input_and_output_events() -> None:
    """``Checkpoint.input_event`` / ``output_event`` are the step's events, as in the seeds."""
    cptr = WorkflowCheckpointer(workflow=JokeFlow())
    handler = cptr.run(topic="ships")
    assert await handler == "critique of about ships"
    first, second = cptr.checkpoints[handler.run_id][-2:]
    assert first.last_completed_step == "generate"
    assert isinstance(first.input_event, StartEvent) and first.input_event.topic == "ships"
    assert first.output_event == JokeEvent(joke="about ships")
    assert second.input_event == JokeEvent(joke="about ships")
    assert second.output_event == StopEvent(result="critique of about ships")


async def test_workflow_send_event_inside_a_step() -> None:
    """``self.send_event(ev)`` in a step sends into that step's run (deprecated)."""

    class Ping(Event):
        n: int

    class Flow(Workflow):
        @step
        async def start(self, ev: StartEvent) -> Ping | None:
            for n in (1, 2):
                self.send_event(Ping(n=n))
            return None

        @step
        async def gather(self, ctx: Context, ev: Ping) -> StopEvent | None:
            got = ctx.collect_events(ev, [Ping, Ping])
            return None if got is None else StopEvent(result=sorted(p.n for p in got))

    with pytest.warns(DeprecationWarning, match=r"Workflow\.send_event\(\) is deprecated"):
        assert await Flow().run() == [1, 2]


async def test_workflow_send_event_outside_a_step() -> None:
    """``self.send_event`` outside a run's step says where to send from."""
    with (
        pytest.warns(DeprecationWarning),
        pytest.raises(
            WorkflowRuntimeError, match=r"JokeFlow\.send_event\(\) works only inside a step"
        ),
    ):
        JokeFlow().send_event(JokeEvent(joke="x"))


async def test_verbose_seed_format(capsys: pytest.CaptureFixture[str]) -> None:
    """``verbose="seed"`` prints the seeds' lines."""
    await JokeFlow(verbose="seed").run(topic="t")
    assert capsys.readouterr().out.splitlines() == [
        "Running step generate",
        "Step generate produced event JokeEvent",
        "Running step critique",
        "Step critique produced event StopEvent",
    ]


async def test_verbose_llama_format(capsys: pytest.CaptureFixture[str]) -> None:
    """``verbose=True`` (and ``"llama"``) prints LlamaIndex 2.26's lines."""
    for verbose in (True, "llama"):
        await JokeFlow(verbose=verbose).run(topic="t")
        assert capsys.readouterr().out.splitlines() == [
            "[tick] add: StartEvent(topic='t')",
            "[generate:0] started from StartEvent",
            "[generate:0] complete with JokeEvent",
            "[tick] add: JokeEvent(joke='about t')",
            "[critique:0] started from JokeEvent",
            "[result] StopEvent(result='critique of about t')",
            "[critique:0] complete with StopEvent",
        ]


async def test_llama_format_reports_no_result() -> None:
    """A step returning nothing (or failing) is 'complete with no result'."""

    class Flow(Workflow):
        @step
        async def quiet(self, ev: StartEvent) -> StopEvent | None:
            return None

    buf = io.StringIO()
    handler = Flow(timeout=5, instruments=[PrintingInstrument(buf, style="llama")]).run()
    async for ev in handler.stream_events(expose_internal=True):
        if isinstance(ev, StepStateChanged) and ev.step_state is StepState.NOT_RUNNING:
            break
    await handler.cancel_run()
    assert buf.getvalue().splitlines() == [
        "[tick] add: StartEvent()",
        "[quiet:0] started from StartEvent",
        "[quiet:0] complete with no result",
        "[tick] cancelled",
    ]
    with pytest.raises(WorkflowConfigurationError, match="style 'json' is not one of llama, seed"):
        PrintingInstrument(style="json")


class Job(Event):
    n: int


class Done(Event):
    n: int


class Pool(Workflow):
    """Three jobs on two workers: job 0 holds its worker until job 2, queued, has run."""

    @step
    async def start(self, ctx: Context, ev: StartEvent) -> Job | None:
        self.gate = asyncio.Event()
        for n in range(3):
            ctx.send_event(Job(n=n))
        return None

    @step(num_workers=2)
    async def work(self, ev: Job) -> Done:
        if ev.n == 0:
            await self.gate.wait()
        if ev.n == 2:
            self.gate.set()
        return Done(n=ev.n)

    @step
    async def join(self, ctx: Context, ev: Done) -> StopEvent | None:
        got = ctx.collect_events(ev, [Done] * 3)
        return None if got is None else StopEvent(result=[d.n for d in got])


async def test_worker_ids_are_the_steps_worker_slots() -> None:
    """Worker ids are the lowest free slot of the step's ``num_workers``, reused, as in LlamaIndex."""
    buf = io.StringIO()
    handler = Pool(instruments=[PrintingInstrument(buf, style="llama")]).run()
    seen = [
        (ev.step_state, ev.worker_id)
        async for ev in handler.stream_events(expose_internal=True)
        if isinstance(ev, StepStateChanged) and ev.name == "work"
    ]
    assert await handler == [1, 2, 0]
    assert [s for s in seen if s[0] is not StepState.PREPARING] == [
        (StepState.RUNNING, "0"),
        (StepState.RUNNING, "1"),
        (StepState.NOT_RUNNING, "1"),
        (StepState.RUNNING, "1"),  # job 2 takes the slot job 1 freed
        (StepState.NOT_RUNNING, "1"),
        (StepState.NOT_RUNNING, "0"),
    ]
    assert [line for line in buf.getvalue().splitlines() if line.startswith("[work")] == [
        "[work:0] started from Job",
        "[work:1] started from Job",
        "[work:1] complete with Done",
        "[work:1] started from Job",
        "[work:1] complete with Done",
        "[work:0] complete with Done",
    ]
