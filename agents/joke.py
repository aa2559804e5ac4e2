"""JokeFlow: write a joke about a topic, then critique it (the quick-start flow).

::

    JokeStart(topic) ──generate_joke──▶ JokeEvent ──critique_joke──▶ StopEvent(critique)
"""

from __future__ import annotations

from typing import Any

from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
from llama_index.core.llms import LLM
from pydantic import Field

from .errors import AgentInputError
from .llm import check_llm, complete, default_llm
from .prompts import CRITIQUE_PROMPT, JOKE_PROMPT


class JokeEvent(Event):
    """The joke, passed from the first step to the second (and written to the stream).

    Attributes:
        joke: The joke's text.
    """

    joke: str


class JokeStart(StartEvent):
    """The start of a :class:`JokeFlow` run.

    Attributes:
        topic: What the joke is about.
    """

    topic: str | None = Field(None, description="what the joke is about, e.g. pirates")


class JokeFlow(Workflow):
    """Write the best joke about ``topic``, then give a thorough critique of it.

    ::

        flow = JokeFlow(llm=llm, timeout=60)
        critique = await flow.run(topic="pirates")

    The run's result is the critique (a str); the joke is streamed as a :class:`JokeEvent`.

    Args:
        llm: Any llama-index ``LLM``; default OpenAI ``gpt-4o-mini`` (needs ``OPENAI_API_KEY``).
        joke_prompt: The joke prompt, with a ``{topic}`` placeholder.
        critique_prompt: The critique prompt, with a ``{joke}`` placeholder.
        **workflow_kwargs: Passed to :class:`~batonflow.core.Workflow` (``timeout=``,
            ``verbose=``, ...).
    """

    def __init__(
        self,
        llm: LLM | None = None,
        *,
        joke_prompt: str = JOKE_PROMPT,
        critique_prompt: str = CRITIQUE_PROMPT,
        **workflow_kwargs: Any,
    ) -> None:
        super().__init__(**workflow_kwargs)
        self._llm: LLM | None = check_llm(llm, "JokeFlow")
        self.joke_prompt = joke_prompt
        self.critique_prompt = critique_prompt

    def get_llm(self) -> LLM:
        """The flow's LLM; builds the default (OpenAI gpt-4o-mini) on first use.

        Raises:
            LLMConfigurationError: no ``llm=`` was given and ``OPENAI_API_KEY`` is not set.
        """
        if self._llm is None:
            self._llm = default_llm()
        return self._llm

    @step
    async def generate_joke(self, ctx: Context, ev: JokeStart) -> JokeEvent:
        """Ask the LLM for a joke about ``ev.topic``."""
        topic = ev.topic
        if topic is None or not str(topic).strip():
            raise AgentInputError("JokeFlow.run() needs a topic: call flow.run(topic='pirates').")
        joke = JokeEvent(joke=await complete(self.get_llm(), self.joke_prompt.format(topic=topic)))
        ctx.write_event_to_stream(joke)
        return joke

    @step
    async def critique_joke(self, ev: JokeEvent) -> StopEvent:
        """Ask the LLM to critique the joke; the critique is the run's result."""
        critique = await complete(self.get_llm(), self.critique_prompt.format(joke=ev.joke))
        return StopEvent(result=critique)


__all__ = ["JokeEvent", "JokeFlow", "JokeStart"]
