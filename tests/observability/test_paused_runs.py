"""A run paused for a human and resumed elsewhere: its paused part is traced as paused."""

from __future__ import annotations

import asyncio

from batonflow.core import (
    Context,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    step,
)
from batonflow.core.tracing import OpenTelemetryInstrument
from opentelemetry.trace import StatusCode
from otel_testing import Spans


class Approval(Workflow):
    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        answer = await ctx.wait_for_event(
            HumanResponseEvent, waiter_event=InputRequiredEvent(prefix="Approve? ")
        )
        return StopEvent(result=f"approved: {answer.response}")


async def test_paused_then_resumed_run_has_no_error_spans(spans: Spans) -> None:
    """Cancelling a run that waits for a human marks it paused; the resumed run completes."""
    instrument = OpenTelemetryInstrument(tracer_provider=spans.provider)
    flow = Approval(instruments=[instrument], timeout=None)
    handler = flow.run()
    async for ev in handler.stream_events():
        if isinstance(ev, InputRequiredEvent):
            break
    snapshot = handler.ctx.to_dict()
    await handler.cancel_run()
    await asyncio.sleep(0)

    elsewhere = Approval(instruments=[instrument], timeout=None)
    ctx = Context.from_dict(elsewhere, snapshot)
    resumed = elsewhere.run(ctx=ctx)
    resumed.ctx.send_event(HumanResponseEvent(response="yes"))
    assert await resumed == "approved: yes"

    runs = spans.named("invoke_workflow Approval")
    first = next(s for s in runs if not s.attributes.get("batonflow.run.resumed"))
    assert first.attributes["batonflow.run.status"] == "paused"
    assert first.status.status_code is not StatusCode.ERROR
    paused_step = next(
        s for s in spans.named("step ask") if s.attributes.get("batonflow.step.paused")
    )
    assert paused_step.status.status_code is not StatusCode.ERROR
    assert "error.type" not in paused_step.attributes
    assert [s.name for s in spans.finished if s.status.status_code is StatusCode.ERROR] == []


async def test_a_cancelled_run_that_was_not_waiting_is_still_cancelled(spans: Spans) -> None:
    """Only a run waiting for an event counts as paused; a busy step cancelled stays an error."""

    class Busy(Workflow):
        @step
        async def work(self, ev: StartEvent) -> StopEvent:
            await asyncio.sleep(30)
            return StopEvent()

    handler = Busy(instruments=[OpenTelemetryInstrument(tracer_provider=spans.provider)]).run()
    await asyncio.sleep(0.05)
    await handler.cancel_run()
    run = spans.one("invoke_workflow Busy")
    assert run.attributes["batonflow.run.status"] == "cancelled"
    assert spans.one("step work").status.status_code is StatusCode.ERROR


async def test_agent_tool_waiting_for_approval_is_paused_not_failed(spans: Spans) -> None:
    """A tool asking a human, paused and resumed from a snapshot: no red tool or step span."""
    from batonflow.agents import FunctionAgent
    from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall

    async def transfer(ctx: Context, amount: int) -> str:
        """Transfer money, once a human approves."""
        answer = await ctx.wait_for_event(
            HumanResponseEvent, waiter_event=InputRequiredEvent(prefix=f"Send {amount}? ")
        )
        return "sent" if answer.response == "yes" else "refused"

    def agent(llm: ScriptedLLM) -> FunctionAgent:
        return FunctionAgent(
            tools=[transfer],
            llm=llm,
            instruments=[OpenTelemetryInstrument(tracer_provider=spans.provider)],
        )

    call = ScriptedResponse(tool_calls=[ScriptedToolCall("transfer", {"amount": 5}, id="t1")])
    first = agent(ScriptedLLM([call]))
    handler = first.run(user_msg="send 5")
    async for ev in handler.stream_events():
        if isinstance(ev, InputRequiredEvent):
            break
    snapshot = handler.ctx.to_dict()
    await handler.cancel_run()
    await asyncio.sleep(0)

    elsewhere = agent(ScriptedLLM(["Done: sent."]))
    resumed = elsewhere.run(ctx=Context.from_dict(elsewhere, snapshot))
    resumed.ctx.send_event(HumanResponseEvent(response="yes"))
    assert str(await resumed) == "Done: sent."

    tools = spans.named("execute_tool transfer")
    assert any(s.attributes.get("batonflow.cancelled") for s in tools)  # the paused attempt
    assert [s.name for s in spans.finished if s.status.status_code is StatusCode.ERROR] == []
