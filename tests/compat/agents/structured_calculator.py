"""docs/examples/agent/agent_with_structured_output.ipynb: a FunctionAgent with output_cls.

Filled in: the scripted LLM for OpenAI (a multiply call, the answer, then the structured
output's call, which llama-index makes with the model as a tool); the cells run in main().
"""

import asyncio

from _llm import ScriptedLLM, call, show_calls
from llama_index.core.agent.workflow import FunctionAgent
from pydantic import BaseModel, Field

llm = ScriptedLLM(
    [
        call("multiply", "c1", x=10, y=4),
        "10 multiplied by 4 is 40.",
        call("MathResult", "c2", operation="multiplication", result=40),
    ]
)


class MathResult(BaseModel):
    operation: str = Field(description="The operation that has been performed")
    result: int = Field(description="Result of the operation")


def add(x: int, y: int):
    """Add two numbers"""
    return x + y


def multiply(x: int, y: int):
    """Multiply two numbers"""
    return x * y


agent = FunctionAgent(
    llm=llm,
    output_cls=MathResult,
    tools=[add, multiply],
    system_prompt="You are a calculator agent that can add or multiply two numbers by calling tools",
    name="calculator",
)


async def main() -> None:
    response = await agent.run("What is the result of 10 multiplied by 4?")
    # print the structured output as a plain dictionary
    print(response.structured_response)
    # print the structured output as a Pydantic model
    print(response.get_pydantic_model(MathResult))
    print(str(response))
    show_calls(llm)
    print(llm.tools_offered)


asyncio.run(main())
