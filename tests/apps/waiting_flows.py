"""Workflows that wait for a human in every way there is (served by the answer tests).

``TransferAgent`` is the case of issue 27: a FunctionAgent (scripted LLM) whose tool asks with
``ctx.wait_for_event(HumanResponseEvent, requirements={"tool": "transfer"})`` before a
transfer. The others wait without requirements, write their question before waiting (the
older llama-index pattern), or use their own event classes for the question and the answer.
"""

from __future__ import annotations

import asyncio
from typing import Any

from batonflow.core import (
    Context,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    step,
)


async def transfer(ctx: Context, amount: int, to: str) -> str:
    """Transfer money, once a human approved it."""
    answer = await ctx.wait_for_event(
        HumanResponseEvent,
        waiter_id=f"transfer-{to}",
        waiter_event=InputRequiredEvent(prefix=f"Transfer {amount} EUR to {to}? ", tool="transfer"),
        requirements={"tool": "transfer"},
        timeout=None,
    )
    if answer.response.strip().lower() == "yes":
        return f"Transferred {amount} EUR to {to}."
    return "The transfer was refused."


def transfer_agent(payees: tuple[str, ...] = ("Ada",)) -> Any:
    """A FunctionAgent whose one tool asks before it transfers (any number of runs); the LLM
    calls it once per payee, all in one turn (the tool calls run at once)."""
    from batonflow.agents import FunctionAgent
    from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall

    def banker(messages: list[Any]) -> Any:
        done = [m.content for m in messages if m.role.value == "tool"]
        if messages[-1].role.value == "tool":
            return "Done: " + " / ".join(done)
        calls = [ScriptedToolCall("transfer", {"amount": 30, "to": to}) for to in payees]
        return ScriptedResponse(tool_calls=calls)

    return FunctionAgent(
        tools=[transfer],
        llm=ScriptedLLM([banker] * 200),
        system_prompt="You move money when asked.",
        timeout=None,
    )


class WriteThenWaitFlow(Workflow):
    """Writes its question to the stream, then waits (no waiter_event)."""

    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        ctx.write_event_to_stream(InputRequiredEvent(prefix="Your name? "))
        answer = await ctx.wait_for_event(HumanResponseEvent, timeout=None)
        return StopEvent(result=f"hello {answer.response}")


class ApprovalRequest(InputRequiredEvent):
    """A question of the workflow's own type."""

    ticket: int


class Approval(HumanResponseEvent):
    """An answer of the workflow's own type, with a typed field."""

    ticket: int
    approved: bool


class Decision(Event):
    """An answer that is a plain event, not a HumanResponseEvent."""

    choice: str


class Pick(Event):
    """A question that is a plain event, not an InputRequiredEvent."""

    prefix: str
    options: list[str]


class CustomTypesFlow(Workflow):
    """Asks twice with its own classes: an Approval for ticket 7, then a Decision (asked with
    a plain event)."""

    @step
    async def review(self, ctx: Context, ev: StartEvent) -> StopEvent:
        approval = await ctx.wait_for_event(
            Approval,
            waiter_event=ApprovalRequest(prefix="Approve ticket 7?", ticket=7),
            requirements={"ticket": 7},
            timeout=None,
        )
        decision = await ctx.wait_for_event(
            Decision, waiter_event=Pick(prefix="Which one?", options=["a", "b"]), timeout=None
        )
        return StopEvent(result=f"{approval.approved} {decision.choice}")


class PlainQuestionFlow(Workflow):
    """Asks with a plain event (no InputRequiredEvent) for a plain Decision."""

    @step
    async def choose(self, ctx: Context, ev: StartEvent) -> StopEvent:
        decision = await ctx.wait_for_event(
            Decision, waiter_event=Pick(prefix="Which one?", options=["a", "b"]), timeout=None
        )
        return StopEvent(result=decision.choice)


class GaveUp(Event):
    """Written once the question's wait timed out."""


class ImpatientFlow(Workflow):
    """Asks, gives up after ``wait`` seconds (the run goes on), then works a minute."""

    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        try:
            await ctx.wait_for_event(
                HumanResponseEvent,
                waiter_event=InputRequiredEvent(prefix="Quick: yes?"),
                timeout=float(ev.get("wait", 0.3)),
            )
        except TimeoutError:
            ctx.write_event_to_stream(GaveUp())
        await asyncio.sleep(60)
        return StopEvent(result="late")


def waiting_flows() -> dict[str, Any]:
    """Every way of waiting, by the name the tests serve it under."""
    from . import flows

    return {
        "agent": transfer_agent(),
        "pair": transfer_agent(("Ada", "Bob")),
        "waiter": flows.WaitingFlow(timeout=None),
        "written": WriteThenWaitFlow(timeout=None),
        "returned": flows.ApprovalFlow(timeout=None),
        "guess": flows.GuessFlow(timeout=None),
        "custom": CustomTypesFlow(timeout=None),
        "plain": PlainQuestionFlow(timeout=None),
        "sleepy": flows.SleepyFlow(timeout=None),
        "impatient": ImpatientFlow(timeout=None),
    }
