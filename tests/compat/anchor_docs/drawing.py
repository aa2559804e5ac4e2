# Ported from the anchor's docs page llamaagents/workflows/drawing.md (its first part; the
# second, the anchor's WorkflowServer debugging UI, is the anchor's server product).
# Filled in: the page's MyWorkflow (a two-step flow taking `topic`); the drawings' formats
# differ by design (see docs/compat.md), so the program prints what both pages show: that
# each file is written, is an HTML page, and names every step and event of the workflow.
import asyncio
from pathlib import Path

from llama_index.utils.workflow import (
    draw_all_possible_flows,
    draw_most_recent_execution,
)
from workflows import Workflow, step
from workflows.events import Event, StartEvent, StopEvent


class TopicEvent(Event):
    topic: str


class MyWorkflow(Workflow):
    @step
    async def read_topic(self, ev: StartEvent) -> TopicEvent:
        return TopicEvent(topic=ev.topic)

    @step
    async def answer(self, ev: TopicEvent) -> StopEvent:
        return StopEvent(result=f"About {ev.topic}")


def show(filename):
    page = Path(filename).read_text()
    names = ["read_topic", "answer", "StartEvent", "TopicEvent", "StopEvent"]
    print(filename, "html:", "<html" in page.lower(), "names all:", all(n in page for n in names))


async def main():
    # Draw all
    draw_all_possible_flows(MyWorkflow, filename="all_paths.html")
    show("all_paths.html")

    # Draw an execution
    w = MyWorkflow()
    handler = w.run(topic="Pirates")
    print(await handler)
    draw_most_recent_execution(handler, filename="most_recent.html")
    show("most_recent.html")


asyncio.run(main())
