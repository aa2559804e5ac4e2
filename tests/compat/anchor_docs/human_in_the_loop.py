# Ported from the anchor's docs page llamaagents/workflows/human_in_the_loop.md.
# Filled in: input() is a scripted person who answers "42" (and prints the prompt it was
# shown); the page's top-level `await`/`async for` lines run inside main(); the page's
# `ask_user` step is put in a workflow (AskUserWorkflow) and prints a line before its wait,
# the code the page says is replayed; the page's "subclass these two events to add custom
# payloads" is shown by AskNumber/NumberGiven in TypedHITLWorkflow.
import asyncio
import json

from workflows import Context, Workflow, step
from workflows.events import (
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
)


def input(prefix):
    print("asked:", repr(prefix))
    return "42"


class HumanInTheLoopWorkflow(Workflow):
    @step
    async def step1(self, ev: StartEvent) -> InputRequiredEvent:
        return InputRequiredEvent(prefix="Enter a number: ")

    @step
    async def step2(self, ev: HumanResponseEvent) -> StopEvent:
        return StopEvent(result=ev.response)


class AskUserWorkflow(Workflow):
    @step
    async def ask_user(self, ctx: Context, ev: StartEvent) -> StopEvent:
        print("ask_user runs the code before the wait")
        response = await ctx.wait_for_event(
            HumanResponseEvent,
            waiter_event=InputRequiredEvent(prefix="Enter a number: "),
            waiter_id="get_number",
        )
        return StopEvent(result=response.response)


class AskNumber(InputRequiredEvent):
    question_id: int


class NumberGiven(HumanResponseEvent):
    number: int


class TypedHITLWorkflow(Workflow):
    @step
    async def ask(self, ev: StartEvent) -> AskNumber:
        return AskNumber(prefix="Pick a number: ", question_id=7)

    @step
    async def answer(self, ev: NumberGiven) -> StopEvent:
        return StopEvent(result=(ev.number, ev.response))


async def main():
    # workflow should work with streaming
    workflow = HumanInTheLoopWorkflow()

    handler = workflow.run()
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            response = input(event.prefix)
            handler.ctx.send_event(HumanResponseEvent(response=response))

    final_result = await handler
    print("streamed:", final_result)

    # Stopping/Resuming Between Human Responses
    handler = workflow.run()
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            # Serialize the context, store it anywhere as a JSON blob
            ctx_dict = handler.ctx.to_dict()
            ctx_dict = json.loads(json.dumps(ctx_dict))  # filled in: stored as a JSON blob
            await handler.cancel_run()
            break

    # now we handle the human response once it comes in
    response = input(event.prefix)

    restored_ctx = Context.from_dict(workflow, ctx_dict)
    handler = workflow.run(ctx=restored_ctx)

    # Send the event to resume the workflow
    handler.ctx.send_event(HumanResponseEvent(response=response))

    # now we resume the workflow streaming with our restored context
    async for event in handler.stream_events():
        continue

    final_result = await handler
    print("resumed:", final_result)

    # Using wait_for_event
    handler = AskUserWorkflow().run()
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            handler.ctx.send_event(HumanResponseEvent(response=input(event.prefix)))
    print("waited:", await handler)

    handler = TypedHITLWorkflow().run()
    async for event in handler.stream_events():
        print("streamed", type(event).__name__)
        if isinstance(event, AskNumber):
            reply = input(event.prefix)
            handler.ctx.send_event(NumberGiven(response=reply, number=int(reply)))
    print("typed:", await handler)


asyncio.run(main())
