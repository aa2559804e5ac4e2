# Ported from the anchor's docs page llamaagents/workflows/managing_state.md.
# Filled in: the page's three `my_step`/`start` variants are three workflows (CountingWorkflow,
# LockingWorkflow, MyWorkflow); main() runs each and prints the state it left; the "save the
# ctx somewhere and restore" lines the page leaves commented out run too.
import asyncio

from pydantic import BaseModel, Field
from workflows import Context, Workflow, step
from workflows.events import StartEvent, StopEvent


class CountingWorkflow(Workflow):
    @step
    async def my_step(self, ctx: Context, ev: StartEvent) -> StopEvent:
        current_count = await ctx.store.get("count", default=0)
        current_count += 1
        await ctx.store.set("count", current_count)
        return StopEvent()


class LockingWorkflow(Workflow):
    @step
    async def my_step(self, ctx: Context, ev: StartEvent) -> StopEvent:
        # No other steps can access the state while the `with` block is running
        async with ctx.store.edit_state() as ctx_state:
            if "count" not in ctx_state:
                ctx_state["count"] = 0
            ctx_state["count"] += 1
        return StopEvent()


class CounterState(BaseModel):
    count: int = Field(default=0)


class MyWorkflow(Workflow):
    @step
    async def start(self, ctx: Context[CounterState], ev: StartEvent) -> StopEvent:
        # Allows for atomic state updates
        async with ctx.store.edit_state() as ctx_state:
            ctx_state.count += 1

        return StopEvent(result="Done!")


async def main():
    for flow in (CountingWorkflow(), LockingWorkflow()):
        handler = flow.run()
        print(type(flow).__name__, repr(await handler), await handler.ctx.store.get("count"))

    workflow = MyWorkflow()
    ctx = Context(workflow)

    handler = workflow.run(ctx=ctx)
    result = await handler
    print(result, (await ctx.store.get_state()).count)

    # Optional: save the ctx somewhere and restore
    ctx_dict = ctx.to_dict()
    ctx = Context.from_dict(workflow, ctx_dict)

    # continue with next run
    handler = workflow.run(ctx=ctx)
    result = await handler
    state = await ctx.store.get_state()
    print(result, type(state).__name__, state.count)


asyncio.run(main())
