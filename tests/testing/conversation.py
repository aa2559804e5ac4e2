"""A long scripted agent conversation, run durably: what the journal-size tests and
``bench/journal_deltas.py`` measure.

A :class:`FunctionAgent` on a :class:`ScriptedLLM` calls its ``lookup`` tool ``turns - 1``
times, one LLM call per turn, then answers: ``turns`` LLM calls, each sending the whole
conversation so far (every earlier tool call and its ~200-character result).
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from batonflow.agents import FunctionAgent
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from batonflow.core import SqliteCheckpointStore, WorkflowCheckpointer
from batonflow.testing import record
from llama_index.core.base.llms.types import ChatMessage, MessageRole

QUESTION = "Look it all up, then answer."
ANSWER = "Everything was looked up."


def run_fields(turns: int) -> dict[str, Any]:
    """What the conversation's run is started with (enough iterations for ``turns`` calls)."""
    return {"user_msg": QUESTION, "max_iterations": turns + 5}


def conversation_agent(
    turns: int, effects: Path | None = None, pause: float = 0.0, tail: str = ""
) -> FunctionAgent:
    """The agent of a ``turns``-call conversation (``effects``: a file each LLM call and each
    tool call appends a line to; ``pause``: seconds each LLM call takes; ``tail``: what each
    tool result ends with)."""

    def note(what: str) -> None:
        if effects is not None:
            with effects.open("a") as f:
                f.write(what + "\n")

    def respond(messages: list[ChatMessage]) -> str | ScriptedResponse:
        time.sleep(pause)
        note("llm")
        done = sum(1 for m in messages if m.role == MessageRole.TOOL)
        if done + 1 >= turns:
            return ANSWER
        return ScriptedResponse(
            tool_calls=[ScriptedToolCall("lookup", {"q": f"item {done}"}, id=f"call_{done}")]
        )

    def lookup(q: str) -> str:
        """Look ``q`` up.

        Args:
            q: What to look up.
        """
        note("tool")
        return f"{q}: " + "the record says so, " * 10 + tail

    return FunctionAgent(
        tools=[lookup],
        llm=ScriptedLLM([respond] * turns),
        system_prompt="You look things up.",
        timeout=None,
    )


async def durable_conversation(db: Path, turns: int, run_id: str = "talk") -> None:
    """Run the ``turns``-call conversation durably in the SQLite store ``db``."""
    with SqliteCheckpointStore(db) as store:
        cptr = WorkflowCheckpointer(conversation_agent(turns), store=store)
        assert str(await cptr.run(run_id=run_id, **run_fields(turns))) == ANSWER


async def recorded_conversation(path: Path, turns: int) -> bytes:
    """The cassette ``batonflow.testing.record`` writes at ``path`` for a plain (not durable)
    run of the ``turns``-call conversation: its bytes."""
    async with record(path):
        assert str(await conversation_agent(turns).run(**run_fields(turns))) == ANSWER
    return path.read_bytes()


def llm_entry_sizes(db: Path, run_id: str = "talk") -> list[int]:
    """The stored size (bytes of the body) of each journaled LLM call of ``run_id``, in order."""
    with SqliteCheckpointStore(db) as store:
        entries = store.journal(run_id)
    return [len(e.body.encode()) for e in entries if e.name == "llm"]


def journal_bytes(db: Path, run_id: str = "talk") -> int:
    """The stored size of all of ``run_id``'s journaled calls (bytes of their bodies)."""
    with SqliteCheckpointStore(db) as store:
        return sum(len(e.body.encode()) for e in store.journal(run_id))


def cli(*args: str) -> str:
    """``batonflow *args`` in this process; its output (it must succeed)."""
    from batonflow.apps.cli import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def exported(db: Path, path: Path, run_id: str = "talk") -> bytes:
    """The cassette ``batonflow runs export RUN --cassette PATH --db DB`` writes: its bytes."""
    cli("runs", "export", run_id, "--cassette", str(path), "--db", str(db))
    return path.read_bytes()


def checkpoint_bytes(db: Path, run_id: str = "talk") -> list[int]:
    """The stored size (bytes of ``ctx_data``) of each of ``run_id``'s checkpoints, in order,
    read from the SQLite file."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT ctx_data FROM checkpoints WHERE run_id = ? ORDER BY seq", (run_id,)
        ).fetchall()
    return [len(text.encode()) for (text,) in rows]


def stored_values(db: Path, run_id: str = "talk") -> list[Any]:
    """The journaled values of ``run_id`` as the store holds them (JSON, not expanded)."""
    with SqliteCheckpointStore(db) as store:
        return [json.loads(e.body) for e in store.journal(run_id)]


__all__ = [
    "ANSWER",
    "QUESTION",
    "checkpoint_bytes",
    "conversation_agent",
    "durable_conversation",
    "cli",
    "exported",
    "journal_bytes",
    "llm_entry_sizes",
    "recorded_conversation",
    "run_fields",
    "stored_values",
]
