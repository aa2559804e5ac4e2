"""Ctrl-C and SIGTERM for the command line: stop a run cleanly, say how to continue it.

``asyncio.run`` turns Ctrl-C into a ``KeyboardInterrupt`` raised wherever the loop happens to
be, and cancels what is left; a workflow's handler then ends with an exception nobody reads
(``WorkflowHandler exception was never retrieved``) and a durable run is recorded as failed.
:func:`run_interruptibly` instead handles SIGINT and SIGTERM on the event loop: the first one
cancels the main coroutine, which stops its run (:func:`stop_handler`) and lets the caller
record it as interrupted; :class:`Interrupted` then tells the command which signal it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

#: The signals a command stops on.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: The exit code of a command stopped by a signal (as shells report Ctrl-C).
EXIT_INTERRUPTED = 130


class Interrupted(Exception):
    """The command was stopped by SIGINT or SIGTERM (after its run was stopped)."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(f"stopped by {signal_name}")
        self.signal_name = signal_name


def run_interruptibly(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, where SIGINT or SIGTERM cancels ``main`` and raises Interrupted.

    A second signal while ``main`` cleans up is ignored: cleaning up is quick, and cutting it
    short is what leaves runs recorded wrongly.

    Raises:
        Interrupted: A signal arrived; ``main`` has handled its cancellation.
    """

    async def runner() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        received: list[signal.Signals] = []

        def on_signal(sig: signal.Signals) -> None:
            if not received and task is not None:
                received.append(sig)
                task.cancel()

        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, on_signal, sig)
        try:
            return await main
        except asyncio.CancelledError:
            if received:
                raise Interrupted(received[0].name) from None
            raise
        finally:
            for sig in STOP_SIGNALS:
                loop.remove_signal_handler(sig)

    return asyncio.run(runner())


async def stop_handler(handler: Any) -> None:
    """Cancel a workflow run and wait until it has stopped, reading its outcome.

    Reading the outcome is what keeps asyncio from logging "exception was never retrieved".
    """
    outcome = handler.cancel_run()
    if asyncio.iscoroutine(outcome) or isinstance(outcome, asyncio.Future):
        with contextlib.suppress(BaseException):
            await outcome
    with contextlib.suppress(BaseException):
        await handler
    await asyncio.sleep(0)  # let the run's done-callbacks (its store record) run first


__all__ = ["EXIT_INTERRUPTED", "STOP_SIGNALS", "Interrupted", "run_interruptibly", "stop_handler"]
