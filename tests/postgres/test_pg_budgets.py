"""Budgets on PostgreSQL: a database of schema version 10 gets the budget and usage tables, and
a budgeted run's raise is seen by the process that runs it."""

from __future__ import annotations

import time

import psycopg
from batonflow.core import Budget
from batonflow.core.durable._budget import Usage
from batonflow.core.durable._records import RunRecord
from batonflow.postgres import PostgresCheckpointStore
from batonflow.postgres._sql import SCHEMA_VERSION


def test_a_version_10_database_gets_the_budget_tables(postgres_url):
    """A database of version 10 (no budgets) is migrated to 11; its runs stay, budgets work."""
    now = time.time()
    with PostgresCheckpointStore(postgres_url) as store:
        store.create_run(RunRecord("old", "Flow", "running", now, now))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE run_budgets")
        conn.execute("DROP TABLE run_usage")
        conn.execute("UPDATE batonflow_schema SET version = 10")
    with PostgresCheckpointStore(postgres_url) as store:
        assert store.run("old") is not None
        store.set_budget("old", Budget(tokens=10))
        store.usage_add("old", "s", Usage(1, 2, 3, 0.5, 1))
        assert store.usage("old") == {"s": Usage(1, 2, 3, 0.5, 1)}
        assert store.raise_budget("old", 5).budget == Budget(tokens=15)
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM batonflow_schema").fetchone() == (SCHEMA_VERSION,)
    assert SCHEMA_VERSION >= 11  # the budgets came with version 11; later versions keep them


async def test_an_async_llm_calls_budget_reads_and_writes_leave_the_loop(postgres_url) -> None:
    """On PostgreSQL, an async LLM call's budget read and usage write are made in a thread:
    one run's call never blocks the loop that runs the others (a round trip each)."""
    import threading

    import batonflow.budgets  # noqa: F401  (counts the calls)
    from batonflow.agents.testing import ScriptedLLM, ScriptedResponse
    from batonflow.core import StartEvent, StopEvent, Workflow, WorkflowCheckpointer, step
    from llama_index.core.llms import ChatMessage

    llm = ScriptedLLM([ScriptedResponse(text="four", usage=(5, 1))])

    class Ask(Workflow):
        @step
        async def ask(self, ev: StartEvent) -> StopEvent:
            reply = await llm.achat([ChatMessage(content="2+2?")])
            return StopEvent(result=str(reply.message.content))

    on_loop: list[str] = []
    with PostgresCheckpointStore(postgres_url) as store:
        loop_thread = threading.current_thread()
        for name in ("budget", "usage_add"):
            real = getattr(store, name)

            def watched(*args, _real=real, _name=name):
                if threading.current_thread() is loop_thread:
                    on_loop.append(_name)
                return _real(*args)

            setattr(store, name, watched)
        handler = WorkflowCheckpointer(Ask(timeout=30), store=store).start(budget=1000)
        assert await handler == "four"
    assert on_loop == []
