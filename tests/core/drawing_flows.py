"""Sample workflows drawn by the drawing tests (test_drawing.py, test_drawing_recent.py)."""

from batonflow.core.events import (
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
)
from batonflow.core.step import step
from batonflow.core.workflow import Workflow


class JokeEvent(Event):
    joke: str


class RetryEvent(Event):
    pass


class JokeFlow(Workflow):
    @step
    async def generate_joke(self, ev: StartEvent) -> JokeEvent:
        return JokeEvent(joke=f"a joke about {ev.topic}")

    @step
    async def critique_joke(self, ev: JokeEvent) -> StopEvent:
        return StopEvent(result=f"critique of {ev.joke}")


class RetryFlow(Workflow):
    """Tries three times, then stops."""

    @step
    async def attempt(self, ev: StartEvent | RetryEvent) -> RetryEvent | JokeEvent:
        tries = ev.get("tries", 0) + 1
        return JokeEvent(joke="done") if tries >= 3 else RetryEvent(tries=tries)

    @step
    async def finish(self, ev: JokeEvent) -> StopEvent:
        return StopEvent(result=ev.joke)

    @step
    async def never_runs(self, ev: StartEvent) -> None:
        return None


class AskFlow(Workflow):
    @step
    async def ask(self, ev: StartEvent) -> InputRequiredEvent:
        return InputRequiredEvent(prefix="Your name? ")

    @step
    async def greet(self, ev: HumanResponseEvent) -> StopEvent:
        return StopEvent(result=f"hello {ev.response}")
