"""The in-memory run store: the same records as the SQLite store, gone with the process.

It is the checkpointer's default and the server's store when nothing is durable. Finished runs
are kept up to ``max_finished`` (oldest evicted first), so a long-lived process does not grow
with every run it ever ran.
"""

from __future__ import annotations

import builtins
import dataclasses
import threading
import time
from collections import OrderedDict
from collections.abc import Collection
from typing import Any

from ._budget import Budget, BudgetState, Usage, check_raise, no_run_error, total
from ._memory_queue import MemoryQueue
from ._records import (
    ENDED,
    Checkpoint,
    InboxItem,
    JournalEntry,
    RunFilter,
    RunRecord,
    StoredEvent,
    answered_error,
    apply_changes,
    check_checkpoint_id,
    check_limit,
    check_post,
    check_status,
    checkpoint_taken_error,
    implicit_record,
    no_checkpoint_error,
    run_exists_error,
    state_values,
    with_state_values,
    with_status,
)
from ._schedules import MemorySchedules


@dataclasses.dataclass(slots=True)
class _Run:
    #: ``None`` for a run known only by its event log (as in a SQL store: no record row).
    record: RunRecord | None
    checkpoints: builtins.list[Checkpoint] = dataclasses.field(default_factory=builtins.list)
    seqs: set[int] = dataclasses.field(default_factory=set)
    events: builtins.list[StoredEvent] = dataclasses.field(default_factory=builtins.list)
    inbox: builtins.list[InboxItem] = dataclasses.field(default_factory=builtins.list)
    #: Journaled calls by (step, execution, call).
    journal: dict[tuple[str, int, int], JournalEntry] = dataclasses.field(default_factory=dict)
    #: Its budget (``None``: none) and usage per step.
    budget: BudgetState | None = None
    usage: dict[str, Usage] = dataclasses.field(default_factory=dict)
    #: Untyped state as of each checkpoint that recorded changes: (seq, full?, changes).
    state: builtins.list[tuple[int, bool, dict[str, str | None]]] = dataclasses.field(
        default_factory=builtins.list
    )


