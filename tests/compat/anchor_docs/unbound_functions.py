# Ported from the anchor's docs page llamaagents/workflows/unbound_functions.md.
# Filled in: main() runs the workflow the page builds and prints its result.
import asyncio

from workflows import Workflow, step
from workflows.events import StartEvent, StopEvent


class TestWorkflow(Workflow):
    pass


@step(workflow=TestWorkflow)
def some_step(ev: StartEvent) -> StopEvent:
    return StopEvent()


async def main():
    print(repr(await TestWorkflow().run()))


asyncio.run(main())
