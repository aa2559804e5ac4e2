"""understanding/agent/structured_output.md: output_cls, structured_output_fn and its stream.

Filled in: the scripted LLM for OpenAI (its replies in turn, the structured calls included);
the guide's code runs in main() as it shows, events printed whole as it prints them.
"""

import asyncio
import json
from typing import Any

from _llm import ScriptedLLM, call
from llama_index.core.agent.workflow import (
    AgentInput,
    AgentOutput,
    AgentStreamStructuredOutput,
    AgentWorkflow,
    FunctionAgent,
    ToolCall,
    ToolCallResult,
)
from llama_index.core.llms import ChatMessage
from pydantic import BaseModel, Field


def ice_cream_turns():
    return [
        call("get_flavor", "c5", ice_cream_shop="Gelato Italia"),
        "Gelato Italia has strawberry with no extra sugar.",
        call("Flavor", "c6", flavor="strawberry", with_sugar=False),
    ]


llm = ScriptedLLM(
    [
        call("multiply", "c1", x=3415, y=43144),
        "3415 * 43144 = 147336760",
        call("MathResult", "c2", operation="multiplication", result=147336760),
        call("handoff", "h1", to_agent="WeatherAgent", reason="A weather question."),
        call("get_weather", "c3", location="Tokyo"),
        "The weather in Tokyo is sunny.",
        call("Weather", "c4", location="Tokyo", weather="sunny"),
        *ice_cream_turns(),
        *ice_cream_turns(),
    ]
)


## define structured output format  and tools
class MathResult(BaseModel):
    operation: str = Field(description="the performed operation")
    result: int = Field(description="the result of the operation")


def multiply(x: int, y: int):
    """Multiply two numbers"""
    return x * y


## define structured output format  and tools
class Weather(BaseModel):
    location: str = Field(description="The location")
    weather: str = Field(description="The weather")


def get_weather(location: str):
    """Get the weather for a given location"""
    return f"The weather in {location} is sunny"


class Flavor(BaseModel):
    flavor: str
    with_sugar: bool


async def structured_output_parsing(
    messages: list[ChatMessage],
) -> dict[str, Any]:
    sllm = llm.as_structured_llm(Flavor)
    messages.append(
        ChatMessage(
            role="user",
            content="Given the previous message history, structure the output based on the provided format.",
        )
    )
    response = await sllm.achat(messages)
    return json.loads(response.message.content)


def get_flavor(ice_cream_shop: str):
    return "Strawberry with no extra sugar"


async def main():
    ## define agent
    agent = FunctionAgent(
        tools=[multiply],
        name="calculator",
        system_prompt="You are a calculator agent who can multiply two numbers using the `multiply` tool.",
        output_cls=MathResult,
        llm=llm,
    )
    response = await agent.run("What is 3415 * 43144?")
    print(response.structured_response)
    print(response.get_pydantic_model(MathResult))

    ## define single agents
    agent = FunctionAgent(
        llm=llm,
        tools=[get_weather],
        system_prompt="You are a weather agent that can get the weather for a given location",
        name="WeatherAgent",
        description="The weather forecaster agent.",
    )
    main_agent = FunctionAgent(
        name="MainAgent",
        tools=[],
        description="The main agent",
        system_prompt="You are the main agent, your task is to dispatch tasks to secondary agents, specifically to WeatherAgent",
        can_handoff_to=["WeatherAgent"],
        llm=llm,
    )
    ## define multi-agent workflow
    workflow = AgentWorkflow(
        agents=[main_agent, agent],
        root_agent=main_agent.name,
        output_cls=Weather,
    )
    response = await workflow.run("What is the weather in Tokyo?")
    print(response.structured_response)
    print(response.get_pydantic_model(Weather))

    agent = FunctionAgent(
        tools=[get_flavor],
        name="ice_cream_shopper",
        system_prompt="You are an agent that knows the ice cream flavors in various shops.",
        structured_output_fn=structured_output_parsing,
        llm=llm,
    )
    response = await agent.run("What strawberry flavor is available at Gelato Italia?")
    print(response.structured_response)
    print(response.get_pydantic_model(Flavor))

    handler = agent.run("What strawberry flavor is available at Gelato Italia?")
    async for event in handler.stream_events():
        if isinstance(event, AgentInput):
            print(event)
        elif isinstance(event, AgentStreamStructuredOutput):
            print(event.output)
            print(event.get_pydantic_model(Weather))
        elif isinstance(event, ToolCallResult):
            print(event)
        elif isinstance(event, ToolCall):
            print(event)
        elif isinstance(event, AgentOutput):
            print(event)
        else:
            pass
    response = await handler
    print(response.structured_response)
    print(response.get_pydantic_model(Flavor))
    print(llm.tools_offered)


asyncio.run(main())
