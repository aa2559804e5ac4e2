"""A live run's pump: it follows the run to its end, then records how the run ended.

The server starts one pump task per run it runs (:meth:`RunManager._follow
<batonflow.apps._runs.RunManager._follow>`). It reads ``handler.stream_events()`` only to wake
the run's SSE readers, who read the store's event log. When the run ends, the pump writes the
stream events that waited for the store, then the run's status (in the server's wording) and
its log's last ``end`` entry in one write, waiting (without blocking the loop) while the
store's server is away. A run that failed because its checkpoint could not be encoded gets
:data:`DURABLE_HINT` added to its error.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

from ._wire import error_text, jsonable

if TYPE_CHECKING:
    from ._live import LiveRun
    from ._runs import RunManager

logger = logging.getLogger("batonflow.apps.server")

#: Added to the error of a run that failed because its checkpoint could not be encoded.
DURABLE_HINT = (
    " (This server is durable: it checkpoints every step so runs survive a restart, and a "
    "checkpoint must encode the run's state and stream events. Make those values "
    "serializable as said above, give the workflow serializer=PickleSerializer() for trusted "
    "data, or serve without checkpoints: batonflow serve --no-durable, or "
    "create_app(..., checkpoints=None).)"
)


def serialization_failure(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it was raised from) is a serialization error."""
    from batonflow.core.errors import SerializationError

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, SerializationError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


async def pump(manager: RunManager, live: LiveRun) -> None:
    """Follow ``live`` until it ends, waking its readers; then record how it ended."""
    from batonflow.core import InputRequiredEvent
    from batonflow.core.errors import (
        CheckpointError,
        LeaseLostError,
        WorkflowCancelledByUser,
    )

    result: Any = None
    error: str | None = None
    try:
        async for event in live.handler.stream_events():
            if isinstance(event, InputRequiredEvent):
                live.status = "waiting"
            live._notify()
        result = jsonable(await live.handler)
        status = "completed"
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # the server is shutting down: leave the run as stored
        status, error = "cancelled", "The run was cancelled."
    except WorkflowCancelledByUser:
        status, error = "cancelled", "The run was cancelled."
    except LeaseLostError as exc:
        # Another process holds the run now (it took it over, or it ended there): it goes
        # on there, nothing more is recorded or run here.
        logger.warning("this server stops running run %s: %s", live.run_id, exc)
        await manager.drop(live)
        return
    except CheckpointError as exc:
        # The store failed (full disk...): what it holds is intact, resume the run later.
        status, error = "interrupted", error_text(exc)
    except Exception as exc:
        status, error = "failed", error_text(exc)
        if manager.durable and serialization_failure(exc):
            error += DURABLE_HINT
    # Let the checkpointer record the outcome first (its done-callback is already
    # scheduled); _finish then only adds the server's wording of it.
    await asyncio.sleep(0)
    await _reachable(manager, live)
    await _record_end_when_reachable(manager, live, status, result, error)
    _finish(manager, live, status, result, error, recorded=True)


async def _record_end_when_reachable(
    manager: RunManager, live: LiveRun, status: str, result: Any, error: str | None
) -> None:
    """Record how the run ended, waiting while the store's server is away."""
    from batonflow.core.errors import StoreUnreachableError

    encoded = manager._outcomes.pop(live.run_id, None)
    while True:
        try:
            # The status (in the server's wording) and the ``end`` entry in one write:
            # a crash between two writes would leave an ended run whose readers wait
            # forever.
            written = record_end(
                manager, live.run_id, status, encoded[1] if encoded else None, result, error, True
            )
            if written is not None:
                await written
            return
        except StoreUnreachableError as exc:
            if exc.retry_after is None:
                logger.warning(
                    "Run %s ended %s but the store refused it: %s", live.run_id, status, exc
                )
                return
            await asyncio.sleep(exc.retry_after)
        except Exception as exc:  # a full disk: the run stays as recorded, resumable
            logger.warning("Run %s ended %s but the store refused it: %s", live.run_id, status, exc)
            return


async def _reachable(manager: RunManager, live: LiveRun) -> None:
    """Write the run's stream events that waited for the store, waiting (without
    blocking the loop) while its server is away, so that its end is recorded after them
    and is not lost to a database restart (the run would stay ``running`` for good)."""
    from batonflow.core.errors import CheckpointError, StoreUnreachableError

    checkpointer = manager.checkpointers[live.workflow_name]
    while True:
        try:
            checkpointer.flush_events(live.run_id)
            return
        except StoreUnreachableError as exc:
            if exc.retry_after is None:
                return  # _finish reports the store's error
            await asyncio.sleep(exc.retry_after)
        except CheckpointError:
            return


def _finish(
    manager: RunManager,
    live: LiveRun,
    status: str,
    result: Any,
    error: str | None,
    *,
    recorded: bool = False,
) -> None:
    live.status = status
    if recorded:
        manager.live.pop(live.run_id, None)
        live._notify()
        live.done.set()
        return
    encoded = manager._outcomes.pop(live.run_id, None)
    try:
        # The status (in the server's wording) and the ``end`` entry in one write: a
        # crash between two writes would leave an ended run whose readers wait forever.
        record_end(manager, live.run_id, status, encoded[1] if encoded else None, result, error)
    except Exception as exc:  # a full disk: the run stays as recorded, resumable
        logger.warning("Run %s ended %s but the store refused it: %s", live.run_id, status, exc)
    manager.live.pop(live.run_id, None)
    live._notify()
    live.done.set()


def record_end(
    manager: RunManager,
    run_id: str,
    status: str,
    encoded: str | None,
    result: Any,
    error: Any,
    off_loop: bool = False,
) -> Any:
    """Record the run's end (``off_loop``: off the loop if it can, returning an awaitable)."""
    end = json.dumps({"status": status, "result": result, "error": error}, ensure_ascii=False)
    write = manager.records.finish_run
    if off_loop:
        write = getattr(manager.records, "afinish_run", None) or write
    return write(run_id, status, result=encoded, error=error, end=end)


__all__ = ["DURABLE_HINT", "pump", "record_end", "serialization_failure"]
