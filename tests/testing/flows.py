"""The runs the cassette tests record and replay: a FunctionAgent with a tool, a user step
calling ``llm.achat``, and the OpenAI answers they get."""

from __future__ import annotations

from typing import Any

import respx
from batonflow.agents import FunctionAgent
from batonflow.core import Context, StartEvent, StopEvent, Workflow, step
from llama_index.core.llms import ChatMessage
from llama_index.llms.openai import OpenAI
from openai_mock import CHAT_URL, completion

#: A key shaped like OpenAI's, which must never reach a cassette.
SECRET_KEY = "sk-test-0123456789abcdefSECRET"
#: How often the weather tool really ran.
TOOL_RUNS: list[str] = []


def openai_llm(**kwargs: Any) -> OpenAI:
    """llama-index's OpenAI LLM with a secret key and no retries."""
    return OpenAI(model="gpt-4o-mini", max_retries=0, api_key=SECRET_KEY, **kwargs)


def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city.
    """
    TOOL_RUNS.append(city)
    return f"24C and sunny in {city}"


def get_time(city: str) -> str:
    """The time in a city.

    Args:
        city: The city.
    """
    return "noon"


def weather_agent(
    prompt: str = "You answer weather questions.", tools: Any = None, **kwargs: Any
) -> Any:
    """A FunctionAgent over OpenAI with the weather tool."""
    return FunctionAgent(
        tools=tools or [get_weather],
        llm=openai_llm(),
        system_prompt=prompt,
        streaming=False,
        **kwargs,
    )


def mock_weather_answers(router: respx.MockRouter) -> respx.Route:
    """OpenAI asks for the weather tool, then answers."""
    return router.post(CHAT_URL).mock(
        side_effect=[
            completion(tool_calls=[("call_1", "get_weather", {"city": "Rome"})]),
            completion("It is 24C and sunny in Rome."),
        ]
    )


class AskFlow(Workflow):
    """A user's own step that calls ``llm.achat`` and returns the answer."""

    def __init__(self, prompt: str = "Say hi to {name}.", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.prompt = prompt

    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        llm = openai_llm()
        response = await llm.achat(
            [ChatMessage(role="user", content=self.prompt.format(name=ev.name))]
        )
        return StopEvent(result=response.message.content)
