# Ported from the anchor's docs page llamaagents/workflows/customizing_entry_exit_points.md.
# Filled in: LlamaCloudIndex (a cloud service) is a small local index class whose query
# engine answers with the closest word it holds; OpenAI is a ScriptedLLM; the page's `...`
# in JokeFlow are the index page's steps (JokeEvent, critique_joke), and its
# `MyCustomStartEvent(...)` gets values; the two variants of JokeFlow are JokeFlow (custom
# start) and CritiqueFlow (custom stop).
import asyncio
import tempfile
from pathlib import Path

from _llm import ScriptedLLM as OpenAI
from llama_index.core.base.llms.types import CompletionResponse
from workflows import Workflow, step
from workflows.events import Event, StartEvent, StopEvent


class LlamaCloudIndex:
    def __init__(self, topics):
        self.topics = topics

    def as_query_engine(self, llm):
        topics = self.topics

        class _Engine:
            async def aquery(self, question):
                return next(t for t in topics if t[0] in question)

        return _Engine()


class MyCustomStartEvent(StartEvent):
    a_string_field: str
    a_path_to_somewhere: Path
    an_index: LlamaCloudIndex
    an_llm: OpenAI


class JokeEvent(Event):
    joke: str


class JokeFlow(Workflow):
    llm = OpenAI(model="critic")

    @step
    async def generate_joke_from_index(self, ev: MyCustomStartEvent) -> JokeEvent:
        # Build a query engine using the index and the llm from the start event
        query_engine = ev.an_index.as_query_engine(llm=ev.an_llm)
        topic = await query_engine.aquery(f"What is the closest topic to {ev.a_string_field}")
        # Use the llm attached to the start event to instruct the model
        prompt = f"Write your best joke about {topic}."
        response = await ev.an_llm.acomplete(prompt)
        # Dump the response on disk using the Path object from the event
        ev.a_path_to_somewhere.write_text(str(response))
        # Finally, pass the JokeEvent along
        return JokeEvent(joke=str(response))

    @step
    async def critique_joke(self, ev: JokeEvent) -> StopEvent:
        prompt = f"Give a thorough analysis and critique of the following joke: {ev.joke}"
        response = await self.llm.acomplete(prompt)
        return StopEvent(result=str(response))


class MyStopEvent(StopEvent):
    critique: CompletionResponse


class CritiqueFlow(Workflow):
    llm = OpenAI(model="critic")

    @step
    async def generate_joke(self, ev: StartEvent) -> JokeEvent:
        response = await self.llm.acomplete(f"Write your best joke about {ev.topic}.")
        return JokeEvent(joke=str(response))

    @step
    async def critique_joke(self, ev: JokeEvent) -> MyStopEvent:
        joke = ev.joke

        prompt = f"Give a thorough analysis and critique of the following joke: {joke}"
        response = await self.llm.acomplete(prompt)
        return MyStopEvent(critique=response)


async def main():
    out = Path(tempfile.mkdtemp()) / "joke.txt"
    custom_start_event = MyCustomStartEvent(
        a_string_field="parrots",
        a_path_to_somewhere=out,
        an_index=LlamaCloudIndex(["pirates", "ships"]),
        an_llm=OpenAI(model="joker"),
    )
    w = JokeFlow(timeout=60, verbose=False)
    result = await w.run(start_event=custom_start_event)
    print(str(result))
    print("on disk:", out.read_text())

    w = CritiqueFlow(timeout=60, verbose=False)
    # Warning! `result` now contains an instance of MyStopEvent!
    result = await w.run(topic="pirates")
    # We can now access the event fields as any normal Event
    print(result.critique.text)
    print(type(result).__name__, isinstance(result, StopEvent), result.result)


asyncio.run(main())
