"""A durable run's token and cost budget, its usage, and the guard an LLM call passes first.

A :class:`Budget` is given when a run starts (``WorkflowCheckpointer(budget=...)`` for every
run of a workflow, ``cptr.start(budget=...)`` for one). The run store keeps it, and the usage
of every LLM call the run made, per step (``run_budgets`` and ``run_usage``), so both survive a
restart and are seen by every replica.

A durable run with a budget has a :class:`RunBudget` on its context. The LLM seam
(:mod:`batonflow.budgets`, which wraps the llama-index LLM classes; core never imports
llama-index) asks it before each call: when the tokens used, plus those of the calls in flight,
plus the call's estimate would pass the budget, the call is not made. With ``on_exceed="wait"``
the run becomes ``waiting`` (its budget ``blocked``) until someone raises the budget
(``cptr.raise_budget``, ``batonflow runs budget``, ``POST /runs/{id}/budget``) or cancels it;
with ``on_exceed="fail"`` the call raises :class:`~batonflow.core.errors.BudgetExceededError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..engine._lanes import current_execution
from ..errors import BudgetExceededError, CheckpointError, RunConflictError
from ._store import OffLoopWrites

#: How the run goes on when a call would pass its budget.
ON_EXCEED = ("wait", "fail")
#: Seconds between two looks at the store while a run waits for its budget to be raised (a
#: raise made in this process wakes it at once; one made by another replica is seen then).
POLL = 0.5

_AMOUNT = re.compile(
    r"^\s*(?:(?P<dollar>\$)\s*)?(?P<number>[0-9][0-9_]*(?:\.[0-9]+)?)\s*(?P<unit>[A-Za-z$]*)\s*$"
)
_TOKEN_UNITS = {"", "t", "tok", "token", "tokens"}
_COST_UNITS = {"usd", "$", "dollar", "dollars"}


@dataclass(frozen=True, slots=True)
class Budget:
    """The most a run may spend on LLM calls: tokens, cost in US dollars, or both.

    Args:
        tokens: Total tokens (prompt and completion) of every LLM call of the run.
        cost: US dollars, counted with the price table of :mod:`batonflow.budgets` (a call to
            a model without a known price is refused under a cost budget).
        on_exceed: ``"wait"`` (the run waits, ``waiting`` with reason ``budget``, for a raise
            or a cancel) or ``"fail"`` (the call raises ``BudgetExceededError``).

    Raises:
        ValueError: A negative amount, neither amount, or an unknown ``on_exceed``.
    """

    tokens: int | None = None
    cost: float | None = None
    on_exceed: str = "wait"

    def __post_init__(self) -> None:
        if self.tokens is None and self.cost is None:
            raise ValueError(
                "A budget needs tokens or cost; pass Budget(tokens=5000) or Budget(cost=0.50)."
            )
        if self.tokens is not None and (
            isinstance(self.tokens, bool) or not isinstance(self.tokens, int) or self.tokens < 0
        ):
            raise ValueError(
                f"Budget tokens={self.tokens!r} is not a whole number of tokens of 0 or more; "
                "pass e.g. tokens=5000."
            )
        if self.cost is not None and (
            isinstance(self.cost, bool)
            or not isinstance(self.cost, int | float)
            or not math.isfinite(self.cost)
            or self.cost < 0
        ):
            raise ValueError(
                f"Budget cost={self.cost!r} is not an amount of US dollars of 0 or more; "
                "pass e.g. cost=0.50."
            )
        if self.on_exceed not in ON_EXCEED:
            raise ValueError(
                f"Budget on_exceed={self.on_exceed!r} is not one of {', '.join(ON_EXCEED)}; "
                "pass 'wait' (wait for a raise) or 'fail'."
            )

    def raised(self, tokens: int = 0, cost: float = 0.0) -> Budget:
        """This budget with ``tokens`` and ``cost`` added (to the amounts it limits)."""
        return replace(
            self,
            tokens=None if self.tokens is None else self.tokens + tokens,
            cost=None if self.cost is None else self.cost + cost,
        )

    def to_json(self) -> str:
        """The budget as the store keeps it."""
        return json.dumps({"tokens": self.tokens, "cost": self.cost, "on_exceed": self.on_exceed})

    @classmethod
    def from_json(cls, text: str) -> Budget:
        """A budget as :meth:`to_json` wrote it."""
        data = json.loads(text)
        return cls(data.get("tokens"), data.get("cost"), data.get("on_exceed", "wait"))


def parse_amount(text: str, what: str = "budget") -> tuple[int, float]:
    """``(tokens, dollars)`` of one amount: ``"5000"``, ``"5000 tokens"``, ``"$0.50"``,
    ``"0.50 usd"``; amounts joined by ``,`` or ``+`` add up.

    Raises:
        ValueError: An amount that is not one of those forms (its message shows them).
    """
    tokens, cost = 0, 0.0
    parts = [p for p in re.split(r"[,+]", str(text))]
    for part in parts:
        match = _AMOUNT.match(part)
        unit = (match.group("unit") or "").lower() if match else ""
        if match is None or not part.strip() or (unit not in _TOKEN_UNITS | _COST_UNITS):
            raise ValueError(
                f"The {what} {text!r} is not an amount of tokens or US dollars; write e.g. "
                "'5000' or '5000 tokens' for tokens, '$0.50' or '0.50 usd' for dollars."
            )
        number = match.group("number").replace("_", "")
        if match.group("dollar") or unit in _COST_UNITS:
            cost += float(number)
        elif "." in number:
            raise ValueError(
                f"The {what} {text!r} has a fraction of a token; write a whole number of "
                "tokens ('5000'), or dollars with a unit ('0.50 usd')."
            )
        else:
            tokens += int(number)
    return tokens, cost


def parse_budget(value: Budget | str | int | Mapping[str, Any], on_exceed: str = "wait") -> Budget:
    """A :class:`Budget` from what a caller gave: a Budget, a number of tokens, a text
    (``"5000"``, ``"5000 tokens"``, ``"$0.50"``, ``"5000 tokens, $0.50"``) or a mapping of
    ``tokens``, ``cost`` and ``on_exceed``.

    Raises:
        ValueError: Something else, a negative amount, an unknown unit or ``on_exceed``.
    """
    if isinstance(value, Budget):
        return value
    if isinstance(value, bool):
        raise ValueError(f"A budget of {value!r} is not an amount; pass e.g. 5000 (tokens).")
    if isinstance(value, int):
        return Budget(tokens=value, on_exceed=on_exceed)
    if isinstance(value, Mapping):
        unknown = set(value) - {"tokens", "cost", "on_exceed"}
        if unknown:
            raise ValueError(
                f"A budget has no field {sorted(unknown)[0]!r}; give tokens, cost and on_exceed."
            )
        return Budget(value.get("tokens"), value.get("cost"), value.get("on_exceed", on_exceed))
    if isinstance(value, str):
        if value.strip().startswith("-"):
            raise ValueError(f"The budget {value!r} is negative; give an amount of 0 or more.")
        tokens, cost = parse_amount(value)
        has_tokens = any(not _is_cost(p) for p in re.split(r"[,+]", value))
        has_cost = any(_is_cost(p) for p in re.split(r"[,+]", value))
        return Budget(
            tokens if has_tokens else None, cost if has_cost else None, on_exceed=on_exceed
        )
    raise ValueError(
        f"A budget of type {type(value).__name__} is not understood; pass a Budget, a number "
        "of tokens, or a text such as '5000 tokens' or '$0.50'."
    )


def _is_cost(part: str) -> bool:
    match = _AMOUNT.match(part)
    return bool(
        match and (match.group("dollar") or (match.group("unit") or "").lower() in _COST_UNITS)
    )


@dataclass(frozen=True, slots=True)
class Usage:
    """What LLM calls used: tokens as the provider reported them, and their cost.

    ``cost`` is ``None`` when a call's model has no known price (the others' costs are not
    added to it: an unknown is not shown as a sum).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = 0.0
    calls: int = 0

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost is None or other.cost is None else self.cost + other.cost
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
            cost,
            self.calls + other.calls,
        )

    def public(self) -> dict[str, Any]:
        """The usage as JSON values."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "cost": None if self.cost is None else round(self.cost, 8),
            "calls": self.calls,
        }


def total(by_step: Mapping[str, Usage]) -> Usage:
    """The sum of a run's usage per step."""
    found = Usage()
    for usage in by_step.values():
        found = found + usage
    return found


