"""The budget methods of :class:`~batonflow.core.checkpoints.WorkflowCheckpointer` (bound in its
class body): the budget a new run gets, keeping it, raising it, reading a run's usage. The
budget itself, the usage and the guard of a run's LLM calls are in :mod:`._budget`.
"""

from __future__ import annotations

from typing import Any

from ._budget import Budget, BudgetState, RunBudget, Usage, need_seam, parse_budget


def budget_of(self: Any, budget: Budget | str | int | None) -> Budget | None:
    """The budget a new run gets: ``budget``, else the checkpointer's (checked, and the LLM
    seam installed when there is one).

    Raises:
        ValueError: A budget that is not one, or no seam (see :func:`need_seam`).
    """
    limit = self.budget if budget is None else parse_budget(budget)
    if limit is not None:
        if not hasattr(self.store, "set_budget"):
            raise ValueError(
                f"The run store {type(self.store).__name__} keeps no budgets; use "
                "InMemoryCheckpointStore, SqliteCheckpointStore or PostgresCheckpointStore."
            )
        need_seam()
    return limit


def set_run_budget(self: Any, run_id: str, budget: Budget | None) -> None:
    """Keep a new run's budget in the store (before its first step runs)."""
    if budget is not None:
        self.store.set_budget(run_id, budget)


def raise_budget(self: Any, run_id: str, tokens: int = 0, cost: float = 0.0) -> BudgetState:
    """Add ``tokens`` (and ``cost``, US dollars) to run ``run_id``'s budget.

    A run waiting for its budget goes on at once when it runs in this process (within
    ``POLL`` seconds when another process runs it); one that stopped meanwhile takes the new
    budget when it is resumed.

    Returns:
        The run's budget as it is now.

    Raises:
        ValueError: Negative amounts, or nothing to add.
        CheckpointError: The store has no such run.
        RunConflictError: The run has ended, or has no budget.
    """
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        raise ValueError(
            f"A budget raise of tokens={tokens!r} is not a whole number of 0 or more; pass "
            "e.g. tokens=5000."
        )
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not cost >= 0:
        raise ValueError(
            f"A budget raise of cost={cost!r} is not an amount of 0 or more; pass e.g. cost=0.5."
        )
    if tokens == 0 and cost == 0:
        raise ValueError("A budget raise adds nothing; pass tokens=N or cost=X (US dollars).")
    state: BudgetState = self.store.raise_budget(run_id, tokens, cost)
    handler = self._live.get(run_id)
    guard = None if handler is None else handler.ctx._budget
    if isinstance(guard, RunBudget):
        handler._run.loop.call_soon_threadsafe(guard.wake)
    return state


def run_usage(self: Any, run_id: str) -> dict[str, Usage]:
    """What run ``run_id``'s LLM calls used, per step (empty without a budget seam)."""
    usage = getattr(self.store, "usage", None)
    return {} if usage is None else dict(usage(run_id))


__all__ = ["budget_of", "raise_budget", "run_usage", "set_run_budget"]
