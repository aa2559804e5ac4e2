"""Budgets over HTTP: ``POST /runs/{id}/budget`` raises a run's budget.

The body says what to add: ``{"tokens": N}``, ``{"cost": X}`` (US dollars), or both. A run
waiting for its budget goes on (at once when it runs in this server, within half a second on
another replica); one that runs elsewhere or not at all takes the new budget when it next
asks. See :mod:`batonflow.apps._budget_view` for the budget fields of a run's record.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, ConfigDict, Field

from ._budget_view import budget_json
from .api_models import responses


class BudgetRaise(BaseModel):
    """What to add to a run's budget (``POST /runs/{id}/budget``)."""

    model_config = ConfigDict(extra="forbid")

    tokens: int = Field(0, ge=0, description="Tokens to add to its token budget.")
    cost: float = Field(0.0, ge=0, description="US dollars to add to its cost budget.")


def install_budgets(app: FastAPI, manager: Any) -> None:
    """Add ``POST /runs/{id}/budget`` to ``app`` for ``manager``'s runs."""

    @app.post(
        "/runs/{run_id}/budget",
        summary="Raise a run's budget",
        responses=responses(200, None, "The run's budget as it is now.", 404, 409, 422),
    )
    async def raise_budget(run_id: str, body: BudgetRaise) -> dict[str, Any]:
        from batonflow.core.errors import CheckpointError, RunConflictError

        row = manager.store.get(run_id)
        if row is None:
            raise HTTPException(
                404, f"Run {run_id!r} does not exist; GET /runs lists the known runs."
            )
        checkpointer = manager.checkpointers.get(row.workflow)
        try:
            if checkpointer is not None:
                state = checkpointer.raise_budget(run_id, tokens=body.tokens, cost=body.cost)
            else:
                state = manager.records.raise_budget(run_id, body.tokens, body.cost)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        except RunConflictError as exc:
            raise HTTPException(409, str(exc)) from None
        except CheckpointError as exc:
            raise HTTPException(404, str(exc)) from None
        return {"run_id": run_id, "budget": budget_json(state.budget)}


__all__ = ["BudgetRaise", "install_budgets"]
