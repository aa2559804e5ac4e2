"""The SQL store's budgets and usage (``run_budgets``, ``run_usage``; see ``_budget.py``).

:class:`SqlBudgets` is a base of :class:`~batonflow.core.durable._sql_store.SqlRunStore`. The writes of a run in progress (blocking, unblocking, adding usage) are fenced
as the run's other writes are (a PostgreSQL replica that lost the run's lease is refused); a
raise is made by whoever asks (a server replica, the CLI) and checks the run has not ended in
the same transaction. Blocking makes the run ``waiting`` and unblocking ``running`` again, each
in the transaction that marks the budget.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from ._budget import Budget, BudgetState, Usage, check_raise, no_run_error

if TYPE_CHECKING:
    from ._sql_store import Conn

_UPSERT_BUDGET = (
    "INSERT INTO run_budgets (run_id, budget, blocked, updated_at) VALUES (?, ?, NULL, ?) "
    "ON CONFLICT (run_id) DO UPDATE SET budget = excluded.budget, updated_at = excluded.updated_at"
)
_SELECT_BUDGET = "SELECT budget, blocked FROM run_budgets WHERE run_id = ?"
_SET_BLOCKED = "UPDATE run_budgets SET blocked = ?, updated_at = ? WHERE run_id = ?"
_TO_WAITING = (
    "UPDATE checkpoint_runs SET status = 'waiting', updated_at = ? "
    "WHERE run_id = ? AND status = 'running'"
)
_TO_RUNNING = (
    "UPDATE checkpoint_runs SET status = 'running', updated_at = ? "
    "WHERE run_id = ? AND status = 'waiting' AND waiting_seq IS NULL"
)
_STATUS = "SELECT status FROM checkpoint_runs WHERE run_id = ?"
_ADD_USAGE = (
    "INSERT INTO run_usage (run_id, step, calls, prompt_tokens, completion_tokens, "
    "total_tokens, cost, first_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (run_id, step) DO UPDATE SET calls = run_usage.calls + excluded.calls, "
    "prompt_tokens = run_usage.prompt_tokens + excluded.prompt_tokens, "
    "completion_tokens = run_usage.completion_tokens + excluded.completion_tokens, "
    "total_tokens = run_usage.total_tokens + excluded.total_tokens, "
    "cost = run_usage.cost + excluded.cost"
)
_USAGE_COLUMNS = "step, calls, prompt_tokens, completion_tokens, total_tokens, cost"
_USAGE = f"SELECT {_USAGE_COLUMNS} FROM run_usage WHERE run_id = ? ORDER BY first_at, step"
# The run's row anchors the outer joins: a run without a budget or usage gives one row of NULLs.
_BUDGET_AND_USAGE = (
    "SELECT b.budget, b.blocked, u.step, u.calls, u.prompt_tokens, u.completion_tokens, "
    "u.total_tokens, u.cost FROM checkpoint_runs r "
    "LEFT JOIN run_budgets b ON b.run_id = r.run_id "
    "LEFT JOIN run_usage u ON u.run_id = r.run_id "
    "WHERE r.run_id = ? ORDER BY u.first_at, u.step"
)


def _sql(self: Any, text: str) -> str:
    return text.replace("?", self.sql.param)


def _state(row: tuple[Any, ...]) -> BudgetState:
    budget, blocked = row
    return BudgetState(
        Budget.from_json(str(budget)), None if blocked is None else json.loads(blocked)
    )


def _read_state(self: Any, conn: Conn, run_id: str) -> BudgetState | None:
    row = conn.execute(_sql(self, _SELECT_BUDGET), (run_id,)).fetchone()
    return None if row is None else _state(row)


class _Status:
    """The part of a run's record :func:`check_raise` reads."""

    __slots__ = ("status",)

    def __init__(self, status: str) -> None:
        self.status = status


def _usage(row: tuple[Any, ...]) -> Usage:
    _, calls, prompt, completion, total_tokens, cost = row
    return Usage(
        int(prompt),
        int(completion),
        int(total_tokens),
        None if cost is None else float(cost),
        int(calls),
    )


