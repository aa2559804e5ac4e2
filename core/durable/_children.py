"""A durable run's child runs: ``await ctx.run_child(workflow, **start_fields)``.

The child of a durable run goes to its parent's run store. Its run id is made from its
position in the parent (the parent's run id, the step, the execution, the attempt and the
number of the journaled call), so the re-run of the step after a crash names the same child.
Its record names its parent (``parent_run_id``, ``parent_step``, ``parent_kind="child"``) and
is written before the child's first step runs; the child is recorded as it goes like any
durable run (a checkpoint per step, its stream events).

The whole child is one journaled call of the parent's step (``child:<workflow name>``): when
the child ends, its result (or exception) is journaled in the parent, so a re-run of the step
gets it back without running the child again. A re-run that finds the child recorded but no
result journaled resumes the child from its latest checkpoint (its finished steps do not run
again), or takes the outcome of a child that had ended.

When the parent's step is cancelled, the child is cancelled too, unless the parent was
released (a server shutting down): the child is then released too (and its lease, on
PostgreSQL replicas), to be resumed with its parent by the next process. A replica that takes
a parent over claims the child's lease before it resumes the child.

While the parent's step follows the child, the parent's checkpointer knows the child's
(``_children_live``), so an answer sent to the parent, or to the child's run id, through the
parent's checkpointer reaches the child here (see ``_child_answers.py``).
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from ..data.events import Event
from ..engine._children import follow
from ..errors import CheckpointError, WorkflowRuntimeError
from ._records import RunInfo

if TYPE_CHECKING:
    from ..engine._runtime import Execution
    from ..engine.context import Context
    from ..engine.handler import WorkflowHandler
    from ..engine.workflow import Workflow
    from ._journal import RunJournal

logger = logging.getLogger("batonflow.core")

#: The namespace of child run ids (uuid5 of the child's position in its parent).
_CHILDREN = uuid.UUID("8d3f1c52-5a8e-4c59-9a3e-6f1f0c2b7e41")


def child_run_id(parent: str, step: str, execution: int, attempt: int, number: int) -> str:
    """The run id of the child started at this position of its parent (the same each time)."""
    return uuid.uuid5(_CHILDREN, f"{parent}/{step}/{execution}/{attempt}/{number}").hex


async def run_child(
    journal: RunJournal,
    ctx: Context[Any],
    ex: Execution,
    workflow: Workflow,
    fields: dict[str, Any],
) -> Any:
    """Run ``workflow`` as the durable child of ``journal``'s run, from execution ``ex``."""
    step = ex.lane.spec.name
    number = journal.position(ex.id, ex.attempt)
    child_id = child_run_id(journal.run_id, step, ex.id, ex.attempt, number)

    async def start_or_resume() -> Any:
        return await _child(journal, ctx, step, child_id, workflow, fields)

    # What a journal error names: "the result of 'child run <id> (Outline)' cannot be recorded".
    start_or_resume.__qualname__ = f"child run {child_id} ({workflow.workflow_name})"
    name = f"child:{workflow.workflow_name}"
    return await journal.call(step, ex.id, ex.attempt, name, start_or_resume, (), {})


async def _child(
    journal: RunJournal,
    ctx: Context[Any],
    step: str,
    child_id: str,
    workflow: Workflow,
    fields: dict[str, Any],
) -> Any:
    parent = journal.checkpointer
    store = journal.store
    cptr = type(parent)(workflow, store=store, serializer=journal.serializer)
    try:
        record = store.run(child_id)
        if record is None:
            info = RunInfo(parent_run_id=journal.run_id, parent_step=step)
            handler = await cptr.astart(run_id=child_id, info=info, **fields)
        elif record.status == "completed":
            return None if record.result is None else journal.serializer.deserialize(record.result)
        elif record.status in ("failed", "cancelled"):
            raise WorkflowRuntimeError(
                f"Child run {child_id} of run {journal.run_id} (step {step!r}) ended "
                f"{record.status}: {record.error}. Fork or resume the child to run it again."
            )
        else:
            if _leased(store):
                # A replica that took the parent over takes its child along (its lease ran
                # out with the parent's, or was released with it); a live holder keeps it.
                store.claim(child_id)
            handler = cptr.resume(child_id)

        def stop(child: WorkflowHandler) -> None:
            if journal.run_id in parent._released:
                cptr.release(child_id)  # a shutdown: the next process resumes both
                if _leased(store):
                    _release_lease(store, child_id)
            child._run.cancel()

        def send(event: Event) -> None:
            # Through the child's inbox: recorded once, and taken after a crash too. Its
            # question first, if it is not written yet: the child must be waiting for it.
            if cptr._backlog.get(child_id):
                cptr.flush_events(child_id)
            cptr.send_event(child_id, event, answer=True)

        parent._children_live[child_id] = cptr
        return await follow(ctx, handler, stop, send)
    finally:
        parent._children_live.pop(child_id, None)
        cptr.detach()


def _leased(store: Any) -> bool:
    """Whether ``store`` leases its runs to server replicas (PostgreSQL with a replica id)."""
    return getattr(store, "replica_id", None) is not None and hasattr(store, "claim")


def _release_lease(store: Any, run_id: str) -> None:
    """Give up the replica's lease on a released parent's child, so that the replica taking
    the parent over takes the child at once (not after the lease runs out)."""
    try:
        store.release(run_id)
    except CheckpointError as exc:  # the lease then runs out
        logger.warning("Child run %s: could not release its lease: %s", run_id, exc)


__all__ = ["child_run_id", "run_child"]
