"""Step-boundary listeners: the hook durable checkpoints are built on.

After a step attempt succeeds and its output events are queued, and before those events are
dispatched onward, the run calls every listener registered with
``Workflow.add_step_listener(fn)`` with one :class:`StepBoundary` record. At that moment the
run is quiet and consistent: ``record.ctx.to_dict()`` (synchronous) captures the state, every
queued event (including the ones just produced), the inputs of steps still running (a resume
re-runs them), ``collect_events`` buffers, waiters, the stream position, the run id and meta.

A listener runs in the event loop and must be quick (take the snapshot, do not block). It
may return an awaitable (a checkpoint's write made off the loop, by a store that has its own
writer threads): the run then stays as the listener saw it (its outputs queued, nothing new
started) until the awaitable is done, while the loop serves everything else. A listener that
raises, or whose awaitable raises, fails the run with that exception: a checkpoint that could
not be written is not silently skipped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._public import publish

if TYPE_CHECKING:
    from ..data.events import Event
    from .context import Context


@dataclass(frozen=True, slots=True)
class StepBoundary:
    """One completed step attempt, as step listeners see it.

    Attributes:
        run_id: The run's id.
        step_name: The step that completed.
        execution_id: The execution's id within the run.
        attempt: Which attempt succeeded (1 unless retried).
        input_event: The event the step ran on.
        output_events: The events it returned (empty when it returned ``None``).
        ctx: The run's Context; ``ctx.to_dict()`` is consistent during the call.
        started_at: Wall-clock time (``time.time()``) the execution's first attempt started.
        finished_at: Wall-clock time the successful attempt finished.
    """

    run_id: str
    step_name: str
    execution_id: int
    attempt: int
    input_event: Event
    output_events: tuple[Event, ...]
    ctx: Context[Any]
    started_at: float
    finished_at: float


#: A step-boundary listener: returns nothing, or an awaitable the run waits for (see above).
StepListener = Callable[[StepBoundary], Awaitable[None] | None]

__all__ = ["StepBoundary", "StepListener"]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
