"""A run's budget and its LLM calls' usage in the run store (memory, SQLite, PostgreSQL), and
the budgets a caller may give (a clear error for the others)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from batonflow.core import Budget
from batonflow.core.checkpoints import CheckpointStore, RunRecord, SqliteCheckpointStore
from batonflow.core.durable._budget import Usage, parse_amount, parse_budget
from batonflow.core.durable._sqlite_store import SCHEMA_VERSION
from batonflow.core.errors import CheckpointError, RunConflictError


def _record(run_id: str, status: str = "running") -> RunRecord:
    now = time.time()
    return RunRecord(run_id, "Flow", status, now, now)


async def test_a_budget_and_the_usage_per_step_are_kept(store: CheckpointStore) -> None:
    """The budget reads back as given; usage adds up per step, a step's cost stays unknown
    once one of its calls had no price."""
    store.create_run(_record("r1"))
    store.set_budget("r1", Budget(tokens=500))  # type: ignore[attr-defined]
    assert store.budget("r1").budget == Budget(tokens=500)  # type: ignore[attr-defined]
    store.usage_add("r1", "plan", Usage(10, 5, 15, 0.5, 1))  # type: ignore[attr-defined]
    store.usage_add("r1", "plan", Usage(20, 5, 25, 0.25, 1))  # type: ignore[attr-defined]
    store.usage_add("r1", "write", Usage(1, 1, 2, None, 1))  # type: ignore[attr-defined]
    store.usage_add("r1", "write", Usage(1, 1, 2, 0.1, 1))  # type: ignore[attr-defined]
    assert store.usage("r1") == {  # type: ignore[attr-defined]
        "plan": Usage(30, 10, 40, 0.75, 2),
        "write": Usage(2, 2, 4, None, 2),
    }
    totals = store.usage_totals(["r1", "nobody"])  # type: ignore[attr-defined]
    assert totals == {"r1": Usage(32, 12, 44, None, 4)}
    assert store.budget("nobody") is None  # type: ignore[attr-defined]


async def test_a_runs_budget_and_usage_are_read_together(store: CheckpointStore) -> None:
    """What a run's record shows of its budget and usage, in one read of the store: nothing,
    a budget alone, usage alone, both; the same as the two reads give."""
    queries: list[object] = []
    query = getattr(store, "_query", None)
    if query is not None:  # a SQL store: count its statements

        def counted(*args: object, **kwargs: object) -> object:
            queries.append(args[0])
            return query(*args, **kwargs)

        store._query = counted  # type: ignore[attr-defined]
    for run_id in ("none", "budget", "usage", "both"):
        store.create_run(_record(run_id))
    for run_id in ("budget", "both"):
        store.set_budget(run_id, Budget(tokens=100, cost=2))  # type: ignore[attr-defined]
    for run_id in ("usage", "both"):
        store.usage_add(run_id, "plan", Usage(3, 2, 5, 0.5, 1))  # type: ignore[attr-defined]
        store.usage_add(run_id, "write", Usage(1, 1, 2, None, 1))  # type: ignore[attr-defined]
    for run_id in ("none", "budget", "usage", "both"):
        queries.clear()
        state, usage = store.budget_and_usage(run_id)  # type: ignore[attr-defined]
        if query is not None:
            assert len(queries) == 1, queries
        assert state == store.budget(run_id)  # type: ignore[attr-defined]
        assert usage == store.usage(run_id)  # type: ignore[attr-defined]
        assert list(usage) == store_steps(run_id)


def store_steps(run_id: str) -> list[str]:
    """The steps a run of the test above used, in the order it first used them."""
    return ["plan", "write"] if run_id in ("usage", "both") else []


async def test_a_blocked_budget_makes_the_run_waiting_until_unblocked(
    store: CheckpointStore,
) -> None:
    """Blocking marks what the call needed and the run waiting; unblocking makes it run."""
    store.create_run(_record("r1"))
    store.set_budget("r1", Budget(tokens=100))  # type: ignore[attr-defined]
    store.budget_block("r1", {"step": "plan", "estimate": 7})  # type: ignore[attr-defined]
    assert store.run("r1").status == "waiting"  # type: ignore[union-attr]
    assert store.budget("r1").blocked == {"step": "plan", "estimate": 7}  # type: ignore[attr-defined]
    store.budget_unblock("r1")  # type: ignore[attr-defined]
    assert store.run("r1").status == "running"  # type: ignore[union-attr]
    assert store.budget("r1").blocked is None  # type: ignore[attr-defined]


async def test_a_raise_adds_to_the_budget_of_a_run_not_ended(store: CheckpointStore) -> None:
    """Raises add up; an ended run, a run without a budget, an unknown run are refused."""
    store.create_run(_record("r1"))
    store.set_budget("r1", Budget(tokens=100, cost=1.0))  # type: ignore[attr-defined]
    store.raise_budget("r1", 50, 0.5)  # type: ignore[attr-defined]
    state = store.raise_budget("r1", 25, 0.0)  # type: ignore[attr-defined]
    assert state.budget == Budget(tokens=175, cost=1.5)
    assert store.budget("r1").budget == Budget(tokens=175, cost=1.5)  # type: ignore[attr-defined]
    store.create_run(_record("plain"))
    with pytest.raises(RunConflictError, match="has no budget.*give a run a budget"):
        store.raise_budget("plain", 10)  # type: ignore[attr-defined]
    store.set_status("r1", "completed")
    with pytest.raises(RunConflictError, match="has ended .completed.*Start a new run"):
        store.raise_budget("r1", 10)  # type: ignore[attr-defined]
    with pytest.raises(CheckpointError, match="No run 'ghost'.*batonflow runs list"):
        store.raise_budget("ghost", 10)  # type: ignore[attr-defined]


async def test_a_deleted_run_takes_its_budget_and_usage_with_it(store: CheckpointStore) -> None:
    """Deleting a run (retention) leaves no budget or usage behind."""
    store.create_run(_record("r1"))
    store.set_budget("r1", Budget(tokens=100))  # type: ignore[attr-defined]
    store.usage_add("r1", "plan", Usage(1, 1, 2, None, 1))  # type: ignore[attr-defined]
    store.delete("r1")
    assert store.budget("r1") is None  # type: ignore[attr-defined]
    assert store.usage("r1") == {}  # type: ignore[attr-defined]


def test_a_version_7_file_gets_the_budget_tables(tmp_path: Path) -> None:
    """A file written before budgets (version 7) opens at the current version with them, its
    runs intact."""
    path = tmp_path / "runs.db"
    with SqliteCheckpointStore(path) as store:
        store.create_run(_record("old"))
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE run_budgets")
    conn.execute("DROP TABLE run_usage")
    conn.execute("UPDATE schema_version SET version = 7")
    conn.commit()
    conn.close()
    with SqliteCheckpointStore(path) as store:
        assert store.run("old") is not None
        store.set_budget("old", Budget(tokens=10))
        store.usage_add("old", "s", Usage(1, 2, 3, None, 1))
        assert store.usage("old") == {"s": Usage(1, 2, 3, None, 1)}
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()
    assert SCHEMA_VERSION >= 8  # the budgets came with version 8; later versions keep them


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param(5000, Budget(tokens=5000), id="int"),
        pytest.param("5000", Budget(tokens=5000), id="text"),
        pytest.param("5_000 tokens", Budget(tokens=5000), id="unit"),
        pytest.param("$0.50", Budget(cost=0.5), id="dollars"),
        pytest.param("0.5 USD", Budget(cost=0.5), id="usd"),
        pytest.param("1000 tokens, $2", Budget(tokens=1000, cost=2.0), id="both"),
        pytest.param({"tokens": 9, "on_exceed": "fail"}, Budget(9, None, "fail"), id="mapping"),
    ],
)
def test_budgets_are_read_from_numbers_texts_and_mappings(given: object, expected: Budget) -> None:
    """Every accepted form gives the budget it says."""
    assert parse_budget(given) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        pytest.param(-5, "tokens=-5 is not a whole number of tokens of 0 or more", id="neg-int"),
        pytest.param("-5", "is negative; give an amount of 0 or more", id="neg-text"),
        pytest.param("5 apples", "not an amount of tokens or US dollars; write e.g.", id="unit"),
        pytest.param("2.5", "fraction of a token", id="fraction"),
        pytest.param({"tokens": 5, "cents": 1}, "no field 'cents'", id="field"),
        pytest.param({"tokens": 5, "on_exceed": "panic"}, "not one of wait, fail", id="mode"),
        pytest.param(True, "not an amount", id="bool"),
        pytest.param({}, "needs tokens or cost", id="empty"),
    ],
)
def test_a_bad_budget_gets_a_clear_error(given: object, message: str) -> None:
    """A negative amount, an unknown unit or field: ValueError naming it and the fix."""
    with pytest.raises(ValueError, match=message):
        parse_budget(given)  # type: ignore[arg-type]


def test_amounts_add_up() -> None:
    """A raise of '1000, $0.25' adds tokens and dollars."""
    assert parse_amount("1000, $0.25") == (1000, 0.25)
