"""GuessNumberWorkflow: a loop with shared state (binary search for a number in 1..100).

A step that returns its own input type loops; the search interval and the attempt count live in
``ctx.store`` (events move the work, state keeps the record)::

    GuessNumberStart ──init──▶ GuessEvent ──accumulate──▶ GuessEvent (again) ... ──▶ StopEvent

Run it with ``await GuessNumberWorkflow().run(target=42)`` (``target`` defaults to a random
number in 1..100, ``first_guess`` to the middle of the interval). It gives up after 10 attempts.
"""

from __future__ import annotations

import random
from typing import Any

from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
from pydantic import Field

#: The most guesses before the workflow gives up.
MAX_ATTEMPTS = 10
#: The interval the number is in.
LOW, HIGH = 1, 100


class GuessEvent(Event):
    """One guess, and the feedback on the previous one.

    Attributes:
        guess: The number to try.
        feedback: What the last guess taught ("太小了" too small, "太大了" too big).
    """

    guess: int
    feedback: str = ""


class GuessNumberStart(StartEvent):
    """The start of a :class:`GuessNumberWorkflow` run.

    Attributes:
        target: The number to find, 1..100 (random when omitted).
        first_guess: The first number to try, 1..100 (the middle of the interval when
            omitted).
    """

    target: int | None = Field(None, ge=LOW, le=HIGH, description="the number to find, 1..100")
    first_guess: int | None = Field(
        None, ge=LOW, le=HIGH, description="the first number to try, 1..100"
    )


class GuessNumberWorkflow(Workflow):
    """Guess a number between 1 and 100 by binary search, in at most 10 attempts.

    Start arguments (:class:`GuessNumberStart`): ``target`` (the number to find, 1..100;
    random when omitted) and ``first_guess`` (default: the middle of the interval). A target
    outside 1..100 or an unknown field is refused by ``run()``. The result is
    ``"猜对了!用了 N 次"`` (found in N attempts) or ``"超时失败,目标数字是 T"`` (gave up;
    the target was T). State keys: ``target``, ``low``, ``high``, ``attempts``.

    Progress: each guess is written to the event stream as a :class:`GuessEvent`, and (as in
    the tutorial) printed as a line ``第 N 次猜 …``. ``batonflow serve`` turns the printing off
    (``print_progress=False``) so concurrent runs do not fill the server log.

    Args:
        print_progress: Print a line per wrong guess (default True).
        **workflow_kwargs: Passed to :class:`~batonflow.core.Workflow` (``timeout=`` ...).
    """

    def __init__(self, *, print_progress: bool = True, **workflow_kwargs: Any) -> None:
        super().__init__(**workflow_kwargs)
        self.print_progress = print_progress

    @step
    async def init(self, ctx: Context, ev: GuessNumberStart) -> GuessEvent:
        """Store the target and the search interval; make the first guess."""
        target = ev.target or random.randint(LOW, HIGH)
        low, high = LOW, HIGH
        # The user's first guess, else the middle of the interval (as the tutorial writes it).
        if ev.first_guess is not None:  # noqa: SIM108
            first_guess = ev.first_guess
        else:
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
        if self.print_progress:
            print(
                f"第 {attempts} 次猜 {ev.guess},{feedback},区间 [{low}, {high}],下次猜 {next_guess}"
            )
        await ctx.store.set("low", low)
        await ctx.store.set("high", high)
        guess = GuessEvent(guess=next_guess, feedback=feedback)
        ctx.write_event_to_stream(guess)
        return guess


__all__ = ["MAX_ATTEMPTS", "GuessEvent", "GuessNumberStart", "GuessNumberWorkflow"]
