"""Closing llama-index's ``Memory`` in the event loop that opened it.

``Memory.from_defaults()`` keeps its chat in an in-memory SQLite database through SQLAlchemy's
async engine and aiosqlite. aiosqlite's worker thread outlives the test's event loop unless the
engine is disposed, and then raises "Event loop is closed" into whichever test runs next.
"""

from __future__ import annotations

from typing import Any


async def dispose(memory: Any) -> None:
    """Dispose the SQL engine of a llama-index ``Memory`` (other memories have none)."""
    store = getattr(memory, "sql_store", None)
    engine = getattr(store, "_async_engine", None)
    if engine is not None:
        await engine.dispose()
