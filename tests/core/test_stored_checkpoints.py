"""Checkpoints written by an older core (before ``core/`` moved into subpackages) still load.

The fixtures were written by ``stored_flow.py`` with the core of commit 7c43faf, where every
module sat in one flat folder: their JSON names classes ``batonflow.core.events:StartEvent``,
their pickles name ``batonflow.core.retry``, ``batonflow.core.events``, ``batonflow.core.errors``.
"""

from __future__ import annotations

import json
import types

import pytest
from batonflow.core import (
    Checkpoint,
    HumanResponseEvent,
    InMemoryCheckpointStore,
    StopEvent,
    WorkflowCheckpointer,
)
from batonflow.core.errors import WorkflowTimeoutError
from batonflow.core.retry import ComposedRetryPolicy
from stored_flow import FILES, Noted, StoredFlow, serializer


def stored(kind: str) -> Checkpoint:
    """The latest checkpoint of the stored run written with the ``kind`` serializer."""
    rows = json.loads(FILES[kind].read_text())
    row = max(rows, key=lambda r: r["seq"])
    row["output_event_types"] = tuple(row["output_event_types"])
    return Checkpoint(**row)


@pytest.mark.parametrize("kind", ["json", "pickle"])
async def test_old_checkpoint_resumes_and_finishes(kind: str) -> None:
    """A waiting run stored by the flat core continues from its checkpoint and takes its answer."""
    store = InMemoryCheckpointStore()
    cptr = WorkflowCheckpointer(StoredFlow(serializer=serializer(kind)), store=store)
    handler = cptr.run_from(checkpoint=stored(kind))
    handler.ctx.send_event(HumanResponseEvent(response="Ada"))
    assert await handler == "hello Ada"
    note = await handler.ctx.store.get("note")
    assert note == Noted(text="hello")
    if kind == "pickle":
        box = await handler.ctx.store.get("box")
        assert isinstance(box, types.SimpleNamespace)
        assert box.event == StopEvent(result=1)
        assert isinstance(box.error, WorkflowTimeoutError)
        assert isinstance(box.policy, ComposedRetryPolicy)
