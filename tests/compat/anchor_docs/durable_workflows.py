# Ported from the anchor's docs page llamaagents/workflows/durable_workflows.md.
# Filled in: the page's database `Client` is an in-memory SQLite connection with an `exec`
# method; `db.save/load` is a dict of JSON text; MyWorkflow is a one-step counter on
# ctx.store; Redis is a dict-backed stand-in with `hset`; `convert()` records the document it
# converted; the page's tab-indented lines are re-indented. The page's first DurableWorkflow
# defines __init__ without calling super().__init__(), as written; main() prints what each
# engine does with it.
import asyncio
import json
import sqlite3
from typing import Annotated

from _fakes import FakeRedis as Redis
from workflows import Context, Workflow, step
from workflows.events import StartEvent, StopEvent
from workflows.resource import Resource


class Client:
    def __init__(self):
        # sync steps run in a thread
        self.conn = sqlite3.connect(":memory:", check_same_thread=False)
        self.conn.execute("create table t (x int)")
        self.conn.executemany("insert into t values (?)", [(1,), (2,), (3,)])

    def exec(self, sql):
        return self.conn.execute(sql).fetchone()[0]


class DbWorkflow(Workflow):
    def __init__(self, db: Client, *args, **kwargs):
        self.db = db
        super().__init__(*args, **kwargs)

    @step
    def count(self, ev: StartEvent) -> StopEvent:
        num_rows = self.db.exec("select COUNT(*) from t;")
        return StopEvent(result=num_rows)


class MyWorkflow(Workflow):
    @step
    async def bump(self, ctx: Context, ev: StartEvent) -> StopEvent:
        runs = await ctx.store.get("runs", default=0) + 1
        await ctx.store.set("runs", runs)
        return StopEvent(result=f"run number {runs}")


converted = []


def convert():
    converted.append(len(converted))


class DurableWorkflow(Workflow):
    def __init__(self, r: Redis):
        self.redis = r

    @step
    async def convert_documents(self, ev: StartEvent, ctx: Context) -> StopEvent:
        # Get the workflow input
        document_ids = ev.ids
        # Get the list of processed documents from the state store
        converted_ids = await ctx.store.get("converted_ids", default=[])
        for doc_id in document_ids:
            # Ignore documents that were alredy processed
            if doc_id in converted_ids:
                continue
            convert()
            # Update the state store
            converted_ids.append(doc_id)
            await ctx.store.set("converted_ids", converted_ids)
            # Create a snapshot of the current context
            self.redis.hset("ctx", mapping=ctx.to_dict())


def get_redis_client(*args, **kwargs):
    """This can be reused across several workflows to reduce boilerplate"""
    return Redis(host="localhost", port=6379, decode_responses=True)


class InjectedDurableWorkflow(Workflow):
    @step
    async def convert_documents(
        self,
        ev: StartEvent,
        ctx: Context,
        redis: Annotated[Redis, Resource(get_redis_client)],
    ) -> StopEvent:
        # Get the workflow input
        document_ids = ev.ids
        # Get the list of processed documents from the state store
        converted_ids = await ctx.store.get("converted_ids", default=[])
        for doc_id in document_ids:
            # Ignore documents that were alredy processed
            if doc_id in converted_ids:
                continue
            convert()
            # Update the state store
            converted_ids.append(doc_id)
            await ctx.store.set("converted_ids", converted_ids)
            # Create a snapshot of the current context
            redis.hset("ctx", mapping=ctx.to_dict())


async def outcome(make_handler):
    try:
        return repr(await make_handler())
    except Exception as error:
        return f"{type(error).__name__}"


async def main():
    db_workflow = DbWorkflow(Client(), timeout=10)
    print("rows:", await db_workflow.run(), await db_workflow.run())

    db = {}
    w = MyWorkflow()
    handler = w.run()
    context = handler.ctx
    # Save the context to a database
    db["id"] = json.dumps(context.to_dict())
    print("first run:", await handler)

    # "Restart the Python process..."
    w = MyWorkflow()
    # Load the context from the database
    context = Context.from_dict(w, json.loads(db["id"]))
    # Pass the context containing the state to the workflow
    result = await w.run(ctx=context)
    print("restored run:", result)
    print("restored again:", await w.run(ctx=context))

    try:
        print(await DurableWorkflow(Redis()).run(ids=["a", "b"]))  # no super().__init__()
    except Exception as error:
        print("DurableWorkflow as written:", type(error).__name__)

    # The page's step ends without returning its StopEvent, so the run would wait for its
    # timeout (45 s by default): filled in, a 1 s timeout.
    injected = InjectedDurableWorkflow(timeout=1)
    print("injected:", await outcome(lambda: injected.run(ids=["a", "b"])))
    print("converted:", converted)


asyncio.run(main())
