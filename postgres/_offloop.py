"""The PostgreSQL store's writes off the event loop: its writer threads, a run's writes in order.

Every write of :class:`~batonflow.postgres.store.PostgresCheckpointStore` is a network round
trip. Made on the event loop (as the synchronous store protocol has it), the loop waits for
each one and serves nothing meanwhile: a server replica spent most of its time so. The
store's ``a...`` methods (:class:`~batonflow.core.durable._store.OffLoopWrites`) make the same
writes on threads of the store's own (:class:`Writers`, as many as its pool has connections),
with the same code, so every guarantee of the synchronous write holds (fencing, rechecks after
a lost answer, riding out an outage); the loop awaits the outcome.

A run's writes are made in the order they were started: each waits for the run's previous
one (a checkpoint that records only the state keys its step changed needs the one before it
committed first), and a synchronous write of the run made meanwhile waits for them too
(:meth:`Writers.drain`), so a run's end is never written before its last checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from typing import Any, TypeVar

from batonflow.core.durable._records import Checkpoint, RunRecord
from batonflow.core.durable._sql_store import SqlRunStore
from batonflow.core.errors import StoreUnreachableError

T = TypeVar("T")
#: The most records of completed runs kept for :meth:`OffLoopStore.arun`.
_COMPLETED_KEPT = 1024


class Writers:
    """The store's writer threads, and the last write started for each run.

    Args:
        threads: How many writes are made at once (the store's pool size).
    """

    def __init__(self, threads: int) -> None:
        self._executor = ThreadPoolExecutor(
            max_workers=max(1, threads), thread_name_prefix="batonflow-pg-writer"
        )
        self._lock = threading.Lock()
        #: The last write started for each run with a write not done yet.
        self._last: dict[str, Future[Any]] = {}
        self._local = threading.local()

    def start(self, run_id: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Any:
        """Start ``fn(*args, **kwargs)`` on a writer thread after the run's previous write;
        return an asyncio future of its outcome (call it on the event loop)."""
        with self._lock:
            previous = self._last.get(run_id)
            future = self._executor.submit(self._call, previous, fn, args, kwargs)
            self._last[run_id] = future
        future.add_done_callback(lambda done: self._forget(run_id, done))
        return asyncio.wrap_future(future)

    def _call(
        self,
        previous: Future[Any] | None,
        fn: Callable[..., T],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> T:
        # The previous write was started first, so a thread runs it already: no deadlock. Its
        # outcome is its own caller's; this write is made whatever it was.
        if previous is not None:
            wait_for([previous])
        self._local.writing = True
        try:
            return fn(*args, **kwargs)
        finally:
            self._local.writing = False

    def _forget(self, run_id: str, done: Future[Any]) -> None:
        with self._lock:
            if self._last.get(run_id) is done:
                del self._last[run_id]

    def busy(self, run_id: str) -> bool:
        """Whether a write of the run started off the loop is not done yet."""
        with self._lock:
            return run_id in self._last

    def drain(self, run_id: str) -> None:
        """Wait until the run's writes started off the loop are done (a synchronous write of
        the run is made after them); nothing to wait for on a writer thread itself."""
        if getattr(self._local, "writing", False):
            return
        with self._lock:
            last = self._last.get(run_id)
        if last is not None:
            wait_for([last])

    def close(self) -> None:
        """Let the writes started finish, then stop the threads."""
        self._executor.shutdown(wait=True)


class OffLoopStore(SqlRunStore):
    """The ``a...`` methods of :class:`~batonflow.core.durable._store.OffLoopWrites` on a SQL
    store with :class:`Writers` (``_writers``), and its synchronous writes of a run made after
    the run's writes started off the loop."""

    _writers: Writers
    #: The records of the runs this store just completed (see :meth:`arun`).
    _completed: OrderedDict[str, RunRecord]

    def aput(self, checkpoint: Checkpoint) -> Any:
        """:meth:`put` on a writer thread; returns an awaitable."""
        return self._writers.start(checkpoint.run_id, self.put, checkpoint)

    def acreate_run(self, record: RunRecord) -> Any:
        """:meth:`create_run` on a writer thread; returns an awaitable."""
        return self._writers.start(record.run_id, self.create_run, record)

    def afinish_run(
        self,
        run_id: str,
        status: str,
        *,
        result: str | None = None,
        error: str | None = None,
        end: str | None = None,
    ) -> Any:
        """:meth:`finish_run` on a writer thread; returns an awaitable."""
        return self._writers.start(
            run_id, self.finish_run, run_id, status, result=result, error=error, end=end
        )

    def aappend_event(self, run_id: str, kind: str, body: str) -> Any:
        """:meth:`append_event` (not ``waiting``) on a writer thread; returns an awaitable.

        While the server is unreachable the writer thread waits and tries again (the run's
        later writes wait behind it, in order), until the store's outage budget is spent.
        """
        return self._writers.start(run_id, self._append_through_outage, run_id, kind, body)

    def _append_through_outage(self, run_id: str, kind: str, body: str) -> int:
        while True:
            try:
                return self.append_event(run_id, kind, body)
            except StoreUnreachableError as exc:
                if exc.retry_after is None:
                    raise
                time.sleep(exc.retry_after)

    def arun(self, run_id: str) -> Any:
        """:meth:`run` on a writer thread, after the run's writes; returns an awaitable.

        The record of a run this store just completed is the one its end wrote (a completed
        run never changes again): it is answered without a round trip, once.
        """
        record = self._completed.pop(run_id, None)
        if record is not None and not self._writers.busy(run_id):
            done = asyncio.get_running_loop().create_future()
            done.set_result(record)
            return done
        return self._writers.start(run_id, self.run, run_id)

    def _written_end(self, record: RunRecord) -> None:
        """Keep the record a completed run's end wrote, for :meth:`arun` (at most
        :data:`_COMPLETED_KEPT`: a run nobody reads after its end is forgotten)."""
        completed = self._completed
        if len(completed) >= _COMPLETED_KEPT:
            with contextlib.suppress(KeyError):
                completed.popitem(last=False)  # one call: safe beside the other threads
        completed[record.run_id] = record

    def put(self, checkpoint: Checkpoint) -> None:
        """:meth:`SqlRunStore.put`, after the run's writes started off the loop."""
        self._writers.drain(checkpoint.run_id)
        super().put(checkpoint)

    def finish_run(
        self,
        run_id: str,
        status: str,
        *,
        result: str | None = None,
        error: str | None = None,
        end: str | None = None,
    ) -> None:
        """:meth:`SqlRunStore.finish_run`, after the run's writes started off the loop."""
        self._writers.drain(run_id)
        super().finish_run(run_id, status, result=result, error=error, end=end)

    def delete(self, run_id: str) -> None:
        """:meth:`SqlRunStore.delete`, after the run's writes started off the loop."""
        self._writers.drain(run_id)
        self._completed.pop(run_id, None)
        super().delete(run_id)


__all__ = ["OffLoopStore", "Writers"]