@dataclass(frozen=True, slots=True)
class BudgetState:
    """A run's budget as stored, and why it is blocked (``None``: it is not).

    ``blocked`` is what the refused call needed: ``{"step", "used", "estimate", "tokens"}``
    (tokens or dollars, as JSON values).
    """

    budget: Budget
    blocked: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Estimate:
    """What one LLM call may use at most, as the seam reckons before making it."""

    tokens: int
    cost: float | None


#: The seam that makes LLM calls ask the run's budget: :mod:`batonflow.budgets` puts its
#: ``install`` here when it is imported (core never imports llama-index).
SEAM: list[Callable[[], None]] = []


def need_seam() -> None:
    """Make sure LLM calls are counted; call before a run with a budget starts.

    Raises:
        ValueError: No seam is there: ``batonflow.budgets`` was not imported.
    """
    if not SEAM:
        raise ValueError(
            "A budget counts llama-index LLM calls through batonflow.budgets, which is not "
            "loaded; add `import batonflow.budgets` (or take Budget from there) before starting "
            "a run with a budget (it needs llama-index: pip install 'batonflow[agents]')."
        )
    for install in SEAM:
        install()


def current() -> tuple[RunBudget, str] | None:
    """The budget of the run whose step runs in this task (or thread), and the step's name."""
    ex = current_execution()
    if ex is None:
        return None
    guard = getattr(ex.run.ctx, "_budget", None)
    if not isinstance(guard, RunBudget):
        return None
    return guard, ex.lane.spec.name


