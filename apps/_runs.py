"""The server's live runs, recorded in the one run store.

Each run started through the server is recorded by a :class:`~batonflow.core.
WorkflowCheckpointer` before any step runs: its id, start event and fields, ``traceparent``.
Every event the run streams is appended to the store's event log when it is written, with a
sequence number given once (the SSE ids), so a reader resumes a stream after a restart without
loss or duplicates. A pump task per run (``_pump.py``) follows ``handler.stream_events()``
only to wake the SSE readers, who read the log; when the run ends, one last ``end`` entry
carries its status, result or error.

Events sent to a run (``POST /runs/{id}/events``) are committed to the run's inbox before the
server answers 202; an answer to a run that waits for one is accepted once, atomically in the
store. A restarted server resumes its runs from their last checkpoint and delivers the inbox
events the checkpoint had not taken in.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

from batonflow.core.durable._records import ENDED

from . import _pump
from ._live import LiveRun as LiveRun
from ._live import RunStateError as RunStateError
from ._pump import DURABLE_HINT as DURABLE_HINT
from ._wire import error_text, jsonable
from .run_store import RunStore, StoredEvent

logger = logging.getLogger("batonflow.apps.server")

#: What a restarted server says about a run that was in progress and could not be restored.
INTERRUPTED = (
    "The server stopped while this run was in progress and it could not be restored; "
    "start it again."
)


async def _when_reachable(read: Any, *args: Any) -> Any:
    """``read()``, waited for (asynchronously) while the store's server is away: an event
    stream stays open through a database restart instead of breaking."""
    from batonflow.core.errors import StoreUnreachableError

    while True:
        try:
            return read(*args)
        except StoreUnreachableError as exc:
            if exc.retry_after is None:
                raise
            await asyncio.sleep(exc.retry_after)


class RunManager:
    """Starts, follows, answers and cancels the runs of one server.

    Args:
        workflows: The served workflows by name.
        store: Where runs are kept (a read view of a checkpoint store).
        heartbeat: Seconds between SSE keep-alive comments on an idle stream.
        checkpoints: A durable checkpoint store (``SqliteCheckpointStore``). When given it is
            the run store, every run records a checkpoint after each completed step, and a
            restarted server resumes runs that were in progress from their last completed
            step. Without it runs are recorded in ``store`` with no step checkpoints (a
            restarted server brings back only runs waiting for an answer).
        budgets: The budget of every run of a workflow, by name (``""``: the others').
    """

    def __init__(
        self,
        workflows: dict[str, Any],
        store: RunStore,
        heartbeat: float = 15.0,
        checkpoints: Any = None,
        budgets: dict[str, Any] | None = None,
    ) -> None:
        from batonflow.core.checkpoints import WorkflowCheckpointer

        self.workflows = workflows
        from ._budget_view import default_budget, load_seam

        load_seam(
            needed=bool(budgets)
        )  # the served flows loaded llama-index: count their runs' LLM calls
        self.durable = checkpoints is not None
        self.store = RunStore(backend=checkpoints) if checkpoints is not None else store
        self.records = self.store.backend
        self.heartbeat = heartbeat
        self.live: dict[str, LiveRun] = {}
        # How each run that just ended came out, as its checkpointer encoded it, until the
        # pump records it with the run's ``end`` entry (one write: see _pump.py).
        self._outcomes: dict[str, tuple[str, str | None, str | None]] = {}
        self.checkpoints = checkpoints
        self.checkpointers: dict[str, Any] = {
            name: WorkflowCheckpointer(
                workflow,
                store=self.records,
                disabled_steps=() if self.durable else list(workflow._graph().steps),
                on_end=self._ended,
                budget=default_budget(budgets, name),
            )
            for name, workflow in workflows.items()
        }
        from ._replicas import ReplicaSet, can_replicate

        #: The queues of workflows with limits (``apps/_queue.py``), else ``None``.
        self.queue: Any = None
        #: This server's part among replicas sharing a PostgreSQL store (else ``None``).
        self.replicas = ReplicaSet(self) if can_replicate(self.records) else None

    # -- starting -------------------------------------------------------------------------

    async def start(
        self,
        name: str,
        start_event: Any,
        start_fields: dict[str, Any],
        traceparent: str | None,
        idempotency_key: str | None = None,
        budget: Any = None,
    ) -> LiveRun:
        """Record a run of workflow ``name`` (off the loop where the store writes so), with its
        ``budget`` (``None``: the workflow's, if any), start it and its pump; return the live
        run.

        Raises:
            SerializationError: The start event cannot be encoded (nothing ran).
            DuplicateStartError: ``idempotency_key`` started a run already (nothing ran).
            IdempotencyKeyError: ``idempotency_key`` started another start's run.
            CheckpointError: The store refused the record (nothing ran).
        """
        from batonflow.core.checkpoints import RunInfo
        from batonflow.core.errors import SerializationError

        try:
            shown = jsonable(start_fields)
        except (ValueError, RecursionError) as exc:
            raise SerializationError(
                f"Cannot record the start fields ({exc}); they are nested too deeply: send "
                "a flatter body."
            ) from exc
        info = RunInfo(shown, traceparent, owner="server", name=name)
        handler = await self.checkpointers[name].astart(
            start_event=start_event, info=info, idempotency_key=idempotency_key, budget=budget
        )
        return self._follow(LiveRun(str(handler.run_id), name, self.workflows[name], handler))

    def _follow(self, live: LiveRun) -> LiveRun:
        self.live[live.run_id] = live
        live.pump = asyncio.get_running_loop().create_task(
            _pump.pump(self, live), name=f"batonflow-run-pump-{live.run_id}"
        )
        return live

    async def restore(self) -> int:
        """Bring back the runs a previous server left unfinished; return how many.

        With checkpoints, a run resumes from its last checkpoint (or from its recorded start
        event when it died before one). Without, only a run waiting for an answer comes back.
        Any other is marked ``interrupted``.
        """
        resumed = lost = 0
        for row in self.store.unfinished():
            if self.replicas is not None and (
                row.workflow not in self.workflows or not self.replicas.claim(row.run_id)
            ):
                continue  # another replica holds it and is alive, or serves it
            if self.adopt(row):
                resumed += 1
            else:
                lost += 1
        if self.replicas is not None:
            resumed += await self.replicas.start()
        if resumed or lost:
            logger.info(
                "resumed %d run(s) the previous server left unfinished%s",
                resumed,
                f"; {lost} could not be resumed (marked interrupted)" if lost else "",
            )
        return resumed

    def adopt(self, row: Any, *, checked: bool = False) -> bool:
        """Resume a stored unfinished run here; mark it interrupted when it cannot continue.

        A run another live process holds is left to it (``False``, nothing recorded).
        """
        from batonflow.core.errors import IncompatibleRunError, LeaseLostError, RunBusyError

        try:
            if not checked and self.replicas is not None and self.replicas.cannot_continue(row):
                return False  # left, not marked, to a replica whose code can continue it
            handler = self._reopen(row)
        except (RunBusyError, LeaseLostError) as exc:
            logger.warning("Run %s is not resumed here: %s", row.run_id, exc)
            return False
        except IncompatibleRunError as exc:  # checked before anything ran (see _versions)
            logger.warning("Run %s is not resumed: %s", row.run_id, exc)
            self._finish_stored(row.run_id, "interrupted", None, error_text(exc))
            return False
        if handler is None:
            self._finish_stored(row.run_id, "interrupted", None, INTERRUPTED)
            return False
        live = LiveRun(row.run_id, row.workflow, self.workflows[row.workflow], handler)
        live.status = "waiting" if row.status == "waiting" else "running"
        self._follow(live)
        return True

    async def drop(self, live: LiveRun) -> None:
        """Stop running ``live`` here without recording anything (another process owns it)."""
        self.checkpointers[live.workflow_name].release(live.run_id)
        self.live.pop(live.run_id, None)
        self._outcomes.pop(live.run_id, None)
        # The pump drops its own run when a write was refused: it must not await itself.
        if live.pump is not None and live.pump is not asyncio.current_task():
            live.pump.cancel()
            await asyncio.gather(live.pump, return_exceptions=True)
        with contextlib.suppress(Exception):
            outcome = live.handler.cancel_run()
            if inspect.isawaitable(outcome):
                await outcome
        live._notify()
        live.done.set()

    def _reopen(self, row: Any) -> Any:
        """A handler continuing ``row``'s run, or ``None`` when it cannot continue."""
        checkpointer = self.checkpointers.get(row.workflow)
        if checkpointer is None:
            return None
        if not self.durable and row.status != "waiting":
            return None
        from batonflow.core.errors import IncompatibleRunError, LeaseLostError, RunBusyError

        from ._budget_view import load_seam

        budget = getattr(self.records, "budget", None)
        load_seam(needed=budget is not None and budget(row.run_id) is not None)

        try:
            return checkpointer.resume(row.run_id)
        except (RunBusyError, LeaseLostError, IncompatibleRunError):
            raise  # another process runs it, or this code cannot: adopt says so
        except Exception as exc:
            logger.warning("Run %s could not be restored: %s", row.run_id, exc)
        return None

    # -- the pump (_pump.py) and the run's end ---------------------------------------------

    def _ended(self, run_id: str, status: str, result: str | None, error: str | None) -> None:
        """The checkpointer's ``on_end``: keep the outcome for the pump to record."""
        self._outcomes[run_id] = (status, result, error)

    def _finish_stored(self, run_id: str, status: str, result: Any, error: str | None) -> None:
        _pump.record_end(self, run_id, status, None, result, error)

    # -- talking to runs --------------------------------------------------------------------

    def _live_or_error(self, run_id: str, action: str) -> LiveRun:
        live = self.live.get(run_id)
        if live is None or live.done.is_set():
            row = self.store.get(run_id)
            state = row.status if row is not None else "unknown"
            if state in ("running", "waiting"):
                raise RunStateError(
                    f"Run {run_id!r} is {state} in another process, not in this server (a "
                    f"`batonflow run` or a server on the same store); {action} works in the "
                    "process that runs it."
                )
            raise RunStateError(
                f"Run {run_id!r} is {state}; {action} only works while a run is in progress."
            )
        return live

    def send(self, run_id: str, workflow: str, event: Any, *, answer: bool) -> str:
        """Commit ``event`` to the run's inbox (then deliver it); return the run's status.

        Raises:
            RunConflictError: The run has ended, or (``answer``) waits for nothing or its
                question was answered already.
            CheckpointError: The store refused the write (``StoreFullError``, ...).
        """
        self.checkpointers[workflow].send_event(run_id, event, answer=answer)
        live = self.live.get(run_id)
        if live is not None and live.status == "waiting" and answer:
            live.status = "running"
        record = self.records.run(run_id)
        return record.status if record is not None else "running"

    def resume(self, run_id: str) -> LiveRun:
        """Continue an interrupted or failed run from its last checkpoint, as a new run.

        The new run (a new id, so the old run's event log keeps its one ``end``) goes on with
        the events that were queued at the checkpoint; the steps before it do not run again.

        Raises:
            RunStateError: The run is in progress, completed or cancelled, its workflow is not
                served here, or it has no checkpoint to continue from.
        """
        row = self.store.get(run_id)
        if row is None:
            raise RunStateError(f"Run {run_id!r} is not in the run store.")
        if run_id in self.live or row.status not in ("interrupted", "failed"):
            raise RunStateError(
                f"Run {run_id!r} is {row.status}; only an interrupted or failed run can be "
                "resumed (it continues from its last checkpoint as a new run)."
            )
        checkpointer = self.checkpointers.get(row.workflow)
        latest = self.records.latest(run_id) if self.durable else None
        if checkpointer is None or latest is None:
            raise RunStateError(
                f"Run {run_id!r} has no checkpoint this server can continue from (its "
                f"workflow {row.workflow!r} must be served, with checkpoints on); start it "
                "again instead."
            )
        handler = checkpointer.run_from(latest)
        return self._follow(
            LiveRun(str(handler.run_id), row.workflow, self.workflows[row.workflow], handler)
        )

    async def cancel(self, run_id: str, wait: float = 10.0) -> str:
        """Cancel a run in progress and return its status once that took effect (or after
        ``wait`` seconds).

        A run held by another replica is asked through its inbox: the request is committed,
        so the replica running it, or the one that takes it over, cancels it.
        """
        live = self.live.get(run_id)
        if live is None and self.replicas is not None:
            return await self._cancel_elsewhere(run_id, wait)
        live = self._live_or_error(run_id, "cancelling")
        outcome = live.handler.cancel_run()
        if inspect.isawaitable(outcome):
            await outcome
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(live.done.wait(), wait)
        return live.status

    async def _cancel_elsewhere(self, run_id: str, wait: float) -> str:
        from batonflow.core.errors import RunConflictError

        assert self.replicas is not None
        row = self.store.get(run_id)
        if row is None or row.status not in ("running", "waiting"):
            state = row.status if row is not None else "unknown"
            raise RunStateError(
                f"Run {run_id!r} is {state}; cancelling only works while a run is in progress."
            )
        try:
            self.checkpointers[row.workflow].request_cancel(run_id)
        except RunConflictError as exc:
            raise RunStateError(str(exc)) from None
        deadline = asyncio.get_running_loop().time() + wait
        while True:
            changed = self.replicas.changed(run_id)
            row = self.store.get(run_id)
            if row is None or row.status in ENDED:
                return row.status if row is not None else "cancelled"
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return row.status  # asked: the replica running it will cancel it
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), min(remaining, 0.5))

    async def follow(self, run_id: str, after: int) -> AsyncIterator[StoredEvent | None]:
        """Yield the run's events after ``after``, live until it ends; ``None`` = heartbeat.

        A run held by another replica is followed through the database's event log.
        """
        ended = False
        while True:
            live = self.live.get(run_id)
            changed = live.changed if live is not None else None
            entries = await _when_reachable(self.store.events, run_id, after)
            for entry in entries:
                yield entry
                after = entry.seq
                ended = ended or entry.kind == "end"
            if entries:
                continue  # read again before waiting: more may have come meanwhile
            if changed is None or live is None or live.done.is_set():
                if ended:
                    return
                row = await _when_reachable(self.store.get, run_id)
                if row is None or row.status in ENDED or row.status == "interrupted":
                    for entry in self._last_entries(run_id, after, row):
                        yield entry
                    return
                if self.replicas is None:
                    return  # nobody here runs it (a CLI process, or it died unrecorded)
                # The run is held by another replica: its log grows in the database and a
                # NOTIFY wakes us (the heartbeat timeout re-reads it anyway).
                changed = self.replicas.changed(run_id)
            try:
                await asyncio.wait_for(changed.wait(), self.heartbeat)
            except TimeoutError:
                yield None

    def _last_entries(self, run_id: str, after: int, row: Any) -> Iterator[StoredEvent]:
        """The rest of an ended run's log, which always finishes with its ``end`` entry.

        The status and the end are committed together, so the end is there, maybe written
        since the caller's last read. A run ended by an older version, which wrote them
        apart, may lack it: its end is then made from the record (not stored), so readers
        never wait for one that will not come.
        """
        for entry in self.store.events(run_id, after):
            yield entry
            after = entry.seq
            if entry.kind == "end":
                return
        if row is not None:
            body = {"status": row.status, "result": row.result, "error": row.error}
            yield StoredEvent(after + 1, "end", body)

    async def close(self) -> None:
        """Stop following live runs (server shutdown); their stored state stays as it is.

        Nothing is recorded for them: they stay ``running`` or ``waiting`` with their
        checkpoints, and the next start resumes them. Among replicas, the order matters:
        the heartbeat and listener stop first (nothing new is taken over), then the runs
        stop here, and only then are their leases released, so another replica that takes
        one over at once never races a write from this process.
        """
        if self.replicas is not None:
            await self.replicas.stop()
        runs = list(self.live.values())
        if runs:
            if self.replicas is not None:
                what = "they are checkpointed and the other replicas take them over"
            elif self.checkpoints is not None:
                what = "they are checkpointed and resume at the next start"
            else:
                what = "without checkpoints, only those waiting for input survive a restart"
            logger.info("stopping with %d run(s) in progress: %s", len(runs), what)
        for live in runs:
            self.checkpointers[live.workflow_name].release(live.run_id)
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
        if self.replicas is not None:
            self.replicas.hand_over([live.run_id for live in runs])


__all__ = ["DURABLE_HINT", "INTERRUPTED", "LiveRun", "RunManager", "RunStateError"]
