"""GuessNumberWorkflow: a loop with shared state (binary search for a number in 1..100).

A step that returns its own input type loops; the search interval and the attempt count live in
``ctx.store`` (events move the work, state keeps the record)::

    StartEvent ──init──▶ GuessEvent ──accumulate──▶ GuessEvent (again) ... ──▶ StopEvent

Run it with ``await GuessNumberWorkflow().run(target=42)`` (``target`` defaults to a random
number, ``first_guess`` to the middle of the interval). It gives up after 10 attempts.
"""

from __future__ import annotations

import random
from typing import Any

from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step

from .errors import AgentInputError

#: The most guesses before the workflow gives up.
MAX_ATTEMPTS = 10


class GuessEvent(Event):
    """One guess, and the feedback on the previous one.

    Attributes:
        guess: The number to try.
        feedback: What the last guess taught ("太小了" too small, "太大了" too big).
    """

    guess: int
    feedback: str = ""


def _int_arg(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise AgentInputError(
        f"GuessNumberWorkflow.run({name}=...) must be a whole number, got {value!r}; "
        f"e.g. run({name}=42)."
    )


class GuessNumberWorkflow(Workflow):
    """Guess a number between 1 and 100 by binary search, in at most 10 attempts.

    Start arguments: ``target`` (the number to find; random when omitted) and ``first_guess``
    (default: the middle of the interval). The result is ``"猜对了!用了 N 次"`` (found in N
    attempts) or ``"超时失败,目标数字是 T"`` (gave up; the target was T). State keys:
    ``target``, ``low``, ``high``, ``attempts``. Each guess is also written to the event
    stream as a :class:`GuessEvent`.
    """

    @step
    async def init(self, ctx: Context, ev: StartEvent) -> GuessEvent:
        """Store the target and the search interval; make the first guess."""
        target = _int_arg(ev.get("target"), "target") or random.randint(1, 100)
        low, high = 1, 100
        first_guess = _int_arg(ev.get("first_guess"), "first_guess")
        if first_guess is None:
            first_guess = (low + high) // 2
        await ctx.store.set("target", target)
        await ctx.store.set("low", low)
        await ctx.store.set("high", high)
        await ctx.store.set("attempts", 0)
        first = GuessEvent(guess=first_guess, feedback="开始猜数")
        ctx.write_event_to_stream(first)  # callers (CLI, server) can follow the guesses
        return first

    @step
    async def accumulate(self, ctx: Context, ev: GuessEvent) -> StopEvent | GuessEvent:
        """Check the guess; stop when right or out of attempts, else narrow and guess again."""
        target = await ctx.store.get("target")
        attempts = await ctx.store.get("attempts", default=0)
        low = await ctx.store.get("low")
        high = await ctx.store.get("high")

        attempts += 1
        await ctx.store.set("attempts", attempts)

        if ev.guess == target:
            return StopEvent(result=f"猜对了!用了 {attempts} 次")
        elif ev.guess < target:
            feedback = "太小了"
            low = max(low, ev.guess + 1)  # the target is in [guess + 1, high]
        else:
            feedback = "太大了"
            high = min(high, ev.guess - 1)  # the target is in [low, guess - 1]

        if attempts >= MAX_ATTEMPTS:
            return StopEvent(result=f"超时失败,目标数字是 {target}")

        next_guess = (low + high) // 2  # binary search
        print(f"第 {attempts} 次猜 {ev.guess},{feedback},区间 [{low}, {high}],下次猜 {next_guess}")
        await ctx.store.set("low", low)
        await ctx.store.set("high", high)
        guess = GuessEvent(guess=next_guess, feedback=feedback)
        ctx.write_event_to_stream(guess)
        return guess


__all__ = ["MAX_ATTEMPTS", "GuessEvent", "GuessNumberWorkflow"]