class RunBudget:
    """The budget guard of one durable run in this process.

    Args:
        store: The run store (``budget``, ``budget_block``, ``budget_unblock``, ``usage``,
            ``usage_add``).
        run_id: The run.
    """

    def __init__(self, store: Any, run_id: str, *, limited: bool = True, fresh: bool = False):
        self.store = store
        self.run_id = run_id
        #: Whether the run has a budget to check (else its calls are only counted).
        self.limited = limited
        #: Usage recorded before this process took the run (a resume), plus what it added.
        self._used = Usage() if fresh else total(store.usage(run_id))
        #: What the calls in flight may use (their estimates), until they report usage.
        self._reserved_tokens = 0
        self._reserved_cost = 0.0
        self._raised = asyncio.Event()
        #: A store over the network (PostgreSQL): an async call's reads and writes go to a
        #: thread, as its steps' writes do, so one run's LLM call never blocks the loop
        #: that runs the others. A local file (SQLite) is written where it is cheaper.
        self._remote = isinstance(store, OffLoopWrites)

    def wake(self) -> None:
        """Look at the store again now: the budget was raised in this process."""
        self._raised.set()

    @property
    def used(self) -> Usage:
        """What the run's LLM calls used so far (those of earlier processes included)."""
        return self._used

    def _fits(self, budget: Budget, need: Estimate) -> dict[str, Any] | None:
        """``None`` when ``need`` fits in ``budget``, else what it would pass."""
        used = self._used
        if budget.tokens is not None:
            after = used.total_tokens + self._reserved_tokens + need.tokens
            if after > budget.tokens:
                return {
                    "tokens": budget.tokens,
                    "used": used.total_tokens,
                    "in_flight": self._reserved_tokens,
                    "estimate": need.tokens,
                }
        if budget.cost is not None:
            spent = used.cost
            if need.cost is None or spent is None:
                raise BudgetExceededError(
                    f"Run {self.run_id} has a cost budget (${budget.cost}), but the price of "
                    "this LLM call's model is not known, so its cost cannot be checked; add the "
                    "model's price with batonflow.budgets.set_price(model, prompt=..., "
                    "completion=...) or give the run a token budget instead."
                )
            after_cost = spent + self._reserved_cost + need.cost
            if after_cost > budget.cost:
                return {
                    "cost": budget.cost,
                    "used_cost": round(spent, 8),
                    "in_flight_cost": round(self._reserved_cost, 8),
                    "estimate_cost": round(need.cost, 8),
                }
        return None

    def _state(self) -> BudgetState:
        state: BudgetState | None = self.store.budget(self.run_id)
        if state is None:
            raise BudgetExceededError(f"Run {self.run_id} has no budget in its store any more.")
        return state

    def _refused(self, step: str, over: dict[str, Any]) -> BudgetExceededError:
        return BudgetExceededError(
            f"Step {step!r} of run {self.run_id}: the LLM call would pass the run's budget "
            f"({_describe(over)}), so it was not made. Raise the budget (batonflow runs budget "
            f"{self.run_id} --raise N) and resume the run, or start it with a larger one."
        )

    async def before(self, step: str, need: Estimate) -> None:
        """Wait until the call fits in the budget (``on_exceed="wait"``), then reserve it.

        Raises:
            BudgetExceededError: It does not fit and the budget says fail.
        """
        if not self.limited:
            self._reserve(need)
            return
        blocked = False
        while True:
            state = await self._off_loop(self._state)
            over = self._fits(state.budget, need)
            if over is None:
                break
            if state.budget.on_exceed == "fail":
                raise self._refused(step, over)
            if not blocked:
                await self._off_loop(self.store.budget_block, self.run_id, {"step": step, **over})
                blocked = True
            self._raised.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._raised.wait(), POLL)
        if blocked or state.blocked is not None:
            await self._off_loop(self.store.budget_unblock, self.run_id)
        self._reserve(need)

    async def _off_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``: in a thread for a store over the network, else here."""
        if self._remote:
            return await asyncio.to_thread(fn, *args)
        return fn(*args)

    def before_sync(self, step: str, need: Estimate) -> None:
        """:meth:`before` for a sync LLM call: it waits in its thread, or, when called on a
        running event loop (it would stop every run), raises instead.

        Raises:
            BudgetExceededError: It does not fit, and the budget says fail or it cannot wait.
        """
        if not self.limited:
            self._reserve(need)
            return
        blocked = False
        while True:
            state = self._state()
            over = self._fits(state.budget, need)
            if over is None:
                break
            if state.budget.on_exceed == "fail" or _on_loop():
                raise self._refused(step, over)
            if not blocked:
                self.store.budget_block(self.run_id, {"step": step, **over})
                blocked = True
            time.sleep(POLL)
        if blocked or state.blocked is not None:
            self.store.budget_unblock(self.run_id)
        self._reserve(need)

    def _reserve(self, need: Estimate) -> None:
        self._reserved_tokens += need.tokens
        self._reserved_cost += need.cost or 0.0

    def after(self, step: str, need: Estimate, used: Usage) -> None:
        """Record a call's usage (in the store, for its step) and free its reservation."""
        self._release(need, used)
        self.store.usage_add(self.run_id, step, used)

    async def aafter(self, step: str, need: Estimate, used: Usage) -> None:
        """:meth:`after` for an async call: a store over the network is written in a thread."""
        self._release(need, used)
        await self._off_loop(self.store.usage_add, self.run_id, step, used)

    def _release(self, need: Estimate, used: Usage) -> None:
        self._reserved_tokens -= need.tokens
        self._reserved_cost -= need.cost or 0.0
        self._used = self._used + used


