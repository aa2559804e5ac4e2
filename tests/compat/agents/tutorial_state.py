"""understanding/agent/state.md ("Tools and state"): a tool that edits the shared state.

Filled in: the scripted LLM for OpenAI; the guide's code runs in main() as it shows.
"""

import asyncio

from _llm import ScriptedLLM, call, show_calls
from llama_index.core.agent.workflow import AgentWorkflow
from llama_index.core.workflow import Context

llm = ScriptedLLM(
    [
        'Your name has been set to "unset."',
        call("set_name", "c1", name="Laurie"),
        'Your name has been updated to "Laurie."',
    ]
)


async def set_name(ctx: Context, name: str) -> str:
    async with ctx.store.edit_state() as ctx_state:
        ctx_state["state"]["name"] = name
    return f"Name set to {name}"


workflow = AgentWorkflow.from_tools_or_functions(
    [set_name],
    llm=llm,
    system_prompt="You are a helpful assistant that can set a name.",
    initial_state={"name": "unset"},
)


async def main():
    ctx = Context(workflow)
    # check if it knows a name before setting it
    response = await workflow.run(user_msg="What's my name?", ctx=ctx)
    print(str(response))
    response2 = await workflow.run(user_msg="My name is Laurie", ctx=ctx)
    print(str(response2))
    state = await ctx.store.get("state")
    print("Name as stored in state: ", state["name"])
    show_calls(llm)


asyncio.run(main())
