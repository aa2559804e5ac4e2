"""A step boundary that waits for the run store: a checkpoint written off the loop, or one its
database could not take yet.

A step listener (the checkpointer) whose store writes off the event loop returns the write's
awaitable; one that finds the store's server away raises ``StoreUnreachableError`` with
``retry_after``. :meth:`~._executing.StepRunner.succeeded` then parks the boundary here
(:attr:`Boundaries.parked`), the step's worker awaits :meth:`Boundaries.wait_at`, and the run
stays held (its outputs queued, nothing new started) until the listener's write is done. The run's other boundaries nest in the
same hold (``Run.hold``): the last one done dispatches (:meth:`Boundaries.release_hold`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import StoreUnreachableError
from ._lanes import RUNNING, Execution


class Boundaries:
    """The step boundaries of one run that hold it: released, or parked for the store."""

    __slots__ = ("parked",)

    def __init__(self) -> None:
        # No reference to the run (it would make a cycle): an execution has one (``ex.run``).
        #: Step boundaries waiting for the store, by execution id: (boundary, the listeners
        #: left to call, seconds to wait before calling the first, or the awaitable the first
        #: returned).
        self.parked: dict[int, tuple[Any, tuple[Any, ...], Any]] = {}

    def release_hold(self, ex: Execution) -> None:
        """The step boundary of ``ex`` is done: when no other holds the run, dispatch what it
        queued."""
        run = ex.run
        run.hold -= 1
        if run.hold:
            return  # another step's boundary waits for the store: it dispatches when done
        stop, run.held_stop = run.held_stop, None
        if run.status is not RUNNING:
            return  # ended meanwhile: nothing to dispatch
        if stop is not None:
            run.complete(stop)
        else:
            run.executions.kick_all()

    async def wait_at(self, ex: Execution) -> None:
        """Wait for the step listeners whose checkpoint is not written yet, then dispatch.

        Two kinds of listener wait here, asynchronously, so the loop, other runs and the
        server stay responsive: one that returned an awaitable (its store writes off the loop;
        it is awaited), and one that found the store's server away (it raised
        ``StoreUnreachableError`` with ``retry_after``: it is called again after that pause, as
        is one whose awaitable raised so). The run stays held meanwhile (nothing new starts,
        the step's outputs wait), so the checkpoint, once written, is the run as the step left
        it. Until then the step counts as finished; a run that ends meanwhile ends without it.
        """
        run = ex.run
        boundary, left, wait = self.parked.pop(ex.id)
        run.executions.deferring = False  # other workers start what starts while this waits
        pending = None if isinstance(wait, int | float) else wait
        delay = 0.0 if pending is not None else float(wait)
        while True:
            if pending is None:
                try:
                    await run.sleep(delay)
                except BaseException:
                    run.hold -= 1
                    raise
                if run.status is not RUNNING:
                    run.hold -= 1
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
                run.hold -= 1
                raise
            except StoreUnreachableError as error:
                if error.retry_after is not None:
                    delay = error.retry_after
                    continue
                run.hold -= 1
                run.fail(error, ex=ex)
                return
            except Exception as error:
                run.hold -= 1
                run.fail(error, ex=ex)
                return
            break
        if run.status is not RUNNING:
            run.hold -= 1  # it ended (cancelled, timed out) while the write was made
            return
        run.executions.deferring = True  # what the release starts, this worker takes
        self.release_hold(ex)


__all__ = ["Boundaries"]