def no_run_error(run_id: str) -> CheckpointError:
    """The error of a budget operation on a run the store does not hold."""
    return CheckpointError(
        f"No run {run_id!r} in this store; list the runs with `batonflow runs list` and pass "
        "one of their ids."
    )


def check_raise(run_id: str, record: Any, state: BudgetState | None) -> BudgetState:
    """``state`` when run ``run_id`` (its ``record``) may have its budget raised.

    Raises:
        CheckpointError: No such run.
        RunConflictError: The run has ended, or it has no budget.
    """
    if record is None:
        raise no_run_error(run_id)
    if record.status in ("completed", "failed", "cancelled"):
        raise RunConflictError(
            f"Run {run_id!r} has ended ({record.status}); its budget cannot be raised. Start "
            "a new run (or resume this one, when it may be resumed) with a larger budget."
        )
    if state is None:
        raise RunConflictError(
            f"Run {run_id!r} has no budget, so there is nothing to raise; give a run a budget "
            "when it starts (budget=..., --budget)."
        )
    return state


def guard_for(store: Any, run_id: str, budget: Budget | bool | None) -> RunBudget | None:
    """The guard of a run being attached: ``budget`` is its known budget at start (``None``:
    none), or ``True`` to read it from the store (a resume).

    A run without a budget gets a guard too, one that only counts its calls, when the LLM
    seam is loaded (:mod:`batonflow.budgets` was imported: the prebuilt agents, the server
    and the CLI import it once llama-index is loaded); without the seam no call is counted.
    """
    if not hasattr(store, "usage_add"):
        return None
    if budget is True:
        state = store.budget(run_id)
        if state is None and not SEAM:
            return None
        for install in SEAM:
            install()
        return RunBudget(store, run_id, limited=state is not None)
    if budget is None or budget is False:
        if not SEAM:
            return None
        for install in SEAM:
            install()
        return RunBudget(store, run_id, limited=False, fresh=True)
    return RunBudget(store, run_id, fresh=True)


def _on_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _describe(over: Mapping[str, Any]) -> str:
    if "tokens" in over:
        return (
            f"{over['used']} tokens used, {over['in_flight']} in flight, this call estimated "
            f"at {over['estimate']}, budget {over['tokens']} tokens"
        )
    return (
        f"${over['used_cost']} spent, ${over['in_flight_cost']} in flight, this call estimated "
        f"at ${over['estimate_cost']}, budget ${over['cost']}"
    )


__all__ = [
    "ON_EXCEED",
    "SEAM",
    "Budget",
    "BudgetState",
    "Estimate",
    "RunBudget",
    "Usage",
    "check_raise",
    "current",
    "guard_for",
    "need_seam",
    "no_run_error",
    "parse_amount",
    "parse_budget",
    "total",
]
