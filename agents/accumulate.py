"""AccumulateWorkflow: steps sharing data through ``ctx.store`` (a running total and count).

::

    StartEvent(numbers) ──init──▶ NumberEvent ──accumulate──▶ StopEvent("总和: T,数量: N")
"""

from __future__ import annotations

import json
from typing import Any

from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step

from .errors import AgentInputError


class NumberEvent(Event):
    """The numbers to add up.

    Attributes:
        numbers: The numbers.
    """

    numbers: list[int | float]


def _numbers(value: Any) -> list[int | float]:
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
        f"AccumulateWorkflow.run(numbers=...) needs a list of numbers, got {value!r:.60}; "
        "e.g. run(numbers=[1, 2, 3])."
    )


class AccumulateWorkflow(Workflow):
    """Add up ``numbers`` and count them, keeping the running values in the state store.

    Start argument: ``numbers`` (a list of numbers, or a string such as ``"[1, 2, 3]"``). The
    result is ``"总和: T,数量: N"`` (sum T, count N). State keys: ``total``, ``count``.
    """

    @step
    async def init(self, ctx: Context, ev: StartEvent) -> NumberEvent:
        """Initialise the state and pass the input on."""
        numbers = _numbers(ev.get("numbers"))
        await ctx.store.set("total", 0)
        await ctx.store.set("count", 0)
        return NumberEvent(numbers=numbers)

    @step
    async def accumulate(self, ctx: Context, ev: NumberEvent) -> StopEvent:
        """Add each number to the running total; stop when all are in."""
        total = await ctx.store.get("total")
        count = await ctx.store.get("count")
        for n in ev.numbers:
            total += n
            count += 1
            print(f"当前累加: {total},已处理 {count} 个数")
        await ctx.store.set("total", total)
        await ctx.store.set("count", count)
        return StopEvent(result=f"总和: {total},数量: {count}")


__all__ = ["AccumulateWorkflow", "NumberEvent"]
