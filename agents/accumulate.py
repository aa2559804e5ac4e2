"""AccumulateWorkflow: steps sharing data through ``ctx.store`` (a running total and count).

::

    AccumulateStart(numbers) ──init──▶ NumberEvent ──accumulate──▶ StopEvent("Sum: T, count: N")
"""

from __future__ import annotations

import json
from typing import Any

from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
from pydantic import Field, field_validator

from .errors import AgentInputError


class NumberEvent(Event):
    """The numbers to add up.

    Attributes:
        numbers: The numbers.
    """

    numbers: list[int | float]


class NumberAdded(Event):
    """Progress, written to the stream after each number: the running total and count.

    Attributes:
        total: The sum so far.
        count: How many numbers were added so far.
    """

    total: int | float
    count: int


def _numbers(value: Any) -> list[int | float]:
    given = value
    if isinstance(value, str):  # e.g. from a command line: "[1, 2, 3]" or "1,2,3"
        text = value.strip()
        try:
            value = json.loads(text if text.startswith("[") else f"[{text}]")
        except json.JSONDecodeError:
            value = None
    if isinstance(value, list | tuple) and all(
        isinstance(n, int | float) and not isinstance(n, bool) for n in value
    ):
        return list(value)
    raise AgentInputError(
        f"AccumulateWorkflow.run(numbers=...) needs a list of numbers, got {given!r:.60}; "
        "e.g. run(numbers=[1, 2, 3])."
    )


class AccumulateStart(StartEvent):
    """The start of an :class:`AccumulateWorkflow` run.

    Attributes:
        numbers: The numbers to add up: a list, or text such as ``"[1, 2, 3]"`` or ``"1,2,3"``.
    """

    numbers: list[int | float] = Field(description="the numbers to add up, e.g. [1, 2, 3]")

    @field_validator("numbers", mode="before")
    @classmethod
    def _parse_numbers(cls, value: Any) -> list[int | float]:
        return _numbers(value)


class AccumulateWorkflow(Workflow):
    """Add up ``numbers`` and count them, keeping the running values in the state store.

    Start argument (:class:`AccumulateStart`): ``numbers`` (a list of numbers, or a string such
    as ``"[1, 2, 3]"``); anything else is refused by ``run()``. The result is
    ``"Sum: T, count: N"``. State keys: ``total``, ``count``.

    Progress: each addition is written to the event stream as a :class:`NumberAdded` and (as
    in the tutorial) printed as ``Running total: …``. ``batonflow serve`` turns the printing off
    (``print_progress=False``) so concurrent runs do not fill the server log.

    Args:
        print_progress: Print a line per number (default True).
        **workflow_kwargs: Passed to :class:`~batonflow.core.Workflow` (``timeout=`` ...).
    """

    def __init__(self, *, print_progress: bool = True, **workflow_kwargs: Any) -> None:
        super().__init__(**workflow_kwargs)
        self.print_progress = print_progress

    @step
    async def init(self, ctx: Context, ev: AccumulateStart) -> NumberEvent:
        """Initialise the state and pass the input on."""
        await ctx.store.set("total", 0)
        await ctx.store.set("count", 0)
        return NumberEvent(numbers=ev.numbers)

    @step
    async def accumulate(self, ctx: Context, ev: NumberEvent) -> StopEvent:
        """Add each number to the running total; stop when all are in."""
        total = await ctx.store.get("total")
        count = await ctx.store.get("count")
        for n in ev.numbers:
            total += n
            count += 1
            ctx.write_event_to_stream(NumberAdded(total=total, count=count))
            if self.print_progress:
                print(f"Running total: {total} after {count} number(s)")
        await ctx.store.set("total", total)
        await ctx.store.set("count", count)
        return StopEvent(result=f"Sum: {total}, count: {count}")


__all__ = ["AccumulateStart", "AccumulateWorkflow", "NumberAdded", "NumberEvent"]
