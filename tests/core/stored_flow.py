"""A durable run that waits for an answer, kept as checkpoint files written by an older core.

``python tests/core/stored_flow.py`` writes ``stored_checkpoint_json.json`` and
``stored_checkpoint_pickle.json`` next to this file: every checkpoint of one run of
:class:`StoredFlow` (paused waiting for a :class:`HumanResponseEvent`) under the JSON and the
pickle serializer. They were written before ``core/`` moved into subpackages, so the test that
loads them (``test_stored_checkpoints.py``) shows that the class names stored data holds
(``batonflow.core.events:StartEvent``, pickled ``batonflow.core.retry`` paths...) still resolve.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import types
from pathlib import Path
from typing import Any

from batonflow.core import (
    Context,
    Event,
    HumanResponseEvent,
    InMemoryCheckpointStore,
    InputRequiredEvent,
    JsonSerializer,
    PickleSerializer,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowCheckpointer,
    step,
)
from batonflow.core.errors import WorkflowTimeoutError
from batonflow.core.retry import retry_policy, stop_after_attempt, wait_fixed

HERE = Path(__file__).parent
FILES = {
    "json": HERE / "stored_checkpoint_json.json",
    "pickle": HERE / "stored_checkpoint_pickle.json",
}


class Noted(Event):
    """An event the run keeps in its state."""

    text: str


class StoredFlow(Workflow):
    """Notes its start, asks for a name, greets it."""

    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        await ctx.store.set("note", Noted(text=ev.topic))
        if ev.get("pickled", False):
            # Only pickle encodes a SimpleNamespace: the blob names core classes by module path.
            box = types.SimpleNamespace(
                event=StopEvent(result=1),
                error=WorkflowTimeoutError("late"),
                policy=retry_policy(wait=wait_fixed(1), stop=stop_after_attempt(2)),
            )
            await ctx.store.set("box", box)
        answer = await ctx.wait_for_event(
            HumanResponseEvent, waiter_event=InputRequiredEvent(prefix="name?"), waiter_id="name"
        )
        return StopEvent(result=f"{ev.topic} {answer.response}")


def serializer(kind: str) -> Any:
    """The serializer a fixture was written with."""
    return PickleSerializer() if kind == "pickle" else JsonSerializer()


async def write(kind: str) -> None:
    """Run :class:`StoredFlow` until it waits and write its checkpoints to ``FILES[kind]``."""
    store = InMemoryCheckpointStore()
    cptr = WorkflowCheckpointer(StoredFlow(serializer=serializer(kind)), store=store)
    handler = cptr.run(topic="hello", pickled=kind == "pickle")
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            break
    await asyncio.sleep(0.1)
    run_id = handler.run_id
    checkpoints = store.list(run_id)
    await handler.cancel_run()
    rows = []
    for c in checkpoints:
        row = dataclasses.asdict(c)
        del row["input_event"], row["output_event"]
        rows.append(row)
    FILES[kind].write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    # Through the module's own name, so the stored classes are ``stored_flow:...``.
    sys.path.insert(0, str(HERE))
    import stored_flow

    for name in sys.argv[1:] or list(FILES):
        asyncio.run(stored_flow.write(name))
