"""The handler of one run: await it for the result, stream its events, cancel it."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .._public import publish
from ..data.events import Event, StopEvent
from ..errors import ContextStateError
from . import _display
from ._runtime import RunStatus

if TYPE_CHECKING:
    from ._runtime import Run
    from .context import Context
    from .workflow import Workflow


class WorkflowHandler(asyncio.Future[Any]):
    """What ``Workflow.run()`` returns: an awaitable future of the run's result.

    ``await handler`` gives the result: ``StopEvent.result`` for a plain ``StopEvent``, the event
    itself for a ``StopEvent`` subclass. If a step failed, the run timed out or was cancelled,
    awaiting raises that step's original exception, :class:`WorkflowTimeoutError` or
    :class:`WorkflowCancelledByUser`.

    Attributes:
        ctx: The run's :class:`Context` (``handler.ctx.send_event(...)`` answers a human prompt).
        run_id: The run's id.
    """

    def __init__(self, run: Run, ctx: Context[Any]) -> None:
        super().__init__(loop=run.loop)
        self._run = run
        self.ctx = ctx
        self.run_id: str = run.run_id

    @property
    def workflow(self) -> Workflow:
        """The workflow this run belongs to."""
        return self._run.workflow

    def __repr__(self) -> str:
        return f"<WorkflowHandler run_id={self.run_id!r} status={self._run.status.value}>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        """In a notebook: the run's status and result, and what it ran (a drawing)."""
        return _display.bundle("handler", self)

    def stream_events(self, expose_internal: bool = False) -> AsyncIterator[Event]:
        """Yield the events steps write with ``ctx.write_event_to_stream``, then the StopEvent.

        The stream ends after the StopEvent, or, when the run fails, times out or is cancelled,
        as soon as the events written before that are drained: the error is raised by
        ``await handler``, never by the stream, and the stream never hangs. All consumers share
        one cursor: a second consumer, or a consumer that broke out of the loop and iterates
        again, gets the events nobody has seen yet.

        Args:
            expose_internal: Also yield the engine's own events from now on:
                ``StepStateChanged`` when an execution is queued, starts and finishes, and
                ``WorkflowIdleEvent`` when every step waits for outside input.

        Yields:
            Events in the order they were written.
        """
        if expose_internal:
            self._run.internal = True
        # The stream's own generator, without a second async-generator hop per event.
        return self._run.stream.consume(expose_internal)

    def is_done(self) -> bool:
        """Whether the run has ended (completed, failed, timed out or cancelled)."""
        return self.done()

    async def cancel_run(self, *, timeout: float = 5.0) -> None:
        """Cancel the run and wait (up to ``timeout`` seconds) until its steps are gone.

        ``await handler`` then raises :class:`WorkflowCancelledByUser`. Cancelling a run that
        already ended does nothing.
        """
        self._run.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(self), timeout)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # our caller is being cancelled: never swallow that
            # else: the handler future itself was cancelled; the run is gone either way
        except Exception:
            pass  # the run's own outcome is what `await handler` raises

    def cancelled(self) -> bool:
        """Whether the run was cancelled: by ``cancel_run()`` (as LlamaIndex) or ``cancel()``.

        After ``cancel_run()`` the future holds :class:`WorkflowCancelledByUser` (what
        ``await handler`` raises), so asyncio itself still sees a future with an exception:
        asyncio's own helpers (``gather``, ``shield``) get ``asyncio.Future.cancelled()``, so
        that ``gather(handler)`` raises ``WorkflowCancelledByUser``, not ``CancelledError``.
        """
        if super().cancelled():
            return True
        if self._run.status is not RunStatus.CANCELLED or not self.done():
            return False
        caller = sys._getframe(1).f_globals.get("__name__", "")
        return not (caller == "asyncio" or caller.startswith("asyncio."))

    def cancel(self, msg: Any | None = None) -> bool:
        """Cancel the run and this future (``await handler`` raises ``CancelledError``)."""
        self._run.cancel()
        return super().cancel(msg)

    async def send_event(self, event: Event, step: str | None = None) -> None:
        """Send ``event`` into the run, as ``handler.ctx.send_event`` does."""
        self.ctx.send_event(event, step=step)

    async def run_step(self) -> list[Event] | None:
        """Stepwise runs only: run the pending steps once and return the events they produced.

        The produced events are not dispatched: send them on with ``handler.ctx.send_event``.
        Returns ``None`` once the run has ended.

        Raises:
            ContextStateError: The run was not started with ``stepwise=True``.
        """
        if not self._run.stepwise:
            raise ContextStateError(
                "run_step() needs a stepwise run; start it with workflow.run(stepwise=True)."
            )
        if self.done() and not self._run.step_outputs:
            return None
        produced = await self._run.run_wave()
        return produced

    def execution_trace(self) -> list[tuple[str, type[Event], tuple[type[Event], ...]]]:
        """This run's completed step executions: ``(step, input class, output classes)``."""
        return list(self._run.trace)

    def get_stop_event(self) -> StopEvent | None:
        """The StopEvent that ended the run, or ``None`` while it runs or if it failed."""
        return self._run.stop_event

    async def stop_event_result(self) -> StopEvent:
        """Wait for the run and return its StopEvent (the event itself, not its ``result``)."""
        await self
        stop = self._run.stop_event
        if stop is None:
            raise ContextStateError("The run ended without a StopEvent.")
        return stop


__all__ = ["WorkflowHandler"]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
