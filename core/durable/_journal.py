"""Journaled calls: ``await ctx.journal(name, fn, *args, **kwargs)`` runs ``fn`` once per run.

A durable run (one a :class:`~batonflow.core.checkpoints.WorkflowCheckpointer` records) gets a
:class:`RunJournal` on its context. Each journaled call of a step execution is numbered in the
order the step makes it; its outcome is committed to the run store when ``fn`` returns (or
raises), keyed by the run, the step, the execution's id and that number. A step re-run after a
crash has the same execution id, so its calls find their recorded outcomes and ``fn`` is not
called again: the result is returned (decoded), the exception raised again. A call whose name
differs from the recorded one at its position is a :class:`JournalMismatchError` naming both.

A result the serializer cannot encode is refused before anything is recorded (the call ran:
its result cannot be kept). A retry of the step (its retry policy, in the same process) replays
recorded results, but calls again a call whose recorded outcome is an exception raised in an
earlier attempt, and records the new outcome in its place: retrying is what the policy is for.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

from ..data.serialization import BaseSerializer
from ..errors import JournalMismatchError, SerializationError
from . import _children
from ._records import JournalEntry


class RunJournal:
    """The journaled calls of one durable run, in its store.

    Args:
        store: The run store (it has ``journal_get`` and ``journal_put``).
        serializer: Encodes results and exceptions (the checkpointer's).
        run_id: The run.
        checkpointer: The ``WorkflowCheckpointer`` recording the run (its child runs are
            recorded by one of the same class, on the same store).
    """

    def __init__(
        self, store: Any, serializer: BaseSerializer, run_id: str, checkpointer: Any = None
    ) -> None:
        self.store = store
        self.serializer = serializer
        self.run_id = run_id
        self.checkpointer = checkpointer
        #: Per execution id: the attempt being counted and the next call's number.
        self._next: dict[int, tuple[int, int]] = {}

    def position(self, execution: int, attempt: int) -> int:
        """The number the next journaled call of ``execution`` (in ``attempt``) gets."""
        counted, number = self._next.get(execution, (attempt, 0))
        return number if counted == attempt else 0

    async def run_child(self, ctx: Any, ex: Any, workflow: Any, fields: dict[str, Any]) -> Any:
        """``ctx.run_child`` in this run: see :mod:`~batonflow.core.durable._children`."""
        return await _children.run_child(self, ctx, ex, workflow, fields)

    async def call(
        self,
        step: str,
        execution: int,
        attempt: int,
        name: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        """Run ``fn(*args, **kwargs)`` once for this position, or replay what it recorded.

        Raises:
            JournalMismatchError: The run recorded another call at this position.
            SerializationError: The result cannot be encoded (nothing was recorded).
            Exception: What ``fn`` raised, or the exception it recorded.
        """
        counted, number = self._next.get(execution, (attempt, 0))
        if counted != attempt:
            number = 0  # a new attempt makes its calls from the first again
        self._next[execution] = (attempt, number + 1)
        found: JournalEntry | None = self.store.journal_get(self.run_id, step, execution, number)
        if found is not None:
            if found.name != name:
                raise JournalMismatchError(
                    f"Step {step!r} (execution {execution}) made journaled call #{number} "
                    f"{name!r}, but run {self.run_id} recorded {found.name!r} at that position; "
                    "a step must make its journaled calls in the same order each time it runs. "
                    "Give each call its own stable name, make them one after another, or start "
                    "the run again."
                )
            if not (found.error and attempt > found.attempt):
                return self._replay(found)
        try:
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            self._record(step, execution, number, name, attempt, True, self._error_body(exc))
            raise
        try:
            body = self.serializer.serialize(result)
        except (SerializationError, RecursionError) as exc:
            raise SerializationError(
                f"ctx.journal({name!r}) in step {step!r}: the result of "
                f"{getattr(fn, '__qualname__', fn)!r} cannot be recorded, so a re-run would "
                f"call it again ({exc}). Return JSON values or pydantic models from it, or give "
                "the workflow a serializer that encodes the result."
            ) from exc
        self._record(step, execution, number, name, attempt, False, body)
        return result

    def _replay(self, found: JournalEntry) -> Any:
        value = self.serializer.deserialize(found.body)
        if found.error:
            if isinstance(value, BaseException):
                raise value
            raise RuntimeError(str(value))
        return value

    def _error_body(self, exc: Exception) -> str:
        try:
            return self.serializer.serialize(exc)
        except (SerializationError, RecursionError, TypeError, ValueError):
            # An exception the serializer cannot rebuild is replayed as a RuntimeError
            # carrying its type and message.
            return self.serializer.serialize(RuntimeError(f"{type(exc).__name__}: {exc}"))

    def _record(
        self,
        step: str,
        execution: int,
        number: int,
        name: str,
        attempt: int,
        error: bool,
        body: str,
    ) -> None:
        entry = JournalEntry(step, execution, number, name, attempt, error, body, time.time())
        self.store.journal_put(self.run_id, entry)


__all__ = ["RunJournal"]
