"""The server's live runs: one pump task per run copies its event stream into a numbered log.

Each run started through the server gets a :class:`LiveRun`. A pump task is the only consumer
of ``handler.stream_events()``; it numbers every event (1, 2, …), writes it to the
:class:`~batonflow.apps.run_store.RunStore` and to an in-memory log, and wakes the SSE readers.
Readers never touch the handler's stream, so any number of them can follow one run and each can
resume from any sequence number. When the run ends, one last ``end`` entry carries its status,
result or error, and the run leaves the live table (the store answers from then on).

A run that asks for a human (an ``InputRequiredEvent`` on its stream) is ``waiting``; its
context is snapshotted (``ctx.to_dict()``) into the store so that a restarted server restores
it with ``Context.from_dict`` and the human's answer still finishes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ._wire import error_text, event_envelope, jsonable
from .run_store import RunStore, StoredEvent

logger = logging.getLogger("batonflow.apps.server")

#: What a restarted server says about a run that was in progress and could not be restored.
INTERRUPTED = (
    "The server stopped while this run was in progress and it could not be restored; "
    "start it again."
)


#: Added to the error of a run that failed because its checkpoint could not be encoded.
DURABLE_HINT = (
    " (This server is durable: it checkpoints every step so runs survive a restart, and a "
    "checkpoint must encode the run's state and stream events. Make those values "
    "serializable as said above, give the workflow serializer=PickleSerializer() for trusted "
    "data, or serve without checkpoints: batonflow serve --no-durable, or "
    "create_app(..., checkpoints=None).)"
)


def _serialization_failure(exc: BaseException) -> bool:
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


class RunStateError(RuntimeError):
    """An operation that does not fit the run's state (e.g. an event sent to a finished run)."""


@dataclass(eq=False)
class LiveRun:
    """A run in progress in this server process."""

    run_id: str
    workflow_name: str
    workflow: Any
    handler: Any
    status: str = "running"
    log: list[StoredEvent] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    pump: asyncio.Task[None] | None = None

    def after(self, seq: int) -> list[StoredEvent]:
        """Logged events with a sequence number above ``seq`` (the log is contiguous from 1)."""
        return self.log[max(seq, 0) :]

    def _notify(self) -> None:
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()


