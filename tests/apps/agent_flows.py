"""Agents served and run by the apps tests, each on a scripted LLM (no network, no key).

The LLMs answer by the conversation's last message, not by position in a script, so one agent
serves any number of runs (a server test starts several):

* ``calc`` adds with a tool: "Let me add." with a call of ``add``, then the streamed answer;
* ``bank`` asks a human before its ``transfer`` tool runs (``ctx.wait_for_event``);
* ``broken`` calls ``divide`` by zero, and answers once the tool failed;
* ``relay`` is an ``AgentWorkflow`` whose ``researcher`` looks up a fact and hands off to the
  ``writer``, who answers.

This module imports llama-index (through batonflow.agents); ``flows.py`` must not.
"""

from __future__ import annotations

from typing import Any

from batonflow.agents import AgentWorkflow, FunctionAgent
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from batonflow.core import Context, HumanResponseEvent, InputRequiredEvent

#: How many LLM calls each scripted LLM can answer (far more than the tests make).
CALLS = 500

CALC_ANSWER = "The sum of 2 and 3 is 5."


def _last(messages: list[Any]) -> tuple[str, str]:
    message = messages[-1]
    return message.role.value, message.content or ""


def _calc_reply(messages: list[Any]) -> str | ScriptedResponse:
    role, _ = _last(messages)
    if role == "user":
        return ScriptedResponse("Let me add.", [ScriptedToolCall("add", {"a": 2, "b": 3})])
    return CALC_ANSWER


async def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


calc = FunctionAgent(name="calc", tools=[add], llm=ScriptedLLM([_calc_reply] * CALLS))


async def transfer(ctx: Context, amount: int, to: str) -> str:
    """Transfer money, once a human approved it.

    Args:
        amount: How many euros.
        to: Who gets them.
    """
    answer = await ctx.wait_for_event(
        HumanResponseEvent,
        waiter_id=f"transfer-{amount}-{to}",
        waiter_event=InputRequiredEvent(prefix=f"Transfer {amount} EUR to {to}?"),
    )
    if answer.response.strip().lower() in ("yes", "y"):
        return f"sent {amount} EUR to {to}"
    return "the human refused the transfer"


def _bank_reply(messages: list[Any]) -> str | ScriptedResponse:
    role, text = _last(messages)
    if role == "user":
        return ScriptedResponse(
            tool_calls=[ScriptedToolCall("transfer", {"amount": 30, "to": "Ada"})]
        )
    return f"Done: {text}."


bank = FunctionAgent(name="bank", tools=[transfer], llm=ScriptedLLM([_bank_reply] * CALLS))


async def divide(a: int, b: int) -> float:
    """Divide a by b.

    Args:
        a: The dividend.
        b: The divisor.
    """
    return a / b


def _broken_reply(messages: list[Any]) -> str | ScriptedResponse:
    role, _ = _last(messages)
    if role == "user":
        return ScriptedResponse(tool_calls=[ScriptedToolCall("divide", {"a": 1, "b": 0})])
    return "I cannot divide by zero."


broken = FunctionAgent(name="broken", tools=[divide], llm=ScriptedLLM([_broken_reply] * CALLS))


async def lookup(topic: str) -> str:
    """Look a topic up in the encyclopedia.

    Args:
        topic: What to look up.
    """
    return f"{topic}: 384,400 km from the Earth"


def _relay_reply(messages: list[Any]) -> str | ScriptedResponse:
    role, text = _last(messages)
    if role == "user":
        return ScriptedResponse(tool_calls=[ScriptedToolCall("lookup", {"topic": "Moon"})])
    if "384,400" in text:
        handoff = {"to_agent": "writer", "reason": "the facts are in"}
        return ScriptedResponse(tool_calls=[ScriptedToolCall("handoff", handoff)])
    return "The Moon is about 384,400 km away."


_relay_llm = ScriptedLLM([_relay_reply] * CALLS)
relay = AgentWorkflow(
    agents=[
        FunctionAgent(
            name="researcher",
            description="Finds facts with the lookup tool.",
            tools=[lookup],
            llm=_relay_llm,
            can_handoff_to=["writer"],
        ),
        FunctionAgent(name="writer", description="Writes the answer.", llm=_relay_llm),
    ],
    root_agent="researcher",
)
