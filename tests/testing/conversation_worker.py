"""The long scripted conversation (``conversation.py``), durable, in a process to kill:
``python conversation_worker.py start|resume DB EFFECTS TURNS``.

Each LLM call takes 20 ms and appends ``llm`` to the file ``EFFECTS`` (each tool call ``tool``),
so a trial can kill the process in the middle of the conversation and resume it in a new one.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

from batonflow.core import SqliteCheckpointStore, WorkflowCheckpointer  # noqa: E402
from conversation import conversation_agent, run_fields  # noqa: E402
from worker_run import start_or_resume  # noqa: E402

RUN_ID = "talk"


async def main(mode: str, db: str, effects: str, turns: int) -> None:
    agent = conversation_agent(turns, Path(effects), pause=0.02)
    with SqliteCheckpointStore(db) as store:
        cptr = WorkflowCheckpointer(agent, store=store)
        fields = run_fields(turns) if mode == "start" else {}
        await start_or_resume(cptr, mode, RUN_ID, **fields)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
