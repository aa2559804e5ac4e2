"""docs/examples/agent/agent_workflow_basic.ipynb: a tool that sets the agent's state.

Filled in: the scripted LLM for OpenAI.
"""

import asyncio

from _llm import ScriptedLLM, call, show_calls
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.workflow import Context

llm = ScriptedLLM([call("set_name", "c1", name="Logan"), "Your name is set to Logan."])


async def set_name(ctx: Context, name: str) -> str:
    async with ctx.store.edit_state() as ctx_state:
        ctx_state["state"]["name"] = name
    return f"Name set to {name}"


agent = FunctionAgent(
    tools=[set_name],
    llm=llm,
    system_prompt="You are a helpful assistant that can set a name.",
    initial_state={"name": "unset"},
)


async def main() -> None:
    ctx = Context(agent)
    response = await agent.run(user_msg="My name is Logan", ctx=ctx)
    print(str(response))
    state = await ctx.store.get("state")
    print(state["name"])
    show_calls(llm)


asyncio.run(main())
