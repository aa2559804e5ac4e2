"""understanding/agent/human_in_the_loop.md: a tool that waits for a human's confirmation.

Filled in: the scripted LLM for OpenAI, and the keyboard's input() answered "yes"; the guide's
code runs in main() as it shows.
"""

import asyncio

from _llm import ScriptedLLM, call, show_calls
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.workflow import Context, HumanResponseEvent, InputRequiredEvent

llm = ScriptedLLM([call("dangerous_task", "c1"), "The dangerous task completed successfully."])


def input(prompt):
    print(prompt + "yes")
    return "yes"


async def dangerous_task(ctx: Context) -> str:
    """A dangerous task that requires human confirmation."""

    # emit a waiter event (InputRequiredEvent here)
    # and wait until we see a HumanResponseEvent
    question = "Are you sure you want to proceed? "
    response = await ctx.wait_for_event(
        HumanResponseEvent,
        waiter_id=question,
        waiter_event=InputRequiredEvent(
            prefix=question,
            user_name="Laurie",
        ),
        requirements={"user_name": "Laurie"},
    )

    # act on the input from the event
    if response.response.strip().lower() == "yes":
        return "Dangerous task completed successfully."
    else:
        return "Dangerous task aborted."


workflow = FunctionAgent(
    tools=[dangerous_task],
    llm=llm,
    system_prompt="You are a helpful assistant that can perform dangerous tasks.",
)


async def main():
    handler = workflow.run(user_msg="I want to proceed with the dangerous task.")

    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            # capture keyboard input
            response = input(event.prefix)
            # send our response back
            handler.ctx.send_event(
                HumanResponseEvent(
                    response=response,
                    user_name=event.user_name,
                )
            )

    response = await handler
    print(str(response))
    print([(c.tool_name, str(c.tool_output)) for c in response.tool_calls])
    show_calls(llm)


asyncio.run(main())
