# Ported from the anchor's docs page llamaagents/workflows/streaming.mdx.
# Filled in: OpenAI(model="gpt-4o-mini") is a ScriptedLLM that streams its answer word by word;
# the page's termination snippet loops over the streams of three workflows that time out, are
# cancelled and fail (TimesOut, Cancelled, Fails), and prints the run's error after each;
# main() also prints how many events the stream gave and its last (the page: it "stops when
# the stream delivers a StopEvent").
import asyncio

from _llm import ScriptedLLM as OpenAI
from workflows import (
    Context,
    Workflow,
    step,
)
from workflows.events import (
    Event,
    StartEvent,
    StopEvent,
    WorkflowCancelledEvent,
    WorkflowFailedEvent,
    WorkflowTimedOutEvent,
)


class FirstEvent(Event):
    first_output: str


class SecondEvent(Event):
    second_output: str
    response: str


class ProgressEvent(Event):
    msg: str


class MyWorkflow(Workflow):
    @step
    async def step_one(self, ctx: Context, ev: StartEvent) -> FirstEvent:
        ctx.write_event_to_stream(ProgressEvent(msg="Step one is happening"))
        return FirstEvent(first_output="First step complete.")

    @step
    async def step_two(self, ctx: Context, ev: FirstEvent) -> SecondEvent:
        llm = OpenAI(model="gpt-4o-mini")
        generator = await llm.astream_complete(
            "Please give me the first 3 paragraphs of Moby Dick, a book in the public domain."
        )
        full_resp = ""
        async for response in generator:
            # Allow the workflow to stream this piece of response
            ctx.write_event_to_stream(ProgressEvent(msg=response.delta))
            full_resp += response.delta

        return SecondEvent(
            second_output="Second step complete, full response attached",
            response=full_resp,
        )

    @step
    async def step_three(self, ctx: Context, ev: SecondEvent) -> StopEvent:
        ctx.write_event_to_stream(ProgressEvent(msg="Step three is happening"))
        return StopEvent(result="Workflow complete.")


class TimesOut(Workflow):
    @step
    async def slow(self, ev: StartEvent) -> StopEvent:
        await asyncio.sleep(10)
        return StopEvent()


class Cancelled(Workflow):
    @step
    async def waits(self, ctx: Context, ev: StartEvent) -> StopEvent:
        ctx.write_event_to_stream(ProgressEvent(msg="about to wait"))
        await asyncio.sleep(10)
        return StopEvent()


class Fails(Workflow):
    @step
    async def breaks(self, ev: StartEvent) -> StopEvent:
        raise ValueError("broken step")


async def main():
    w = MyWorkflow(timeout=30, verbose=True)
    handler = w.run(first_input="Start the workflow.")

    kinds = []
    async for ev in handler.stream_events():
        kinds.append(type(ev).__name__)
        if isinstance(ev, ProgressEvent):
            print(ev.msg)

    final_result = await handler
    print("Final result", final_result)
    print("stream:", len(kinds), "events, the last", kinds[-1])

    for flow in (TimesOut(timeout=0.2), Cancelled(), Fails()):
        handler = flow.run()
        async for ev in handler.stream_events():
            if isinstance(ev, WorkflowTimedOutEvent):
                print(f"Workflow timed out after {ev.timeout}s")
                print("active steps:", ev.active_steps)
            elif isinstance(ev, WorkflowCancelledEvent):
                print("Workflow was cancelled")
            elif isinstance(ev, WorkflowFailedEvent):
                print(f"Step '{ev.step_name}' failed after {ev.attempts} attempts: {ev.exception}")
            elif isinstance(ev, ProgressEvent):
                await handler.cancel_run()
        try:
            await handler
        except Exception as error:
            print("then raised", type(error).__name__)


if __name__ == "__main__":
    asyncio.run(main())
