# Ported from the anchor's docs page llamaagents/workflows/unbound_functions.md.
# Filled in: main() runs the workflow the page builds and prints its result; the page's last
# paragraph (adding a step to an existing workflow class) is shown with Existing, whose
# StartEvent step's output is consumed by an unbound step.
import asyncio

from workflows import Workflow, step
from workflows.events import Event, StartEvent, StopEvent


class TestWorkflow(Workflow):
    pass


@step(workflow=TestWorkflow)
def some_step(ev: StartEvent) -> StopEvent:
    return StopEvent()


class Middle(Event):
    text: str


class Existing(Workflow):
    @step
    async def begin(self, ev: StartEvent) -> Middle:
        return Middle(text=ev.get("text", "no text"))


@step(workflow=Existing)
async def finish(ev: Middle) -> StopEvent:
    return StopEvent(result=ev.text.upper())


async def main():
    print(repr(await TestWorkflow().run()))
    print(await Existing().run(text="extra step"))


asyncio.run(main())
