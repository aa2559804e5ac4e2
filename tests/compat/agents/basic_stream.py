"""docs/examples/agent/agent_workflow_basic.ipynb: streaming the answer's tokens.

Filled in: the scripted LLM for OpenAI, a stub search tool; the event branches the notebook
leaves commented print what they name.
"""

import asyncio

from _llm import ScriptedLLM, call
from llama_index.core.agent.workflow import (
    AgentInput,
    AgentOutput,
    AgentStream,
    FunctionAgent,
    ToolCall,
    ToolCallResult,
)

llm = ScriptedLLM([call("search_web", "c1", query="Saskatoon weather"), "It is -20C in Saskatoon."])


async def search_web(query: str) -> str:
    """Useful for using the web to answer questions."""
    return "Saskatoon: -20C, clear"


agent = FunctionAgent(tools=[search_web], llm=llm, system_prompt="You search the web.")


async def main() -> None:
    handler = agent.run(user_msg="What is the weather in Saskatoon?")
    async for event in handler.stream_events():
        if isinstance(event, AgentStream):
            print(event.delta, end="", flush=True)
        elif isinstance(event, AgentInput):
            print("\ninput:", [m.role.value for m in event.input], event.current_agent_name)
        elif isinstance(event, AgentOutput):
            print("\noutput:", event.response.content, event.tool_calls)
        elif isinstance(event, ToolCallResult):
            print(event.tool_name, event.tool_kwargs, event.tool_output)
        elif isinstance(event, ToolCall):
            print(event.tool_name, event.tool_kwargs)
    print(str(await handler))


asyncio.run(main())