class SqlBudgets:
    """The budget and usage methods of :class:`~batonflow.core.durable._sql_store.SqlRunStore`."""

    def set_budget(self: Any, run_id: str, budget: Budget) -> None:
        """Give run ``run_id`` ``budget`` (replacing one it had).

        Raises:
            CheckpointError: The store has no such run, or refused the write.
        """

        def put(conn: Conn) -> None:
            if conn.execute(_sql(self, _STATUS), (run_id,)).fetchone() is None:
                raise no_run_error(run_id)
            conn.execute(_sql(self, _UPSERT_BUDGET), (run_id, budget.to_json(), time.time()))

        self._write("record a run's budget", put, idempotent=True)

    def budget(self: Any, run_id: str) -> BudgetState | None:
        """Run ``run_id``'s budget, or ``None``."""
        rows = self._query(_sql(self, _SELECT_BUDGET), (run_id,))
        return _state(rows[0]) if rows else None

    def budget_and_usage(self: Any, run_id: str) -> tuple[BudgetState | None, dict[str, Usage]]:
        """Run ``run_id``'s budget (or ``None``) and its usage per step, in one query.

        A run's record shows both; on a store over the network each read is a round trip.
        """
        rows = self._query(_sql(self, _BUDGET_AND_USAGE), (run_id,))
        state = _state(rows[0][:2]) if rows and rows[0][0] is not None else None
        usage = {str(row[2]): _usage(row[2:]) for row in rows if row[2] is not None}
        return state, usage

    def budget_block(self: Any, run_id: str, blocked: dict[str, Any]) -> None:
        """Mark the budget blocked by a call (``blocked``) and the run ``waiting``, atomically.

        Raises:
            LeaseLostError: (PostgreSQL replicas) another replica holds the run now.
        """
        text = json.dumps(blocked, separators=(",", ":"))

        def block(conn: Conn) -> None:
            self._fence(conn, run_id)
            stamp = time.time()
            conn.execute(_sql(self, _SET_BLOCKED), (text, stamp, run_id))
            conn.execute(_sql(self, _TO_WAITING), (stamp, run_id))

        self._write("mark a run waiting for its budget", block, idempotent=True)

    def budget_unblock(self: Any, run_id: str) -> None:
        """The blocked call goes on: the budget is not blocked, the run ``running``, atomically."""

        def unblock(conn: Conn) -> None:
            self._fence(conn, run_id)
            stamp = time.time()
            conn.execute(_sql(self, _SET_BLOCKED), (None, stamp, run_id))
            conn.execute(_sql(self, _TO_RUNNING), (stamp, run_id))

        self._write("let a run go on within its budget", unblock, idempotent=True)

    def raise_budget(self: Any, run_id: str, tokens: int = 0, cost: float = 0.0) -> BudgetState:
        """Add ``tokens`` and ``cost`` to run ``run_id``'s budget; return it as it is now.

        The new budget replaces the one read only while that one is still stored (a raise by
        another process meanwhile makes this one read and add again), so a write made again after
        a lost answer finds its own raise there and adds nothing twice.

        Raises:
            CheckpointError: The store has no such run.
            RunConflictError: The run has ended, or has no budget.
        """
        while True:
            old = self.budget(run_id)
            state = check_raise(run_id, self.run(run_id), old)
            raised = BudgetState(state.budget.raised(tokens, cost), state.blocked)
            before, after = state.budget.to_json(), raised.budget.to_json()

            def add(
                conn: Conn, before: str = before, after: str = after, state: BudgetState = state
            ) -> bool:
                row = conn.execute(_sql(self, _STATUS), (run_id,)).fetchone()
                check_raise(run_id, None if row is None else _Status(str(row[0])), state)
                cursor = conn.execute(
                    _sql(
                        self,
                        "UPDATE run_budgets SET budget = ?, updated_at = ? "
                        "WHERE run_id = ? AND budget = ?",
                    ),
                    (after, time.time(), run_id, before),
                )
                if cursor.rowcount:
                    return True
                found = _read_state(self, conn, run_id)
                return found is not None and found.budget.to_json() == after

            if self._write("raise a run's budget", add, idempotent=True):
                return raised

    def usage_add(self: Any, run_id: str, step: str, usage: Usage) -> None:
        """Add one call's ``usage`` to step ``step`` of run ``run_id``.

        Raises:
            LeaseLostError: (PostgreSQL replicas) another replica holds the run now.
        """
        row = (
            run_id,
            step,
            usage.calls,
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.total_tokens,
            usage.cost,
            time.time(),
        )

        def add(conn: Conn) -> None:
            self._fence(conn, run_id)
            conn.execute(_sql(self, _ADD_USAGE), row)

        self._write("record an LLM call's usage", add, idempotent=True)

    def usage(self: Any, run_id: str) -> dict[str, Usage]:
        """Run ``run_id``'s usage per step (steps in the order they first used any)."""
        return {str(row[0]): _usage(row) for row in self._query(_sql(self, _USAGE), (run_id,))}

    def usage_totals(self: Any, run_ids: Collection[str]) -> dict[str, Usage]:
        """The usage of each of ``run_ids`` that used any, summed over its steps (one query)."""
        ids = builtins.list(run_ids)
        if not ids:
            return {}
        marks = ", ".join([self.sql.param] * len(ids))
        text = (
            "SELECT run_id, SUM(calls), SUM(prompt_tokens), SUM(completion_tokens), "
            "SUM(total_tokens), CASE WHEN COUNT(cost) = COUNT(*) THEN SUM(cost) END "
            f"FROM run_usage WHERE run_id IN ({marks}) GROUP BY run_id"
        )
        return {str(row[0]): _usage(row) for row in self._query(text, tuple(ids))}


__all__ = ["SqlBudgets"]
