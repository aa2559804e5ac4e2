"""GuessNumberWorkflow: a loop with shared state (binary search for a number in 1..100).

A step that returns its own input type loops; the search interval and the attempt count live in
``ctx.store`` (events move the work, state keeps the record)::

    GuessNumberStart ──init──▶ GuessEvent ──accumulate──▶ GuessEvent (again) ... ──▶ StopEvent

Each checked guess is written to the event stream as a :class:`GuessChecked` carrying its own
verdict, the winning one included. Run it with ``await GuessNumberWorkflow().run(target=42)`` (``target`` defaults to a random
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


#: The verdicts on a guess.
TOO_SMALL, TOO_BIG, CORRECT = "too small", "too big", "correct"


class GuessEvent(Event):
    """One guess to check, and the feedback on the previous one that led to it.

    Attributes:
        guess: The number to try.
        feedback: What the previous guess taught (``"start"`` for the first guess, then
            ``"too small"`` or ``"too big"``).
    """

    guess: int
    feedback: str = ""


class GuessChecked(Event):
    """Progress, written to the stream after each guess is checked: the guess and its verdict.

    Attributes:
        attempt: The attempt's number, from 1.
        guess: The number tried.
        verdict: ``"too small"``, ``"too big"`` or ``"correct"`` (for this guess).
        low: The lowest number still possible.
        high: The highest number still possible.
    """

    attempt: int
    guess: int
    verdict: str
    low: int
    high: int


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


def _attempts(n: int) -> str:
    return "1 attempt" if n == 1 else f"{n} attempts"


class GuessNumberWorkflow(Workflow):
    """Guess a number between 1 and 100 by binary search, in at most 10 attempts.

    Start arguments (:class:`GuessNumberStart`): ``target`` (the number to find, 1..100;
    random when omitted) and ``first_guess`` (default: the middle of the interval). A target
    outside 1..100 or an unknown field is refused by ``run()``. The result is
    ``"Found T in N attempts"`` (``"1 attempt"``) or ``"Gave up after N attempts; the number was T"``. State
    keys: ``target``, ``low``, ``high``, ``attempts``.

    Progress: each checked guess is written to the event stream as a :class:`GuessChecked`,
    and each wrong one (as in the tutorial) printed as a line ``Attempt N: …``.
    ``batonflow serve`` turns the printing off (``print_progress=False``) so concurrent runs do
    not fill the server log.

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
        return GuessEvent(guess=first_guess, feedback="start")

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
            verdict = CORRECT
            low = high = target
        elif ev.guess < target:
            verdict = TOO_SMALL
            low = max(low, ev.guess + 1)  # the target is in [guess + 1, high]
        else:
            verdict = TOO_BIG
            high = min(high, ev.guess - 1)  # the target is in [low, guess - 1]
        # callers (CLI, server) follow the guesses, each with its own verdict
        ctx.write_event_to_stream(
            GuessChecked(attempt=attempts, guess=ev.guess, verdict=verdict, low=low, high=high)
        )
        if verdict == CORRECT:
            return StopEvent(result=f"Found {target} in {_attempts(attempts)}")
        if attempts >= MAX_ATTEMPTS:
            return StopEvent(result=f"Gave up after {_attempts(attempts)}; the number was {target}")

        next_guess = (low + high) // 2  # binary search
        if self.print_progress:
            print(
                f"Attempt {attempts}: {ev.guess} is {verdict}; the number is in "
                f"[{low}, {high}]; next guess {next_guess}"
            )
        await ctx.store.set("low", low)
        await ctx.store.set("high", high)
        return GuessEvent(guess=next_guess, feedback=verdict)


__all__ = [
    "CORRECT",
    "MAX_ATTEMPTS",
    "TOO_BIG",
    "TOO_SMALL",
    "GuessChecked",
    "GuessEvent",
    "GuessNumberStart",
    "GuessNumberWorkflow",
]
