"""Child runs: ``await ctx.run_child(workflow, **start_fields)`` from a step.

A child is a run of its own, started from a step of its parent and awaited there: the step
gets the child's result (or its exception). While the child runs, each event it writes to
its stream is written to the parent's stream too, wrapped in a :class:`ChildRunEvent` that
names the child's run id. When the parent's step is cancelled (the parent run is cancelled,
fails or times out), the child run is cancelled too.

Here is the in-process child of a run that is not durable; a durable run's child
(``durable/_children.py``) is recorded in the run store with its parent before it starts
and goes through :func:`follow` as well.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..data.events import ChildRunEvent, StopEvent

if TYPE_CHECKING:
    from .context import Context
    from .handler import WorkflowHandler
    from .workflow import Workflow


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
) -> Any:
    """Await the child run ``handler``, writing its stream events to ``ctx``'s stream.

    Args:
        ctx: The parent run's context.
        handler: The child run's handler.
        on_cancel: What to do with the child when the parent's step is cancelled (default:
            cancel the child run).

    Returns:
        The child's result; raises what the child raised.
    """
    child_id = str(handler.run_id)
    name = handler._run.workflow.workflow_name
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


def _retrieved(handler: asyncio.Future[Any]) -> None:
    # A handler says cancelled() for a run cancelled by the user too, which still holds
    # its exception: ask for it either way (a cancelled future raises CancelledError).
    with contextlib.suppress(asyncio.CancelledError):
        handler.exception()


async def run_in_process(ctx: Context[Any], workflow: Workflow, fields: dict[str, Any]) -> Any:
    """The child of a run that is not durable: ``workflow.run(**fields)``, followed."""
    return await follow(ctx, workflow.run(**fields))


__all__ = ["check_child", "follow", "run_in_process"]