class RunManager:
    """Starts, follows, answers and cancels the runs of one server.

    Args:
        workflows: The served workflows by name.
        store: Where runs, events and snapshots are kept.
        heartbeat: Seconds between SSE keep-alive comments on an idle stream.
        checkpoints: A durable checkpoint store (``SqliteCheckpointStore``). When given, every
            run records a checkpoint after each completed step, and a restarted server resumes
            runs that were in progress from their last completed step.
    """

    def __init__(
        self,
        workflows: dict[str, Any],
        store: RunStore,
        heartbeat: float = 15.0,
        checkpoints: Any = None,
    ) -> None:
        self.workflows = workflows
        self.store = store
        self.heartbeat = heartbeat
        self.live: dict[str, LiveRun] = {}
        self.checkpoints = checkpoints
        self.checkpointers: dict[str, Any] = {}
        if checkpoints is not None:
            from batonflow.core.checkpoints import WorkflowCheckpointer

            self.checkpointers = {
                name: WorkflowCheckpointer(workflow, store=checkpoints)
                for name, workflow in workflows.items()
            }

    # -- starting -------------------------------------------------------------------------

    def start(
        self, name: str, start_event: Any, start_fields: dict[str, Any], traceparent: str | None
    ) -> LiveRun:
        """Start a run of workflow ``name`` and its pump; return the live run."""
        workflow = self.workflows[name]
        checkpointer = self.checkpointers.get(name)
        if checkpointer is not None:
            handler = checkpointer.run(start_event=start_event)
        else:
            handler = workflow.run(start_event=start_event)
        run_id = str(handler.run_id)
        self.store.create(run_id, name, jsonable(start_fields), traceparent)
        return self._follow(LiveRun(run_id, name, workflow, handler))

    def _follow(self, live: LiveRun) -> LiveRun:
        self.live[live.run_id] = live
        live.pump = asyncio.get_running_loop().create_task(
            self._pump(live), name=f"batonflow-run-pump-{live.run_id}"
        )
        return live

    async def restore(self) -> None:
        """Bring back the runs a previous server left unfinished.

        A run waiting for a human is restored from its snapshot; a run that was in progress
        resumes from its last checkpoint when checkpoints are on. Any other is marked
        ``interrupted``.
        """
        resumed = lost = 0
        for row in self.store.unfinished():
            handler = self._reopen(row)
            if handler is None:
                last = len(self.store.events(row.run_id))
                self._finish_stored(row.run_id, last, "interrupted", None, INTERRUPTED)
                lost += 1
                continue
            status = "waiting" if row.status == "waiting" else "running"
            workflow = self.workflows[row.workflow]
            live = LiveRun(row.run_id, row.workflow, workflow, handler, status=status)
            live.log = self.store.events(row.run_id)
            self.store.update(row.run_id, status=status, keep_snapshot=True)
            self._follow(live)
            resumed += 1
        if resumed or lost:
            logger.info(
                "resumed %d run(s) the previous server left unfinished%s",
                resumed,
                f"; {lost} could not be resumed (marked interrupted)" if lost else "",
            )

    def _reopen(self, row: Any) -> Any:
        """A handler continuing ``row``'s run, or ``None`` when it cannot continue."""
        workflow = self.workflows.get(row.workflow)
        if workflow is None:
            return None
        try:
            if row.status == "waiting" and row.snapshot is not None:
                from batonflow.core import Context

                return workflow.run(ctx=Context.from_dict(workflow, row.snapshot))
            checkpointer = self.checkpointers.get(row.workflow)
            if checkpointer is not None and self.checkpoints.latest(row.run_id) is not None:
                return checkpointer.resume(row.run_id)
        except Exception as exc:
            logger.warning("Run %s could not be restored: %s", row.run_id, exc)
        return None

    # -- the pump -------------------------------------------------------------------------

    async def _pump(self, live: LiveRun) -> None:
        from batonflow.core import InputRequiredEvent
        from batonflow.core.errors import WorkflowCancelledByUser

        result: Any = None
        error: str | None = None
        try:
            async for event in live.handler.stream_events():
                self._append(live, "event", event_envelope(event))
                if isinstance(event, InputRequiredEvent):
                    await self._snapshot_waiting(live)
            result = jsonable(await live.handler)
            status = "completed"
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the server is shutting down: leave the run as stored
            status, error = "cancelled", "The run was cancelled."
        except WorkflowCancelledByUser:
            status, error = "cancelled", "The run was cancelled."
        except TimeoutError as exc:
            status, error = "timed_out", error_text(exc)
        except Exception as exc:
            status, error = "failed", error_text(exc)
            if self.checkpoints is not None and _serialization_failure(exc):
                error += DURABLE_HINT
        self._finish(live, status, result, error)

    def _append(self, live: LiveRun, kind: str, body: dict[str, Any]) -> StoredEvent:
        entry = StoredEvent(len(live.log) + 1, kind, {"seq": len(live.log) + 1, **body})
        self.store.append_event(live.run_id, entry.seq, kind, entry.body)
        live.log.append(entry)
        live._notify()
        return entry

    async def _snapshot_waiting(self, live: LiveRun) -> None:
        # Let the engine settle the step that asked, so the snapshot shows the run idle.
        for _ in range(3):
            await asyncio.sleep(0)
        snapshot: dict[str, Any] | None = None
        try:
            snapshot = live.handler.ctx.to_dict()
        except Exception as exc:
            logger.warning(
                "Run %s: context snapshot failed (%s); it will not survive a restart.",
                live.run_id,
                exc,
            )
        live.status = "waiting"
        self.store.update(live.run_id, status="waiting", snapshot=snapshot)

    def _finish(self, live: LiveRun, status: str, result: Any, error: str | None) -> None:
        live.status = status
        self._append(live, "end", {"status": status, "result": result, "error": error})
        self.store.update(live.run_id, status=status, result=result, error=error)
        self.live.pop(live.run_id, None)
        live.done.set()

    def _finish_stored(
        self, run_id: str, last_seq: int, status: str, result: Any, error: str | None
    ) -> None:
        seq = last_seq + 1
        body = {"seq": seq, "status": status, "result": result, "error": error}
        self.store.append_event(run_id, seq, "end", body)
        self.store.update(run_id, status=status, result=result, error=error)

    # -- talking to runs --------------------------------------------------------------------

    def _live_or_error(self, run_id: str, action: str) -> LiveRun:
        live = self.live.get(run_id)
        if live is None or live.done.is_set():
            row = self.store.get(run_id)
            state = row.status if row is not None else "unknown"
            raise RunStateError(
                f"Run {run_id!r} is {state}; {action} only works while a run is in progress."
            )
        return live

    def send(self, run_id: str, event: Any) -> LiveRun:
        """Send ``event`` into a run in progress (human in the loop)."""
        live = self._live_or_error(run_id, "sending an event")
        live.handler.ctx.send_event(event)
        if live.status == "waiting":
            live.status = "running"
            self.store.update(run_id, status="running")
        return live

    async def cancel(self, run_id: str, wait: float = 10.0) -> str:
        """Cancel a run in progress and return its final status."""
        live = self._live_or_error(run_id, "cancelling")
        outcome = live.handler.cancel_run()
        if inspect.isawaitable(outcome):
            await outcome
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(live.done.wait(), wait)
        return live.status

    async def follow(self, run_id: str, after: int) -> AsyncIterator[StoredEvent | None]:
        """Yield the run's events after ``after``, live until it ends; ``None`` = heartbeat."""
        live = self.live.get(run_id)
        if live is None:
            for entry in self.store.events(run_id, after):
                yield entry
            return
        while True:
            changed = live.changed
            for entry in live.after(after):
                yield entry
                after = entry.seq
            if live.done.is_set() and not live.after(after):
                return
            try:
                await asyncio.wait_for(changed.wait(), self.heartbeat)
            except TimeoutError:
                yield None

    async def close(self) -> None:
        """Stop following live runs (server shutdown); their stored state stays as it is."""
        runs = list(self.live.values())
        if runs:
            what = (
                "they are checkpointed and resume at the next start"
                if self.checkpoints is not None
                else "without checkpoints, only those waiting for input survive a restart"
            )
            logger.info("stopping with %d run(s) in progress: %s", len(runs), what)
        pumps = [live.pump for live in runs if live.pump is not None]
        for pump in pumps:
            pump.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        for live in runs:
            with contextlib.suppress(Exception):
                outcome = live.handler.cancel_run()
                if inspect.isawaitable(outcome):
                    await outcome
        self.live.clear()


__all__ = ["DURABLE_HINT", "INTERRUPTED", "LiveRun", "RunManager", "RunStateError"]
