"""The PostgreSQL store's writes off the event loop: its writer threads, a run's writes in order.

Every write of :class:`~batonflow.postgres.store.PostgresCheckpointStore` is a network round
trip. Made on the event loop (as the synchronous store protocol has it), the loop waits for
each one and serves nothing meanwhile: a server replica spent most of its time so. The
store's ``a...`` methods (:class:`~batonflow.core.durable._store.OffLoopWrites`) make the same
writes on threads of the store's own (:class:`Writers`, up to as many as its pool has connections),
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
import queue
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any, TypeVar

from batonflow.core.durable._records import Checkpoint, RunRecord
from batonflow.core.durable._sql_store import SqlRunStore
from batonflow.core.errors import StoreUnreachableError

T = TypeVar("T")
#: The most records of completed runs kept for :meth:`OffLoopStore.arun`.
_COMPLETED_KEPT = 1024


#: One write: (run id, function, args, kwargs, the caller's future, the caller's loop).
_Job = tuple[str, Callable[..., Any], tuple[Any, ...], dict[str, Any], Any, Any]


class Writers:
    """The store's writer threads, a run's writes one after the other.

    Light on purpose (a write is a round trip of a few hundred microseconds, and a replica
    makes thousands a second): jobs go through one ``SimpleQueue``; a run with a write in
    progress keeps its next ones in its own queue, taken by the thread that finishes the one
    before; the outcomes go back to the event loop in batches (one wake-up of the loop for all
    the writes that ended meanwhile).

    Args:
        threads: How many writes are made at once (the store's pool size).
    """

    def __init__(self, threads: int) -> None:
        self._size = max(1, threads)
        self._threads: list[threading.Thread] = []
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        #: The runs with a write in progress, each with its writes waiting behind it.
        self._runs: dict[str, deque[_Job]] = {}
        #: Events set when a run's writes are all done, for the callers of drain().
        self._idle: dict[str, threading.Event] = {}
        #: Outcomes not yet handed to their loop: loop -> [(future, result, error)].
        self._outcomes: dict[Any, list[tuple[Any, Any, BaseException | None]]] = {}
        self._local = threading.local()
        self._closed = False
        #: Threads waiting for a job (a new one is started only when none is).
        self._waiting = 0

    def start(self, run_id: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Any:
        """Start ``fn(*args, **kwargs)`` on a writer thread after the run's previous write;
        return an asyncio future of its outcome (call it on the event loop)."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        job: _Job = (run_id, fn, args, kwargs, future, loop)
        with self._lock:
            if self._closed:
                job = None  # type: ignore[assignment]
            elif run_id in self._runs:
                self._runs[run_id].append(job)
                return future
            else:
                self._runs[run_id] = deque()
                if self._waiting:
                    self._waiting -= 1  # a waiting thread takes it
                elif len(self._threads) < self._size:
                    self._spawn()  # every thread is busy: one more, up to the pool's size
        if job is None:  # closed: the store's own call says so
            try:
                future.set_result(fn(*args, **kwargs))
            except Exception as exc:
                future.set_exception(exc)
            return future
        self._queue.put(job)
        return future

    def _spawn(self) -> None:
        thread = threading.Thread(
            target=self._work, name=f"batonflow-pg-writer-{len(self._threads)}", daemon=True
        )
        thread.start()
        self._threads.append(thread)

    def _work(self) -> None:
        self._local.writing = True
        while True:
            job = self._queue.get()
            if job is None:  # close(): the writes queued before it are done
                return
            while job is not None:
                run_id, fn, args, kwargs, future, loop = job
                try:
                    outcome = (future, fn(*args, **kwargs), None)
                except BaseException as exc:  # the caller's to handle, on its loop
                    outcome = (future, None, exc)
                idle = None
                with self._lock:
                    waiting = self._runs[run_id]
                    if waiting:
                        job = waiting.popleft()  # the run's next write, on this thread
                    else:
                        job = None
                        del self._runs[run_id]
                        idle = self._idle.pop(run_id, None)
                        self._waiting += 1  # before the caller hears: its next write is ours
                if idle is not None:
                    idle.set()
                self._hand_back(loop, outcome)

    def _hand_back(self, loop: Any, outcome: tuple[Any, Any, BaseException | None]) -> None:
        with self._lock:
            pending = self._outcomes.get(loop)
            if pending is not None:
                pending.append(outcome)
                return  # the loop was woken up for those already
            self._outcomes[loop] = [outcome]
        try:
            loop.call_soon_threadsafe(self._settle, loop)
        except RuntimeError:  # the loop is closed: nobody waits for it any more
            with self._lock:
                self._outcomes.pop(loop, None)

    def _settle(self, loop: Any) -> None:
        with self._lock:
            outcomes = self._outcomes.pop(loop, [])
        for future, result, error in outcomes:
            if future.cancelled():
                continue
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)

    @property
    def closing(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def busy(self, run_id: str) -> bool:
        """Whether a write of the run started off the loop is not done yet."""
        with self._lock:
            return run_id in self._runs

    def drain(self, run_id: str) -> None:
        """Wait until the run's writes started off the loop are done (a synchronous write of
        the run is made after them); nothing to wait for on a writer thread itself."""
        if getattr(self._local, "writing", False):
            return
        with self._lock:
            if run_id not in self._runs:
                return
            idle = self._idle.setdefault(run_id, threading.Event())
        idle.wait()

    def close(self) -> None:
        """Let the writes started finish, then stop the threads."""
        with self._lock:
            self._closed = True
            threads, self._threads = self._threads, []
        for _ in threads:
            self._queue.put(None)
        for thread in threads:
            thread.join()


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
                if exc.retry_after is None or self._writers.closing:
                    raise  # the budget is spent, or the store closes: the run is interrupted
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
