"""Workflows the replica tests serve (in-process and as ``batonflow serve -w`` subprocesses).

``StepsFlow`` notes every step it runs in the file named by its start field ``log`` (fsynced,
one line ``<run_id> <step> <pid> <unix time>``), so a test counts executions across processes
(and the soak tells which fault interrupted an execution that was repeated). With the start
field ``block`` its first step blocks the event loop (``time.sleep``) that many seconds, once per
run (a marker file next to the log says it did): the replica stalls as a whole.
"""

from __future__ import annotations

import asyncio
import os
import time

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


class ApprovalFlow(Workflow):
    """Asks for a decision and returns it."""

    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> InputRequiredEvent:
        await ctx.store.set("topic", ev.get("topic", "?"))
        return InputRequiredEvent(prefix="approve? ")

    @step
    async def decide(self, ctx: Context, ev: HumanResponseEvent) -> StopEvent:
        return StopEvent(result=f"{await ctx.store.get('topic')}: {ev.response}")


def note(path: str, run_id: str, name: str) -> None:
    """Append ``run_id name pid time`` to ``path`` and fsync it (it must survive a SIGKILL)."""
    with open(path, "a") as f:
        f.write(f"{run_id} {name} {os.getpid()} {time.time():.3f}\n")
        f.flush()
        os.fsync(f.fileno())


class Worked(Event):
    """The first step's output."""

    value: int


class StepsFlow(Workflow):
    """Three steps (work, then maybe a question, then finish), each slow enough to be killed in."""

    @step
    async def work(self, ctx: Context, ev: StartEvent) -> Worked:
        note(ev.log, str(ctx.run_id), "work")
        marker = f"{ev.log}.{ctx.run_id}.blocked"
        if float(ev.get("block", 0)) and not os.path.exists(marker):
            open(marker, "w").close()
            time.sleep(float(ev.get("block", 0)))  # the whole replica stalls
        await ctx.store.set("log", ev.log)
        await ctx.store.set("ask", bool(ev.get("ask", False)))
        await ctx.store.set("pause", float(ev.get("pause", 0.3)))
        await asyncio.sleep(float(ev.get("pause", 0.3)))
        return Worked(value=int(ev.get("n", 1)))

    @step
    async def check(self, ctx: Context, ev: Worked) -> StopEvent:
        log = await ctx.store.get("log")
        note(log, str(ctx.run_id), "check")
        ctx.write_event_to_stream(Worked(value=ev.value))
        answer = "auto"
        if await ctx.store.get("ask"):
            reply = await ctx.wait_for_event(
                HumanResponseEvent, waiter_event=InputRequiredEvent(prefix="go on? ")
            )
            answer = reply.response
        await asyncio.sleep(await ctx.store.get("pause") / 2)
        note(log, str(ctx.run_id), "finish")
        return StopEvent(result={"value": ev.value * 2, "answer": answer})
