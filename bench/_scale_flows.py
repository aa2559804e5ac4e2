"""The flows ``bench/scale_model.py`` serves from ``batonflow serve``.

* ``Chain``: ``steps`` durable steps in a row (the start event's field), nothing else: no
  state, no stream event. What a run's start and end cost is a one-step chain's less a step;
  what a step costs is the difference of two chain lengths.
* ``Ask``: a durable step that asks a question, and one that takes the answer.
"""

from __future__ import annotations

from batonflow.core import (
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    step,
)


class Tick(Event):
    """The chain's next step: ``left`` steps to go after it."""

    left: int
    result: int


class Chain(Workflow):
    """``steps`` durable steps (at least one), the last returning the start's ``n`` + 1."""

    @step
    async def begin(self, ev: StartEvent) -> Tick | StopEvent:
        steps, result = int(ev.get("steps", 1)), int(ev.get("n", 0)) + 1
        return StopEvent(result=result) if steps <= 1 else Tick(left=steps - 2, result=result)

    @step
    async def go_on(self, ev: Tick) -> Tick | StopEvent:
        if ev.left > 0:
            return Tick(left=ev.left - 1, result=ev.result)
        return StopEvent(result=ev.result)


class Ask(Workflow):
    """Two durable steps with a question between them; the result is the answer."""

    @step
    async def ask(self, ev: StartEvent) -> InputRequiredEvent:
        return InputRequiredEvent(prefix="go on? ")

    @step
    async def decide(self, ev: HumanResponseEvent) -> StopEvent:
        return StopEvent(result=ev.response)
