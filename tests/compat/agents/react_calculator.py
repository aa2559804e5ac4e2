"""docs/examples/agent/react_agent.ipynb: a ReActAgent over multiply and add, streamed.

Filled in: the scripted LLM for OpenAI (its replies are the notebook's recorded ones); the
notebook's cells run in main(); the prompt cells are left out (the ReAct instructions are
batonflow's own, docs/compat.md), the tool calls of the answer are printed by name.
"""

import asyncio

from _llm import ScriptedLLM
from llama_index.core.agent.workflow import AgentStream, ReActAgent, ToolCallResult
from llama_index.core.workflow import Context

llm = ScriptedLLM(
    [
        "Thought: The current language of the user is: English. I need to use a tool to help me"
        ' answer the question.\nAction: multiply\nAction Input: {"a": 2, "b": 4}',
        "Thought: Now I have the result of the multiplication, which is 8. I will add this to 20"
        ' to complete the calculation.\nAction: add\nAction Input: {"a": 20, "b": 8}',
        "Thought: I can answer without using any more tools. I'll use the user's language to"
        " answer.\nAnswer: The result of 20 + (2 * 4) is 28.",
    ]
)


def multiply(a: int, b: int) -> int:
    """Multiply two integers and returns the result integer"""
    return a * b


def add(a: int, b: int) -> int:
    """Add two integers and returns the result integer"""
    return a + b


agent = ReActAgent(tools=[multiply, add], llm=llm)

# Create a context to store the conversation history/session state
ctx = Context(agent)


async def main() -> None:
    handler = agent.run("What is 20+(2*4)?", ctx=ctx)
    async for ev in handler.stream_events():
        if isinstance(ev, ToolCallResult):
            print(f"\nCall {ev.tool_name} with {ev.tool_kwargs}\nReturned: {ev.tool_output}")
        if isinstance(ev, AgentStream):
            print(f"{ev.delta}", end="", flush=True)
    response = await handler
    print()
    print(str(response))
    print([(c.tool_name, c.tool_kwargs, str(c.tool_output)) for c in response.tool_calls])
    print([m.role.value for m in llm.calls[-1]])


asyncio.run(main())
