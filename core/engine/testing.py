"""Helpers for testing workflows: run one and see every event, and a clock you control.

:class:`WorkflowTestRunner` runs a workflow to the end while collecting every event of its
stream (internal ones included by default) and returns a :class:`WorkflowTestResult`.
:class:`FakeTime` is a clock and a sleep to pass to ``Workflow(clock=..., sleep=...)`` so that
retry delays take no time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._public import publish
from ..data.events import Event, StartEvent

if TYPE_CHECKING:
    from .context import Context
    from .workflow import Workflow


@dataclass(frozen=True, slots=True)
class WorkflowTestResult:
    """What a test run produced.

    Attributes:
        collected: Every streamed event, in order (minus excluded types).
        event_types: How many events of each type were streamed.
        result: What ``await handler`` returned.
        ctx: The run's context (inspect ``ctx.store`` after the run).
    """

    collected: list[Event]
    event_types: dict[type[Event], int]
    result: Any
    ctx: Context[Any]


class WorkflowTestRunner:
    """Run a workflow to completion and collect its stream.

    Args:
        workflow: The workflow instance to run.
    """

    def __init__(self, workflow: Workflow) -> None:
        self._workflow = workflow

    async def run(
        self,
        start_event: StartEvent | None = None,
        ctx: Context[Any] | None = None,
        expose_internal: bool = True,
        exclude_events: Iterable[type[Event]] | None = None,
        **kwargs: Any,
    ) -> WorkflowTestResult:
        """Run once and return what was streamed and the result.

        Args:
            start_event: The start event (default: built from ``kwargs``).
            ctx: A context to continue (see ``Workflow.run``).
            expose_internal: Also collect the engine's internal events.
            exclude_events: Event types to leave out of ``collected`` and ``event_types``.
            **kwargs: Start-event fields.

        Raises:
            Exception: Whatever ``await handler`` raises when the run fails.
        """
        excluded = tuple(exclude_events or ())
        handler = self._workflow.run(ctx=ctx, start_event=start_event, **kwargs)
        collected: list[Event] = []
        async for event in handler.stream_events(expose_internal=expose_internal):
            if excluded and isinstance(event, excluded):
                continue
            collected.append(event)
        result = await handler
        counts = Counter(type(e) for e in collected)
        return WorkflowTestResult(collected, dict(counts), result, handler.ctx)


@dataclass
class FakeTime:
    """A monotonic clock and a sleep that advances it instantly.

    ``Workflow(clock=fake.clock, sleep=fake.sleep)``: retry delays are recorded in
    :attr:`sleeps` and cost no time.
    """

    now: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    def clock(self) -> float:
        """The current fake time."""
        return self.now

    async def sleep(self, seconds: float) -> None:
        """Record ``seconds`` and advance the clock by it."""
        self.sleeps.append(seconds)
        self.now += seconds


__all__ = ["FakeTime", "WorkflowTestResult", "WorkflowTestRunner"]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
