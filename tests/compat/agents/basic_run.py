"""docs/examples/agent/agent_workflow_basic.ipynb: a FunctionAgent with a web search tool.

Filled in: the scripted LLM for OpenAI, a stub for Tavily's search; each cell runs in main().
"""

import asyncio

from _llm import ScriptedLLM, call, show_calls
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent

llm = ScriptedLLM(
    [
        call("search_web", "c1", query="weather in San Francisco"),
        "It is 15C and foggy in San Francisco.",
        call("search_web", "c2", query="weather in San Francisco"),
        "Still 15C and foggy.",
    ]
)


async def search_web(query: str) -> str:
    """Useful for using the web to answer questions."""
    return str({"query": query, "results": [{"content": "15C, fog"}]})


agent = FunctionAgent(
    tools=[search_web],
    llm=llm,
    system_prompt="You are a helpful assistant that can search the web for information.",
)


async def main() -> None:
    response = await agent.run(user_msg="What is the weather in San Francisco?")
    print(str(response))
    workflow = AgentWorkflow(agents=[agent])
    response = await workflow.run(user_msg="What is the weather in San Francisco?")
    print(str(response))
    print(type(response).__name__, [t.tool_name for t in response.tool_calls])
    show_calls(llm)


asyncio.run(main())
