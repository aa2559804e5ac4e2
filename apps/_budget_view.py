"""Budgets in the records the server and ``batonflow runs`` show (without FastAPI).

A run's record carries
its ``budget`` (``tokens``, ``cost``, ``on_exceed``), its ``usage`` (``prompt_tokens``,
``completion_tokens``, ``total_tokens``, ``cost``, ``calls``) and, for one run, ``usage_by_step``;
a run waiting for a raise says ``waiting_reason: "budget"`` and what the refused call needed
(``budget_blocked``). The LLM seam (:mod:`batonflow.budgets`) is loaded lazily: importing
llama-index takes seconds, and a server whose flows use none needs none of it.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Collection
from typing import Any


def load_seam(needed: bool = False) -> bool:
    """Import :mod:`batonflow.budgets` when llama-index is loaded already (or ``needed``).

    Raises:
        ValueError: ``needed`` and llama-index is not installed (the message says what to
            install).
    """
    if "batonflow.budgets" in sys.modules:
        return True
    if not needed and "llama_index.core" not in sys.modules:
        return False
    if importlib.util.find_spec("llama_index.core") is None:
        if needed:
            raise ValueError(
                "A budget counts llama-index LLM calls, and llama-index is not installed; "
                "pip install 'batonflow[agents]', or start the run without a budget."
            )
        return False
    importlib.import_module("batonflow.budgets")
    return True


def budget_of(text: str | None) -> Any:
    """The budget a start asks for (``None``: none), the seam loaded for it.

    Raises:
        ValueError: A budget that is not one, or no llama-index to count with.
    """
    if text is None:
        return None
    from batonflow.core.durable._budget import parse_budget

    budget = parse_budget(text)
    load_seam(needed=True)
    return budget


def default_budget(budgets: dict[str, Any] | None, name: str) -> Any:
    """The budget of workflow ``name``'s runs: its own in ``budgets``, else the ``""`` one."""
    if not budgets:
        return None
    return budgets.get(name, budgets.get(""))


def budget_options(items: list[str], served: Collection[str]) -> dict[str, Any]:
    """``--budget [NAME=]AMOUNT`` options as budgets by workflow name (``""``: every one).

    Raises:
        ValueError: A bad amount, or a NAME that is not served (the message lists them).
    """
    from batonflow.core.durable._budget import parse_budget

    budgets: dict[str, Any] = {}
    for item in items:
        name, _, amount = item.rpartition("=")
        if name and name not in served:
            raise ValueError(
                f"--budget {item}: no workflow {name!r} is served here; use one of "
                f"{', '.join(sorted(served))}, or give AMOUNT alone for every workflow."
            )
        budgets[name] = parse_budget(amount)
    if budgets:
        load_seam(needed=True)
    return budgets


def budget_fields(records: Any, run_id: str, status: str) -> dict[str, Any]:
    """The budget fields of one run's record: ``budget``, ``usage``, ``usage_by_step``, and
    ``waiting_reason``/``budget_blocked`` while it waits for a raise."""
    both = getattr(records, "budget_and_usage", None)  # one query on a SQL store
    state, by_step = both(run_id) if both is not None else (None, {})
    fields: dict[str, Any] = {
        "budget": None if state is None else _budget_json(state.budget),
        "usage": _usage_json(by_step.values()),
        "usage_by_step": {step: usage.public() for step, usage in by_step.items()},
    }
    if state is not None and state.blocked is not None and status == "waiting":
        fields.update(
            waiting_reason="budget", budget_blocked=state.blocked, waiting_for_input=False
        )
    elif status == "waiting":
        fields["waiting_reason"] = "input"
    return fields


def usage_of_runs(records: Any, run_ids: Collection[str]) -> dict[str, dict[str, Any]]:
    """``usage`` of each run (one query), for a list of runs."""
    totals = getattr(records, "usage_totals", None)
    if totals is None:
        return {}
    return {run_id: usage.public() for run_id, usage in totals(list(run_ids)).items()}


def _usage_json(steps: Any) -> dict[str, Any] | None:
    from batonflow.core.durable._budget import Usage

    found = None
    for usage in steps:
        found = usage if found is None else found + usage
    return None if found is None else Usage.public(found)


def _budget_json(budget: Any) -> dict[str, Any]:
    return {"tokens": budget.tokens, "cost": budget.cost, "on_exceed": budget.on_exceed}


def budget_json(budget: Any) -> dict[str, Any]:
    """A budget as JSON values."""
    return _budget_json(budget)


def _tokens(usage: dict[str, Any]) -> str:
    cost = usage.get("cost")
    dollars = "cost unknown" if cost is None else f"${cost:.6f}"
    return (
        f"{usage['total_tokens']} tokens (prompt {usage['prompt_tokens']}, completion "
        f"{usage['completion_tokens']}; {usage['calls']} LLM calls), {dollars}"
    )


def usage_lines(data: dict[str, Any]) -> list[str]:
    """What ``batonflow runs show`` prints of a run's budget and usage (``data``: its record)."""
    lines = []
    budget = data.get("budget")
    if budget:
        limits = [f"{budget['tokens']} tokens"] if budget.get("tokens") is not None else []
        if budget.get("cost") is not None:
            limits.append(f"${budget['cost']}")
        lines.append(f"budget: {' and '.join(limits)} (over it: {budget['on_exceed']})")
    usage = data.get("usage")
    if usage:
        lines.append(f"usage: {_tokens(usage)}")
        for step, used in (data.get("usage_by_step") or {}).items():
            lines.append(f"  {step}: {_tokens(used)}")
    blocked = data.get("budget_blocked")
    if data.get("waiting_reason") == "budget" and blocked:
        lines.append(
            f"waiting for a budget raise: step {blocked.get('step')!r}'s next LLM call would "
            f"pass it; raise it with: batonflow runs budget {data['run_id']} --raise N"
        )
    return lines


__all__ = [
    "budget_fields",
    "budget_json",
    "budget_of",
    "budget_options",
    "default_budget",
    "load_seam",
    "usage_lines",
    "usage_of_runs",
]
