"""llama-agents-server serving the 3-step flow of ``_http_flows.py``, for ``http_compare.py``.

Runs in a venv of its own (``pip install llama-agents-server``), never in batonflow's::

    /tmp/llama-venv/bin/python bench/_llama_server.py --port 8123 --store memory
    /tmp/llama-venv/bin/python bench/_llama_server.py --port 8123 --store postgresql://...

Prints ``llama-agents-server on http://127.0.0.1:<port>`` once it listens.
"""

from __future__ import annotations

import argparse
import asyncio

from llama_agents.server import WorkflowServer
from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent


class Counted(Event):
    n: int


class Checked(Event):
    n: int


class ThreeSteps(Workflow):
    @step
    async def first(self, ctx: Context, ev: StartEvent) -> Counted:
        n = int(ev.get("n", 0))
        await ctx.store.set("n", n)
        return Counted(n=n)

    @step
    async def second(self, ctx: Context, ev: Counted) -> Checked:
        ctx.write_event_to_stream(Counted(n=ev.n))
        return Checked(n=ev.n + 1)

    @step
    async def third(self, ev: Checked) -> StopEvent:
        return StopEvent(result=ev.n)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--store", default="memory", help="memory, or a postgresql:// URL")
    args = parser.parse_args()
    store = None
    if args.store != "memory":
        from llama_agents.server._store.postgres_workflow_store import PostgresWorkflowStore

        store = PostgresWorkflowStore(args.store)
    server = WorkflowServer(workflow_store=store)
    server.add_workflow("steps", ThreeSteps(timeout=None))
    print(f"llama-agents-server on http://127.0.0.1:{args.port}", flush=True)
    asyncio.run(
        server.serve(
            host="127.0.0.1",
            port=args.port,
            uvicorn_config={"log_level": "warning", "access_log": False},
        )
    )


if __name__ == "__main__":
    main()
