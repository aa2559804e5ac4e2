"""docs/examples/agent/agent_workflow_basic.ipynb: remembering the user on one Context.

Filled in: the scripted LLM for OpenAI; each cell runs in main().
"""

import asyncio

from _llm import ScriptedLLM, show_calls
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.workflow import Context, JsonSerializer

llm = ScriptedLLM(["Nice to meet you, Logan!", "Your name is Logan.", "Yes, your name is Logan."])
agent = FunctionAgent(tools=[], llm=llm, system_prompt="You are a helpful assistant.")


async def main() -> None:
    ctx = Context(agent)
    response = await agent.run(user_msg="My name is Logan, nice to meet you!", ctx=ctx)
    print(str(response))
    response = await agent.run(user_msg="What is my name?", ctx=ctx)
    print(str(response))
    ctx_dict = ctx.to_dict(serializer=JsonSerializer())
    restored_ctx = Context.from_dict(agent, ctx_dict, serializer=JsonSerializer())
    response = await agent.run(user_msg="Do you still remember my name?", ctx=restored_ctx)
    print(str(response))
    show_calls(llm)


asyncio.run(main())
