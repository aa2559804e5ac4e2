"""docs/examples/agent/return_direct_agent.ipynb: booking tools, two of them return_direct.

Filled in: the scripted LLM for Anthropic (its replies follow the notebook's recorded run);
the notebook's cells run in main(); the roles of each LLM call are printed at the end.
"""

import asyncio

from _llm import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from llama_index.core.agent.workflow import AgentStream, FunctionAgent, ToolCallResult
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context
from pydantic import BaseModel


def calls(text, *updates):
    return ScriptedResponse(
        text=text,
        tool_calls=[
            ScriptedToolCall(name, kwargs, id=f"t{i}") for i, (name, kwargs) in enumerate(updates)
        ],
    )


def update(prop, value):
    return ("update_booking", {"user_id": "user123", "property": prop, "value": value})


llm = ScriptedLLM(
    [
        calls(
            "Okay, let's create a new booking for you.", ("create_booking", {"user_id": "user123"})
        ),
        calls(
            "Got it, thanks for providing your name and email.",
            update("name", "Logan"),
            update("email", "test@gmail.com"),
        ),
        "Please also provide your phone number, preferred date, and time for the booking.",
        calls(
            "Great, thank you.",
            update("phone", "1234567890"),
            update("date", "2023-04-05"),
            update("time", "17:00"),
        ),
        calls("", ("confirm_booking", {"user_id": "user123"})),
    ]
)

# we will store booking under random IDs
bookings = {}


# we will represent and track the state of a booking as a Pydantic model
class Booking(BaseModel):
    name: str | None = None
    email: str | None = None
    phone: str | None = None
    date: str | None = None
    time: str | None = None


def get_booking_state(user_id: str) -> str:
    """Get the current state of a booking for a given booking ID."""
    try:
        return str(bookings[user_id].dict())
    except:  # noqa: E722
        return f"Booking ID {user_id} not found"


def update_booking(user_id: str, property: str, value: str) -> str:
    """Update a property of a booking for a given booking ID. Only enter details that are explicitly provided."""
    booking = bookings[user_id]
    setattr(booking, property, value)
    return f"Booking ID {user_id} updated with {property} = {value}"


def create_booking(user_id: str) -> str:
    """Create a new booking and return the booking ID."""
    bookings[user_id] = Booking()
    return "Booking created, but not yet confirmed. Please provide your name, email, phone, date, and time."


def confirm_booking(user_id: str) -> str:
    """Confirm a booking for a given booking ID."""
    booking = bookings[user_id]

    if booking.name is None:
        raise ValueError("Please provide your name.")

    if booking.email is None:
        raise ValueError("Please provide your email.")

    if booking.phone is None:
        raise ValueError("Please provide your phone number.")

    if booking.date is None:
        raise ValueError("Please provide the date of your booking.")

    if booking.time is None:
        raise ValueError("Please provide the time of your booking.")

    return f"Booking ID {user_id} confirmed!"


# create tools for each function
get_booking_state_tool = FunctionTool.from_defaults(fn=get_booking_state)
update_booking_tool = FunctionTool.from_defaults(fn=update_booking)
create_booking_tool = FunctionTool.from_defaults(fn=create_booking, return_direct=True)
confirm_booking_tool = FunctionTool.from_defaults(fn=confirm_booking, return_direct=True)

user = "user123"
system_prompt = f"""You are now connected to the booking system and helping {user} with making a booking.
Only enter details that the user has explicitly provided.
Do not make up any details.
"""

agent = FunctionAgent(
    tools=[
        get_booking_state_tool,
        update_booking_tool,
        create_booking_tool,
        confirm_booking_tool,
    ],
    llm=llm,
    system_prompt=system_prompt,
)

# create a context for the agent to hold the state/history of a session
ctx = Context(agent)


async def turn(text):
    handler = agent.run(text, ctx=ctx)
    async for ev in handler.stream_events():
        if isinstance(ev, AgentStream):
            print(f"{ev.delta}", end="", flush=True)
        elif isinstance(ev, ToolCallResult):
            print(f"\nCall {ev.tool_name} with {ev.tool_kwargs}\nReturned: {ev.tool_output}")
    response = await handler
    print()
    print(str(response))


async def main() -> None:
    await turn("Hello! I would like to make a booking, around 5pm?")
    await turn("Sure! My name is Logan, and my email is test@gmail.com?")
    await turn("Right! My phone number is 1234567890, the date of the booking is April 5, at 5pm.")
    print(bookings["user123"])
    for i, messages in enumerate(llm.calls):
        print(f"-- LLM call {i + 1}:", [m.role.value for m in messages])


asyncio.run(main())
