"""A step boundary that waits for the run store: a checkpoint written off the loop, or one its
database could not take yet.

These functions are methods of :class:`~batonflow.core.engine._runtime.Run` (bound in its class body).
A step listener (the checkpointer) whose store writes off the event loop returns the write's
awaitable; one that finds the store's server away raises ``StoreUnreachableError`` with
``retry_after``. :func:`~batonflow.core.engine._executing.succeeded` then parks the boundary,
the step's worker awaits :func:`wait_at_boundary`, and the run stays held (its outputs queued,
nothing new started) until the listener's write is done. The run's other boundaries nest in
the same hold: the last one done dispatches.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..errors import StoreUnreachableError
from ._lanes import RUNNING, Execution

if TYPE_CHECKING:
    from ._runtime import Run


def release_hold(self: Run) -> None:
    """One step boundary is done: when no other holds the run, dispatch what it queued."""
    self._hold -= 1
    if self._hold:
        return  # another step's boundary waits for the store: it dispatches when done
    stop, self._held_stop = self._held_stop, None
    if stop is not None:
        self.complete(stop)
    else:
        self._kick_all()


async def wait_at_boundary(self: Run, ex: Execution) -> None:
    """Wait for the step listeners whose checkpoint is not written yet, then dispatch.

    Two kinds of listener wait here, asynchronously, so the loop, other runs and the server
    stay responsive: one that returned an awaitable (its store writes off the loop; it is
    awaited), and one that found the store's server away (it raised ``StoreUnreachableError``
    with ``retry_after``: it is called again after that pause, as is one whose awaitable
    raised so). The run stays held meanwhile (nothing new starts, the step's outputs wait),
    so the checkpoint, once written, is the run as the step left it. Until then the step
    counts as finished; a run that ends meanwhile ends without it.
    """
    boundary, left, wait = self._parked.pop(ex.id)
    self._deferring = False  # other workers start what is started while this one waits
    pending = None if isinstance(wait, int | float) else wait
    delay = 0.0 if pending is not None else float(wait)
    while True:
        if pending is None:
            try:
                await self._sleep(delay)
            except BaseException:
                self._hold -= 1
                raise
            if self.status is not RUNNING:
                self._hold -= 1
                return
        try:
            while left:
                if pending is None:
                    pending = left[0](boundary)
                if pending is not None:
                    written, pending = pending, None
                    await written
                left = left[1:]
        except asyncio.CancelledError:
            self._hold -= 1
            raise
        except StoreUnreachableError as error:
            if error.retry_after is not None:
                delay = error.retry_after
                continue
            self._hold -= 1
            self.fail(error, ex=ex)
            return
        except Exception as error:
            self._hold -= 1
            self.fail(error, ex=ex)
            return
        break
    if self.status is not RUNNING:
        self._hold -= 1  # it ended (cancelled, timed out) while the write was made
        return
    self._deferring = True  # what the release starts, this worker takes
    self._release_hold()


__all__ = ["release_hold", "wait_at_boundary"]
