"""Child runs: ``await ctx.run_child(workflow, **start_fields)`` from a step.

A child is a run of its own, started from a step of its parent and awaited there: the step
gets the child's result (or its exception). While the child runs, each event it writes to
its stream is written to the parent's stream too, wrapped in a :class:`ChildRunEvent` that
names the child's run id. When the parent's step is cancelled (the parent run is cancelled,
fails or times out), the child run is cancelled too.

While the parent's step follows it, an event sent into the parent from outside
(``handler.ctx.send_event``) that no step of the parent takes or waits for goes to the child
that waits for it (:func:`to_child`; a durable child gets it through its inbox, so it is
recorded once: see ``durable/_child_answers.py`` for the rule).

Here is the in-process child of a run that is not durable; a durable run's child
(``durable/_children.py``) is recorded in the run store with its parent before it starts
and goes through :func:`follow` as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..data.events import ChildRunEvent, Event, StopEvent
from ..errors import WorkflowRuntimeError

if TYPE_CHECKING:
    from ._runtime import Run
    from .context import Context
    from .handler import WorkflowHandler
    from .workflow import Workflow

#: The child runs each run's steps follow now: child run id -> (its handler, how an event
#: sent to it from outside goes in).
_FOLLOWED: weakref.WeakKeyDictionary[Run, dict[str, tuple[WorkflowHandler, Callable[[Event], Any]]]]
_FOLLOWED = weakref.WeakKeyDictionary()


def check_child(workflow: Any) -> Workflow:
    """``workflow`` when it is a workflow instance.

    Raises:
        TypeError: It is a class or something else.
    """
    if not isinstance(workflow, type) and hasattr(workflow, "_graph"):
        return workflow  # type: ignore[no-any-return]
    what = (
        f"the class {workflow.__name__}"
        if isinstance(workflow, type)
        else f"{type(workflow).__name__} {workflow!r}"
    )
    raise TypeError(
        f"ctx.run_child() takes a workflow instance, got {what}; pass an instance, "
        "e.g. ctx.run_child(ChildFlow(), topic=...)."
    )


async def follow(
    ctx: Context[Any],
    handler: WorkflowHandler,
    on_cancel: Callable[[WorkflowHandler], None] | None = None,
    send: Callable[[Event], Any] | None = None,
) -> Any:
    """Await the child run ``handler``, writing its stream events to ``ctx``'s stream.

    Args:
        ctx: The parent run's context.
        handler: The child run's handler.
        on_cancel: What to do with the child when the parent's step is cancelled (default:
            cancel the child run).
        send: How an event sent to the parent for the child goes in (default:
            ``handler.ctx.send_event``; a durable child's inbox).

    Returns:
        The child's result; raises what the child raised.
    """
    child_id = str(handler.run_id)
    name = handler._run.workflow.workflow_name
    parent = ctx._run
    if parent is not None:
        followed = _FOLLOWED.setdefault(parent, {})
        followed[child_id] = (handler, send or handler.ctx.send_event)
    try:
        async for event in handler.stream_events():
            if not isinstance(event, StopEvent):
                ctx.write_event_to_stream(
                    ChildRunEvent(
                        child_run_id=child_id,
                        workflow_name=name,
                        event_type=type(event).__name__,
                        event=event,
                    )
                )
        return await handler
    except asyncio.CancelledError:
        if on_cancel is not None:
            on_cancel(handler)
        else:
            handler._run.cancel()
        # Its outcome (cancelled) is the parent's business no more: nobody awaits it.
        handler.add_done_callback(_retrieved)
        raise
    finally:
        if parent is not None:
            _FOLLOWED.get(parent, {}).pop(child_id, None)


def followed(run: Run) -> dict[str, WorkflowHandler]:
    """The child runs the steps of ``run`` follow now, by run id."""
    return {cid: handler for cid, (handler, _) in _FOLLOWED.get(run, {}).items()}


def _takes(handler: WorkflowHandler, event: Event) -> bool:
    """Whether child run ``handler`` (or a child it follows) waits for ``event``, or has a
    step that takes its type."""
    run = handler._run
    if handler.done():
        return False
    if any(w.matches(event) for w in run.waiters.values()) or run.graph.targets(type(event)):
        return True
    return any(_takes(h, event) for h, _ in _FOLLOWED.get(run, {}).values())


def to_child(run: Run, event: Event) -> bool:
    """Send ``event``, sent to ``run`` from outside and taken by none of its steps, to the
    child run that waits for it; ``False`` when no child of ``run`` does.

    Raises:
        WorkflowRuntimeError: Several child runs wait for it (nothing was sent).
        RunConflictError: A durable child's question was answered already.
    """
    takers = [(cid, send) for cid, (h, send) in _FOLLOWED.get(run, {}).items() if _takes(h, event)]
    if len(takers) > 1:
        names = ", ".join(cid for cid, _ in takers)
        raise WorkflowRuntimeError(
            f"{len(takers)} child runs of this run wait for {type(event).__name__} "
            f"({names}) and no step of the run takes it, so it was not sent. Send it to the "
            "child run it is for: cptr.send_event(child_run_id, event) for a durable run (the "
            "child_run_id of the ChildRunEvent that carried its question)."
        )
    if not takers:
        return False
    takers[0][1](event)
    return True


def _retrieved(handler: asyncio.Future[Any]) -> None:
    # A handler says cancelled() for a run cancelled by the user too, which still holds
    # its exception: ask for it either way (a cancelled future raises CancelledError).
    with contextlib.suppress(asyncio.CancelledError):
        handler.exception()


async def run_in_process(ctx: Context[Any], workflow: Workflow, fields: dict[str, Any]) -> Any:
    """The child of a run that is not durable: ``workflow.run(**fields)``, followed."""
    return await follow(ctx, workflow.run(**fields))


__all__ = ["check_child", "follow", "followed", "run_in_process", "to_child"]
