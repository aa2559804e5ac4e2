"""A durable agent run whose process dies right after its first LLM call was journaled.

``python agent_journal_worker.py start|resume DB EFFECTS``: a :class:`FunctionAgent` on a
scripted LLM asks for a tool, then answers; every LLM call and every tool call appends a line
to the file ``EFFECTS`` (what a provider would bill). ``start`` ends the process with
``os._exit`` (no clean-up, as ``kill -9``) the moment the first LLM call's response is
committed to the run's journal, before the agent's step completes; ``resume`` continues the run
in a new process and prints its result.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from batonflow.agents import FunctionAgent
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from batonflow.core.checkpoints import SqliteCheckpointStore, WorkflowCheckpointer
from llama_index.core.base.llms.types import ChatMessage, MessageRole

RUN_ID = "agent-run"


def _note(path: str, what: str) -> None:
    with open(path, "a") as f:
        f.write(what + "\n")
        f.flush()
        os.fsync(f.fileno())


class DiesAfterTheFirstLLMCall(SqliteCheckpointStore):
    """Commits the journaled LLM response, then the process dies on the spot."""

    def journal_put(self, run_id, entry):  # type: ignore[no-untyped-def]
        super().journal_put(run_id, entry)
        if entry.name == "llm":
            os._exit(9)


def agent(effects: str) -> FunctionAgent:
    def respond(messages: list[ChatMessage]) -> str | ScriptedResponse:
        _note(effects, "llm")
        if any(m.role == MessageRole.TOOL for m in messages):
            return "The answer is 42."
        return ScriptedResponse(tool_calls=[ScriptedToolCall("lookup", {"q": "answer"})])

    def lookup(q: str) -> str:
        """Look ``q`` up."""
        _note(effects, "tool")
        return "42"

    return FunctionAgent(tools=[lookup], llm=ScriptedLLM([respond] * 5), timeout=None)


async def main(mode: str, db: str, effects: str) -> None:
    if mode == "start":
        cptr = WorkflowCheckpointer(agent(effects), store=DiesAfterTheFirstLLMCall(db))
        await cptr.run(run_id=RUN_ID, user_msg="What is the answer?")
        return
    cptr = WorkflowCheckpointer(agent(effects), store=SqliteCheckpointStore(db))
    print(json.dumps({"result": str(await cptr.resume(RUN_ID))}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
