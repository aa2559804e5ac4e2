"""understanding/agent/index.mdx ("Building an agent"): a FunctionAgent over multiply and add.

Filled in: the scripted LLM for OpenAI (it calls the tools as gpt-4o-mini would); the guide's
code runs in main() as it shows.
"""

import asyncio

from _llm import ScriptedLLM, ScriptedResponse, call, show_calls
from llama_index.core.agent.workflow import FunctionAgent

llm = ScriptedLLM(
    [
        call("multiply", "c1", a=2, b=4),
        call("add", "c2", a=20, b=8.0),
        ScriptedResponse(text="The result of (20 + (2 times 4)) is 28.", tool_calls=[]),
    ]
)


def multiply(a: float, b: float) -> float:
    """Multiply two numbers and returns the product"""
    return a * b


def add(a: float, b: float) -> float:
    """Add two numbers and returns the sum"""
    return a + b


workflow = FunctionAgent(
    tools=[multiply, add],
    llm=llm,
    system_prompt="You are an agent that can perform basic mathematical operations using tools.",
)


async def main():
    response = await workflow.run(user_msg="What is 20+(2*4)?")
    print(response)
    print([(c.tool_name, c.tool_kwargs, c.tool_output.raw_output) for c in response.tool_calls])
    show_calls(llm)
    print(llm.tools_offered)


if __name__ == "__main__":
    asyncio.run(main())
