# Ported from the anchor's docs page llamaagents/workflows/observability.md, its "Custom Spans
# and Events" example (its OpenTelemetry set-up is llama-index-observability-otel, which
# batonflow replaces with batonflow.observability; see docs/compat.md).
# Filled in: an event handler and a span handler on the root dispatcher print what they
# capture (names only; span ids hold random parts); example_fn is called outside a workflow
# and from a step of a one-step workflow (Traced), as the page says it can be.
import asyncio

from llama_index_instrumentation import get_dispatcher
from llama_index_instrumentation.base import BaseEvent
from llama_index_instrumentation.event_handlers import BaseEventHandler
from llama_index_instrumentation.span_handlers import SimpleSpanHandler
from workflows import Workflow, step
from workflows.events import StartEvent, StopEvent

dispatcher = get_dispatcher()


# Define custom events
class ExampleEvent(BaseEvent):
    data: str


class AnotherExampleEvent(BaseEvent):
    print_statement: str


# Use the @dispatcher.span decorator
@dispatcher.span
def example_fn(data: str) -> None:
    dispatcher.event(ExampleEvent(data=data))
    s = "This are example string data: " + data
    dispatcher.event(AnotherExampleEvent(print_statement=s))
    print(s)


class PrintingEventHandler(BaseEventHandler):
    def handle(self, event, **kwargs):
        if isinstance(event, (ExampleEvent, AnotherExampleEvent)):
            print("event:", type(event).__name__, "in span", event.span_id.split("-")[0])


class Traced(Workflow):
    @step
    async def traced_step(self, ev: StartEvent) -> StopEvent:
        example_fn(ev.data)
        return StopEvent(result="traced")


async def main():
    root = get_dispatcher("root")
    spans = SimpleSpanHandler()
    root.add_event_handler(PrintingEventHandler())
    root.add_span_handler(spans)

    example_fn("outside")
    print(await Traced().run(data="inside a step"))

    def name(span_id):
        return span_id.split("-")[0] if span_id else None

    for span in spans.completed_spans:
        if name(span.id_) == "example_fn":
            print("example_fn span, parent:", name(span.parent_id))
    print("other spans:", sorted({name(s.id_) for s in spans.completed_spans} - {"example_fn"}))


asyncio.run(main())
