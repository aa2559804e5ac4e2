"""understanding/agent/streaming.mdx: streaming a web-search agent's answer and its events.

Filled in: the scripted LLM for OpenAI, a stub tool spec for Tavily's (same method name);
the guide's loop is followed by the other event types it names, printed in turn.
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
from llama_index.core.tools.tool_spec.base import BaseToolSpec

llm = ScriptedLLM(
    [
        call("search", "c1", query="weather in San Francisco", max_results=6),
        "The current weather in San Francisco is as follows:\n- **Temperature**: 17.2°C (63°F)\n"
        "- **Condition**: Sunny",
    ]
)


class TavilyToolSpec(BaseToolSpec):
    """Stand-in for llama_index.tools.tavily_research.TavilyToolSpec (no network)."""

    spec_functions = ["search"]

    def __init__(self, api_key):
        self.api_key = api_key

    def search(self, query: str, max_results: int = 6) -> list:
        """Run query through Tavily Search and return metadata."""
        return [f"San Francisco: 17.2C, sunny ({max_results} results)"]


tavily_tool = TavilyToolSpec(api_key="tvly-test")

workflow = FunctionAgent(
    tools=tavily_tool.to_tool_list(),
    llm=llm,
    system_prompt="You're a helpful assistant that can search the web for information.",
)


async def main():
    handler = workflow.run(user_msg="What's the weather like in San Francisco?")
    async for event in handler.stream_events():
        if isinstance(event, AgentStream):
            print(event.delta, end="", flush=True)
        elif isinstance(event, AgentInput):
            print("\nAgentInput:", [(m.role.value, m.content) for m in event.input])
        elif isinstance(event, AgentOutput):
            print("\nAgentOutput:", event.response.content, [c.tool_name for c in event.tool_calls])
        elif isinstance(event, ToolCallResult):
            print(
                "ToolCallResult:", event.tool_name, event.tool_output, event.tool_output.raw_output
            )
        elif isinstance(event, ToolCall):
            print("ToolCall:", event.tool_name, event.tool_kwargs)
    print(await handler)


asyncio.run(main())
