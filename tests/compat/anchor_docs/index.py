# Ported from the anchor's docs page llamaagents/workflows/index.md ("Introduction").
# Filled in: the page's OpenAI(model="gpt-4.1") is a ScriptedLLM (no network, fixed answers);
# its top-level `await` lines run inside `async def main()`, as the page's own tip shows.
# The checks after the page's example print what the page says happens (`ev.topic` raises
# when the field is missing, `ev.get("topic")` does not).
import asyncio

from _llm import ScriptedLLM as OpenAI
from workflows import Workflow, step
from workflows.events import (
    Event,
    StartEvent,
    StopEvent,
)


class JokeEvent(Event):
    joke: str


class JokeFlow(Workflow):
    llm = OpenAI(model="gpt-4.1")

    @step
    async def generate_joke(self, ev: StartEvent) -> JokeEvent:
        topic = ev.topic

        prompt = f"Write your best joke about {topic}."
        response = await self.llm.acomplete(prompt)
        return JokeEvent(joke=str(response))

    @step
    async def critique_joke(self, ev: JokeEvent) -> StopEvent:
        joke = ev.joke

        prompt = f"Give a thorough analysis and critique of the following joke: {joke}"
        response = await self.llm.acomplete(prompt)
        return StopEvent(result=str(response))


async def main():
    w = JokeFlow(timeout=60, verbose=False)
    result = await w.run(topic="pirates")
    print(str(result))

    # "we accessed the topic with ev.topic, which would raise an error if it wasn't there"
    try:
        await JokeFlow(timeout=60, verbose=False).run()
    except AttributeError as error:
        print("no topic:", type(error).__name__, str(error).split(";")[0])
    print("get:", StartEvent(topic="ships").get("topic"), StartEvent().get("topic"))


if __name__ == "__main__":
    asyncio.run(main())
