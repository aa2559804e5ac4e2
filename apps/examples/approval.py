"""A human-in-the-loop flow: draft a note, ask a human to approve it, report the decision.

The run pauses after :meth:`ApprovalFlow.draft` with an ``InputRequiredEvent`` on its stream;
whoever drives the run (the CLI prompt, ``POST /runs/{id}/events``, the demo) answers with a
``HumanResponseEvent``::

    handler = ApprovalFlow().run(topic="v1.2")
    async for ev in handler.stream_events():
        if isinstance(ev, InputRequiredEvent):
            handler.ctx.send_event(HumanResponseEvent(response="yes"))
    decision = await handler   # {"draft": "...", "approved": True, "answer": "yes"}
"""

from __future__ import annotations

from typing import Any

from batonflow.core import (
    Context,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    step,
)

#: Answers that count as an approval (compared case-insensitively).
APPROVALS = frozenset({"y", "yes", "ok", "approve", "approved", "lgtm"})


class ApprovalFlow(Workflow):
    """Drafts a one-line release note and asks a human to approve it."""

    @step
    async def draft(self, ctx: Context, ev: StartEvent) -> InputRequiredEvent:
        """Write the draft, keep it in the state store, ask for approval."""
        topic = ev.get("topic", "the next release")
        draft = f"Announcing {topic}: faster runs, durable checkpoints, traces in Jaeger."
        await ctx.store.set("draft", draft)
        return InputRequiredEvent(prefix=f"Approve this note? (yes/no)\n  {draft}\n> ", draft=draft)

    @step
    async def decide(self, ctx: Context, ev: HumanResponseEvent) -> StopEvent:
        """Record the human's decision as the run's result."""
        draft = await ctx.store.get("draft")
        answer: Any = ev.response
        approved = str(answer).strip().lower() in APPROVALS
        return StopEvent(result={"draft": draft, "approved": approved, "answer": answer})