class InMemoryCheckpointStore(MemorySchedules, MemoryQueue):
    """Runs, checkpoints, event logs and inboxes in dicts: fast, gone with the process.

    Args:
        max_finished: How many ended runs (completed, failed, cancelled) to keep; the oldest
            ended run is forgotten when one more ends. ``None`` keeps every run.
    """

    def __init__(self, *, max_finished: int | None = None) -> None:
        if max_finished is not None and max_finished < 0:
            raise ValueError(
                f"max_finished={max_finished!r} is negative; pass a count, or None to keep "
                "every run."
            )
        self.max_finished = max_finished
        self._lock = threading.Lock()
        self._runs: dict[str, _Run] = {}
        self._by_id: dict[str, Checkpoint] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()
        #: The run each idempotency key started (the SQL stores' unique index).
        self._keys: dict[str, str] = {}

    # -- runs ---------------------------------------------------------------------------------

    def create_run(self, record: RunRecord) -> None:
        """Record a new run.

        Raises:
            RunConflictError: A run with that id, or with its idempotency key, exists.
        """
        check_status(record.status)
        key = record.idempotency_key
        with self._lock:
            run = self._runs.get(record.run_id)
            if key is not None and key in self._keys:
                raise run_exists_error(record.run_id, "this store", key)
            if key is not None and (run is None or run.record is None):
                self._keys[key] = record.run_id
            if run is None:
                self._runs[record.run_id] = _Run(record)
            elif run.record is None:
                run.record = record
            else:
                raise run_exists_error(record.run_id, "this store")

    def set_status(
        self, run_id: str, status: str, *, result: str | None = None, error: str | None = None
    ) -> None:
        """Set a run's status, result and error; an ended run is left as it is."""
        check_status(status)
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.record is None or run.record.status in ENDED:
                return
            run.record = with_status(run.record, status, result, error)
            self._ended.pop(run_id, None)
            if status in ENDED:
                self._ended[run_id] = None
                self._evict()

    def finish_run(
        self,
        run_id: str,
        status: str,
        *,
        result: str | None = None,
        error: str | None = None,
        end: str | None = None,
    ) -> None:
        """Record how a run ended; with ``end``, also its last log entry (written first).

        A run that has ended already is left as it is: neither its status nor its log changes.
        """
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or (run.record is not None and run.record.status in ENDED):
                return
            if end is not None:
                run.events.append(StoredEvent(len(run.events) + 1, "end", end))
        self.set_status(run_id, status, result=result, error=error)

    def acquire(self, run_id: str) -> None:
        """Continue ``run_id`` here (a resume): a run that had stopped (interrupted, failed,
        cancelled) becomes ``running`` again; a completed run is left as it is."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.record is None:
                return
            if run.record.status in ("interrupted", "failed", "cancelled"):
                run.record = with_status(run.record, "running", None, None)
                self._ended.pop(run_id, None)

    def let_go(self, run_id: str) -> None:
        """Nothing to let go of: runs in memory are this process's alone."""

    def _evict(self) -> None:
        limit = self.max_finished
        while limit is not None and len(self._ended) > limit:
            run_id, _ = self._ended.popitem(last=False)
            self._forget(run_id)

    def _forget(self, run_id: str) -> None:
        run = self._runs.pop(run_id, None)
        if run is not None:
            for cp in run.checkpoints:
                self._by_id.pop(cp.id, None)
            if run.record is not None and run.record.idempotency_key is not None:
                self._keys.pop(run.record.idempotency_key, None)
        self._ended.pop(run_id, None)
        self.__dict__.get("_queue_entries", {}).pop(run_id, None)

    def runs(
        self,
        *,
        workflow_name: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> builtins.list[RunRecord]:
        """Runs, oldest first, optionally by workflow name and status (the newest ``limit``).

        Raises:
            ValueError: A negative ``limit``.
        """
        wanted = RunFilter(workflow_name, status, limit)
        with self._lock:
            records = [run.record for run in self._runs.values() if run.record is not None]
        return wanted.select(records)

    def run(self, run_id: str) -> RunRecord | None:
        """One run's record, or ``None``."""
        with self._lock:
            run = self._runs.get(run_id)
            return None if run is None else run.record

    def run_for_key(self, key: str) -> RunRecord | None:
        """The record of the run idempotency key ``key`` started, or ``None``."""
        with self._lock:
            run_id = self._keys.get(key)
            run = None if run_id is None else self._runs.get(run_id)
            return None if run is None else run.record

    def children(self, run_id: str) -> builtins.list[RunRecord]:
        """The runs forked from ``run_id``, oldest first."""
        with self._lock:
            records = [r.record for r in self._runs.values() if r.record is not None]
        return RunFilter().select(r for r in records if r.parent_run_id == run_id)

    def children_of(self, run_ids: Collection[str]) -> builtins.list[RunRecord]:
        """The runs forked from, or started as child runs by, any of ``run_ids``, oldest
        first."""
        wanted = set(run_ids)
        with self._lock:
            records = [r.record for r in self._runs.values() if r.record is not None]
        return RunFilter().select(r for r in records if r.parent_run_id in wanted)

    def delete(self, run_id: str) -> None:
        """Forget a run with its checkpoints, event log and inbox (its key is free again)."""
        with self._lock:
            self._forget(run_id)

    def ended_runs(
        self,
        before: float,
        *,
        workflow_name: str | None = None,
        exclude: Collection[str] = (),
        limit: int = 100,
    ) -> builtins.list[str]:
        """Ids of ended runs last changed before ``before``, oldest first (see the protocol)."""
        with self._lock:
            records = [run.record for run in self._runs.values() if run.record is not None]
        found = sorted(
            (
                r
                for r in records
                if r.status in ENDED
                and r.updated_at < before
                and (workflow_name is None or r.workflow_name == workflow_name)
                and r.workflow_name not in exclude
            ),
            key=lambda r: (r.updated_at, r.run_id),
        )
        return [r.run_id for r in found[:limit]]

    # -- checkpoints --------------------------------------------------------------------------

    def put(self, checkpoint: Checkpoint) -> None:
        """Store a checkpoint; a run not recorded yet is recorded as ``running``.

        Raises:
            CheckpointError: The id or the run's seq is taken, or the id is the made id of
                another checkpoint (see ``check_checkpoint_id``).
        """
        check_checkpoint_id(checkpoint)
        with self._lock:
            run = self._runs.get(checkpoint.run_id)
            if run is None:
                run = self._runs[checkpoint.run_id] = _Run(None)
            if run.record is None:
                run.record = implicit_record(checkpoint.run_id, checkpoint.workflow_name)
            if checkpoint.id in self._by_id or checkpoint.seq in run.seqs:
                raise checkpoint_taken_error(checkpoint)
            if checkpoint.state_changes is not None:
                state = checkpoint.ctx_data.get("state") or {}
                run.state.append(
                    (checkpoint.seq, not checkpoint.state_changes, state_values(state))
                )
                # Kept without the (partial) state: reads rebuild it from run.state.
                checkpoint = dataclasses.replace(
                    checkpoint,
                    ctx_data={**checkpoint.ctx_data, "state": with_state_values(state, {})},
                )
            run.checkpoints.append(checkpoint)
            run.seqs.add(checkpoint.seq)
            self._by_id[checkpoint.id] = checkpoint

    def _full(self, checkpoint: Checkpoint) -> Checkpoint:
        """``checkpoint`` with its whole state, rebuilt from the changes (under the lock)."""
        if checkpoint.state_changes is None:
            return checkpoint
        run = self._runs[checkpoint.run_id]
        data: dict[str, str] = {}
        for seq, full, changes in run.state:
            if seq > checkpoint.seq:
                break
            if full:
                data = {}
            apply_changes(data, changes)
        state = with_state_values(checkpoint.ctx_data["state"], data)
        return dataclasses.replace(
            checkpoint, ctx_data={**checkpoint.ctx_data, "state": state}, state_changes=None
        )

    def list(self, run_id: str) -> builtins.list[Checkpoint]:
        """A run's checkpoints, oldest first."""
        with self._lock:
            run = self._runs.get(run_id)
            return [] if run is None else [self._full(c) for c in run.checkpoints]

    def latest(self, run_id: str) -> Checkpoint | None:
        """A run's most recent checkpoint, or ``None``."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or not run.checkpoints:
                return None
            return self._full(run.checkpoints[-1])

    def get(self, checkpoint_id: str) -> Checkpoint:
        """One checkpoint by id.

        Raises:
            CheckpointError: No checkpoint has that id.
        """
        with self._lock:
            found = self._by_id.get(checkpoint_id)
            if found is not None:
                return self._full(found)
        raise no_checkpoint_error(checkpoint_id, "this store")

    # -- event log and inbox ------------------------------------------------------------------

    def append_event(self, run_id: str, kind: str, body: str, *, waiting: bool = False) -> int:
        """Append one entry to the run's event log and return its ``seq`` (from 1)."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                run = self._runs[run_id] = _Run(None)
            seq = len(run.events) + 1
            run.events.append(StoredEvent(seq, kind, body))
            if waiting and run.record is not None and run.record.status in ("running", "waiting"):
                run.record = dataclasses.replace(
                    run.record, status="waiting", waiting_seq=seq, updated_at=time.time()
                )
            return seq

    def events(
        self, run_id: str, after: int = 0, limit: int | None = None
    ) -> builtins.list[StoredEvent]:
        """The run's log entries with ``seq > after``, in order (at most ``limit``).

        Raises:
            ValueError: A negative ``limit``.
        """
        limit = check_limit(limit)
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                return []
            found = run.events[max(after, 0) :]
        return found[:limit] if limit is not None else found

    def post_event(self, run_id: str, body: str, *, answer: bool = False) -> int:
        """Commit an event sent to a run into its inbox; return its inbox ``seq``.

        Raises:
            RunConflictError: As :meth:`SqliteCheckpointStore.post_event`.
        """
        with self._lock:
            run = self._runs.get(run_id)
            record = None if run is None else run.record
            key = check_post(
                run_id, None if record is None else (record.status, record.waiting_seq), answer
            )
            assert run is not None and record is not None  # check_post raised otherwise
            if key is not None and any(item.key == key for item in run.inbox):
                raise answered_error(run_id)
            seq = len(run.inbox) + 1
            run.inbox.append(InboxItem(seq, body, key))
            if key is not None:
                run.record = dataclasses.replace(record, status="running", updated_at=time.time())
            return seq

    def inbox(self, run_id: str, after: int = 0) -> builtins.list[InboxItem]:
        """The run's inbox events with ``seq > after``, in order."""
        with self._lock:
            run = self._runs.get(run_id)
            return [] if run is None else run.inbox[max(after, 0) :]

    def journal_get(self, run_id: str, step: str, execution: int, call: int) -> JournalEntry | None:
        """The recorded outcome of one journaled call, or ``None``."""
        with self._lock:
            run = self._runs.get(run_id)
            return None if run is None else run.journal.get((step, execution, call))

    def journal_put(self, run_id: str, entry: JournalEntry) -> None:
        """Record a journaled call's outcome (replacing one at its position)."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                run = self._runs[run_id] = _Run(None)
            run.journal[(entry.step, entry.execution, entry.call)] = entry

    def journal(self, run_id: str) -> builtins.list[JournalEntry]:
        """The run's journaled calls, in the order they were recorded."""
        with self._lock:
            run = self._runs.get(run_id)
            entries = [] if run is None else list(run.journal.values())
        return sorted(entries, key=lambda e: (e.created_at, e.step, e.execution, e.call))

    # -- budgets (see core/durable/_budget.py) ------------------------------------------------

    def _budgeted(self, run_id: str) -> _Run:
        run = self._runs.get(run_id)
        if run is None or run.record is None:
            raise no_run_error(run_id)
        return run

    def set_budget(self, run_id: str, budget: Budget) -> None:
        """Give run ``run_id`` ``budget`` (replacing one it had)."""
        with self._lock:
            run = self._budgeted(run_id)
            blocked = None if run.budget is None else run.budget.blocked
            run.budget = BudgetState(budget, blocked)

    def budget(self, run_id: str) -> BudgetState | None:
        """Run ``run_id``'s budget, or ``None``."""
        with self._lock:
            run = self._runs.get(run_id)
            return None if run is None else run.budget

    def budget_and_usage(self, run_id: str) -> tuple[BudgetState | None, dict[str, Usage]]:
        """Run ``run_id``'s budget (or ``None``) and its usage per step."""
        return self.budget(run_id), self.usage(run_id)

    def budget_block(self, run_id: str, blocked: dict[str, Any]) -> None:
        """Mark the budget blocked by a call (``blocked``), the run ``waiting``."""
        with self._lock:
            run = self._budgeted(run_id)
            if run.budget is not None:
                run.budget = BudgetState(run.budget.budget, blocked)
            if run.record is not None and run.record.status == "running":
                run.record = with_status(run.record, "waiting", None, None)

    def budget_unblock(self, run_id: str) -> None:
        """The blocked call goes on: the budget is not blocked, the run ``running``."""
        with self._lock:
            run = self._budgeted(run_id)
            if run.budget is not None:
                run.budget = BudgetState(run.budget.budget, None)
            record = run.record
            if record is not None and record.status == "waiting" and record.waiting_seq is None:
                run.record = with_status(record, "running", None, None)

    def raise_budget(self, run_id: str, tokens: int = 0, cost: float = 0.0) -> BudgetState:
        """Add ``tokens`` and ``cost`` to run ``run_id``'s budget; return it as it is now.

        Raises:
            CheckpointError: The store has no such run.
            RunConflictError: The run has ended, or has no budget.
        """
        with self._lock:
            run = self._budgeted(run_id)
            state = check_raise(run_id, run.record, run.budget)
            run.budget = BudgetState(state.budget.raised(tokens, cost), state.blocked)
            return run.budget

    def usage_add(self, run_id: str, step: str, usage: Usage) -> None:
        """Add one call's ``usage`` to step ``step`` of run ``run_id``."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                run = self._runs[run_id] = _Run(None)
            run.usage[step] = run.usage.get(step, Usage()) + usage

    def usage(self, run_id: str) -> dict[str, Usage]:
        """Run ``run_id``'s usage per step (steps in the order they first used any)."""
        with self._lock:
            run = self._runs.get(run_id)
            return {} if run is None else dict(run.usage)

    def usage_totals(self, run_ids: Collection[str]) -> dict[str, Usage]:
        """The usage of each of ``run_ids`` that used any, summed over its steps."""
        found = {}
        for run_id in run_ids:
            by_step = self.usage(run_id)
            if by_step:
                found[run_id] = total(by_step)
        return found

    def close(self) -> None:
        """Nothing to close (the store's data stays until it is dropped)."""


__all__ = ["InMemoryCheckpointStore"]
