"""Recording a durable run as it goes: its stream events, a checkpoint per step, its end.

These functions are methods of :class:`~batonflow.core.checkpoints.WorkflowCheckpointer`
(bound in its class body): ``_attach`` hooks the run's stream to the store's event log,
``_on_step`` writes the checkpoint of each completed step (with only the state keys it
changed), ``_watch`` records how the run ended.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Iterable
from typing import TYPE_CHECKING, Any

from ..data._state_serde import encode_untyped
from ..data.events import Event, InputRequiredEvent, InternalDispatchEvent, StartEvent, StopEvent
from ..data.serialization import qualified_name
from ..engine._lanes import CURRENT_EXECUTION
from ..engine._snapshot import dump
from ..errors import CheckpointError, SerializationError, StoreUnreachableError
from . import _idempotency
from ._budget import Budget, guard_for
from ._journal import RunJournal
from ._records import Checkpoint, RunRecord, checkpoint_id, with_state_values
from ._restarts import Interrupted, announce
from ._store import encode, event_body, outcome

if TYPE_CHECKING:
    from ..engine.context import Context
    from ..engine.handler import WorkflowHandler
    from ..engine.hooks import StepBoundary
    from .checkpoints import RunInfo, WorkflowCheckpointer

logger = logging.getLogger("batonflow.core")


def new_run(
    self: WorkflowCheckpointer,
    start_event: StartEvent | None,
    run_id: str | None,
    info: RunInfo,
    kwargs: dict[str, Any],
    key: str | None = None,
    *,
    look_up: bool = True,
) -> tuple[RunRecord, StartEvent, bool]:
    """The record of a new run (see ``WorkflowCheckpointer.start``), its start event and
    whether it runs stepwise; ``key`` is its (checked) idempotency key. With ``look_up``,
    a key that started a run already is found first (a read); without, the record's insert
    finds it (the unique index refuses it; the caller then raises what a retry gets).

    Raises:
        SerializationError: The start event or the start fields cannot be encoded.
        DuplicateStartError: ``key`` started a run already.
        IdempotencyKeyError: ``key`` started a run with another workflow or start event.
    """
    run_id = str(run_id or uuid.uuid4().hex)
    stepwise = bool(kwargs.pop("stepwise", False))
    graph = self.workflow._graph()
    event = self.workflow._start_event(graph, start_event, kwargs)
    encoded = encode(self.serializer, event, "the start event")
    name = info.name or self.workflow.workflow_name
    if key is not None and look_up:
        _idempotency.started(self, key, name, encoded)
    shown = dict(info.input) if info.input is not None else event.model_dump(mode="json")
    try:
        shown_text = json.dumps(shown, separators=(",", ":"), default=repr)
    except (TypeError, ValueError, RecursionError) as exc:
        raise SerializationError(
            f"Cannot record the start fields of run {run_id} ({type(exc).__name__}: "
            f"{exc}); send plain JSON values nested less deeply."
        ) from exc
    now = time.time()
    record = RunRecord(
        run_id,
        name,
        "running",
        now,
        now,
        start_event=encoded,
        input=shown_text,
        traceparent=info.traceparent,
        owner=info.owner,
        pid=os.getpid(),
        flow_ref=info.flow_ref,
        idempotency_key=key,
        parent_run_id=info.parent_run_id,
        parent_step=info.parent_step,
        parent_kind="child" if info.parent_run_id is not None else None,
        workflow_version=self.workflow.version,
    )
    return record, event, stepwise


def begin(
    self: WorkflowCheckpointer,
    run_id: str,
    event: StartEvent,
    ctx: Context[Any] | None,
    stepwise: bool,
    budget: Budget | None = None,
) -> WorkflowHandler:
    """Start the recorded run ``run_id`` (its ``budget`` given) and record it as it goes."""
    self._track(run_id, start=0 if ctx is not None else 1)
    handler = self._launch(run_id=run_id, start_event=event, ctx=ctx, stepwise=stepwise)
    self._attach(handler, budget=budget)
    if ctx is not None:
        # A run that starts from an existing state: resuming it needs that state.
        self._put(run_id, None, None, (), dict(handler.ctx.to_dict(self.serializer)))
    self._watch(handler)
    return handler


def track(self: WorkflowCheckpointer, run_id: str, start: int) -> None:
    self._seq[run_id] = itertools.count(start)


def attach(
    self: WorkflowCheckpointer,
    handler: WorkflowHandler,
    *,
    inbox_seq: int = 0,
    budget: Budget | bool | None = True,
    resumed: Interrupted | None = None,
) -> None:
    """Record the run's stream events in the store's event log as they are written; a
    ``resumed`` run first says which steps run again (``StepRestarted``); guard its LLM calls
    with its ``budget`` (``True``: the one the store keeps for it, a resume)."""
    run_id = handler.run_id
    self._live[run_id] = handler
    self._inbox[run_id] = inbox_seq
    run = handler._run
    store = self.store
    if resumed is not None:
        announce(store, run, resumed)
    if hasattr(store, "journal_put"):  # ctx.journal records its calls in the run store
        handler.ctx._journal = RunJournal(store, self.serializer, run_id, self)
    handler.ctx._budget = guard_for(store, run_id, budget)

    def unanswered(waiter_id: str) -> None:
        # The question the expired wait asked: its waiter_event, or one written before it.
        waiter = run.waiters.get(waiter_id)
        asked = waiter.question if waiter is not None else None
        if asked is None:
            asked = self._asked.get(run_id, {}).get(waiter_id)
        if asked is not None:
            run.loop.call_soon(self._unwait, run_id, asked)

    run.waits.on_unanswered.append(unanswered)

    def tagged(event: Any) -> str:
        # The step execution writing it, if any: after a crash, its entries are told apart.
        cell = CURRENT_EXECUTION.get()
        ex = None if cell is None else cell[0]
        if ex is None or ex.run is not run:
            return event_body(event)
        return event_body(event, step=ex.lane.spec.name, execution=ex.id)

    def record(event: Any) -> None:
        if isinstance(event, InternalDispatchEvent):
            return
        # A question: an InputRequiredEvent, or what a wait_for_event asked with.
        asks = isinstance(event, InputRequiredEvent) or any(
            w.question is event for w in run.waiters.values()
        )
        backlog = self._backlog.get(run_id)
        if backlog is not None:
            backlog.append((event if asks else tagged(event), asks))  # in order
            return
        if asks:
            # A question is written once its step has settled (a step may write it before
            # it waits), with what the run then waits for: an answer is checked against that
            # by whoever takes it, also a replica that does not run it. Later events queue.
            self._backlog[run_id] = [(event, True)]
            run.loop.call_soon(self._flush_later, run_id)
            return
        off_loop = self._off_loop
        if off_loop is not None and not asks:
            # Written off the loop, before the run's next checkpoint (the store keeps a run's
            # writes in order); a failure fails the run, as it would have failed the step.
            written = off_loop.aappend_event(run_id, "event", tagged(event))
            written.add_done_callback(lambda done: _appended(run, event, done))
            return
        body = tagged(event)
        try:
            store.append_event(run_id, "event", body, waiting=asks)
        except StoreUnreachableError as exc:
            if exc.retry_after is None:
                if not isinstance(event, StopEvent):
                    raise
                logger.warning(
                    "Run %s: its %s could not be recorded: %s", run_id, type(event).__name__, exc
                )
                return
            # The store's server is away (a restart): the event waits, in order, and is
            # written before the step's checkpoint (on_step) or by a timer, whichever first.
            self._backlog[run_id] = [(body, False)]
            run.loop.call_later(exc.retry_after, self._flush_later, run_id)
            return
        except CheckpointError as exc:
            if not isinstance(event, StopEvent):
                raise  # a step's event: the step fails with the store's error
            # The run is ending (its result, a failure, a cancel, a timeout; all StopEvents)
            # and must end, not stop half-way through: its record stays as last written,
            # so it is resumable once the store works again.
            logger.warning(
                "Run %s: its %s could not be recorded: %s", run_id, type(event).__name__, exc
            )
            return

    run.stream.recorder = record


def _appended(run: Any, event: Event, done: asyncio.Future[int]) -> None:
    """The outcome of a stream event written off the loop (see :func:`attach`)."""
    if done.cancelled() or done.exception() is None:
        return
    error = done.exception()
    if isinstance(event, StopEvent) or not isinstance(error, Exception):
        # The run is ending: it ends, its record stays as last written (resumable).
        logger.warning(
            "Run %s: its %s could not be recorded: %s", run.run_id, type(event).__name__, error
        )
        return
    run.fail(error)


def flush_events(self: WorkflowCheckpointer, run_id: str) -> None:
    """Write the run's stream events that waited for the store, in order.

    Raises:
        StoreUnreachableError: The store is still away (the rest keep waiting).
    """
    backlog = self._backlog.get(run_id)
    while backlog:
        item, asks = backlog[0]
        handler = self._live.get(run_id)
        body = question_body(item, handler) if asks else item
        self.store.append_event(run_id, "event", body, waiting=asks)
        if asks and handler is not None:
            # The waits it asked for (those that asked nothing themselves: a question written
            # before the wait), to ask it again while they still wait (ask_again).
            asked = self._asked.setdefault(run_id, {})
            for w in handler._run.waiters.values():
                if w.question is None:
                    asked.setdefault(w.waiter_id, item)
        backlog.pop(0)
        if asks and handler is not None:
            # Snapshot the run so an answer given later finds the question after a restart.
            handler._run.loop.call_soon(self._waiting_snapshot, run_id)
    self._backlog.pop(run_id, None)


def ask_again(self: WorkflowCheckpointer, run_id: str) -> None:
    """After an answer was taken: a run whose steps still wait for a question they asked
    (several tools asked at once) asks it again, so the run is ``waiting`` for it, not
    ``running`` with its question gone."""
    handler = self._live.get(run_id)
    if handler is None or handler.is_done() or run_id in self._backlog:
        return  # ended, or a question is about to be written anyway
    asked = self._asked.get(run_id, {})
    open_questions = [
        w.question if w.question is not None else asked.get(w.waiter_id)
        for w in handler._run.waiters.values()
        if w.future is not None and not w.future.done()
    ]
    questions = [q for q in open_questions if q is not None]
    record = self.store.run(run_id)
    if not questions or record is None or record.status != "running":
        return
    self._backlog[run_id] = [(questions[-1], True)]
    self._flush_later(run_id)


def unwait(self: WorkflowCheckpointer, run_id: str, question: Any) -> None:
    """After a ``wait_for_event`` that asked ``question`` timed out: a run ``waiting`` for that
    question is ``running`` again (its step went on), so the console offers no answer form and
    an answer is refused (``409``) instead of being taken and dropped. Another step's question
    that still waits is asked again (:func:`ask_again`)."""
    handler = self._live.get(run_id)
    if handler is None or handler.is_done() or run_id in self._backlog:
        return  # ended, or a question is about to be written (it decides the status)
    if any(
        w.question is question or self._asked.get(run_id, {}).get(w.waiter_id) is question
        for w in handler._run.waiters.values()
        if w.future is not None and not w.future.done()
    ):
        return  # another wait asked the same question and still waits
    record = self.store.run(run_id)
    if record is None or record.status != "waiting" or record.waiting_seq is None:
        return
    logged = self.store.events(run_id, after=record.waiting_seq - 1, limit=1)
    if not logged or not _same_event(logged[0].body, question):
        return  # the run waits for another question now
    self.store.set_status(run_id, "running")
    self._ask_again(run_id)


def _same_event(body: str, event: Any) -> bool:
    """Whether the log entry ``body`` is ``event`` (its type and fields)."""
    try:
        logged, mine = json.loads(body), json.loads(event_body(event))
    except (ValueError, TypeError):
        return False
    return bool(
        logged.get("qualified_name") == mine["qualified_name"]
        and logged.get("value") == mine["value"]
    )


def question_body(event: Any, handler: WorkflowHandler | None) -> str:
    """The log entry of a question: the event, and the steps that wait in
    ``ctx.wait_for_event`` now (``waiting_for``: step, event type, waiter id, requirements)."""
    waits = handler.ctx.waiting_for() if handler is not None else []
    return event_body(
        event,
        waiting_for=[
            {
                "step": w.step,
                "type": w.type_name.rpartition(".")[2],
                "qualified_name": w.type_name,
                "waiter_id": w.waiter_id,
                "requirements": w.requirements,
            }
            for w in waits
        ],
    )


def flush_later(self: WorkflowCheckpointer, run_id: str) -> None:
    """The timer of :func:`flush_events`: a run that waits (for an answer) has no step
    boundary to write its events at."""
    handler = self._live.get(run_id)
    if run_id not in self._backlog or handler is None:
        return
    try:
        self._flush_events(run_id)
    except StoreUnreachableError as exc:
        if exc.retry_after is not None:
            handler._run.loop.call_later(exc.retry_after, self._flush_later, run_id)
            return
        handler._run.fail(exc)
    except CheckpointError as exc:
        handler._run.fail(exc)


def waiting_snapshot(self: WorkflowCheckpointer, run_id: str) -> None:
    handler = self._live.get(run_id)
    if handler is None or handler.is_done() or run_id not in self._seq:
        return
    try:
        self._put(run_id, None, None, (), dict(handler.ctx.to_dict(self.serializer)))
    except (CheckpointError, SerializationError) as exc:
        logger.warning("Run %s: the snapshot of its question failed: %s", run_id, exc)


def on_step(self: WorkflowCheckpointer, boundary: StepBoundary) -> Awaitable[None] | None:
    if boundary.run_id not in self._seq or boundary.step_name in self._disabled:
        return None
    if boundary.run_id in self._backlog:
        # The step's stream events go before its checkpoint: a resume from the checkpoint
        # does not deliver them again. Unreachable: the step boundary waits (see _executing).
        self._flush_events(boundary.run_id)
    final = next((e for e in boundary.output_events if isinstance(e, StopEvent)), None)
    ctx_data, delta = self._changes(boundary.ctx)
    final_event = None
    if final is not None:
        # The run holds the StopEvent while listeners look, so the snapshot has encoded it
        # already: the checkpoint keeps that text, not a second encoding of the event.
        run = boundary.ctx._run
        held = ctx_data.get("stop_event")
        if run is not None and run.held_stop is final and isinstance(held, str):
            final_event = held
        else:
            final_event = self.serializer.serialize(final)
    try:
        pending = self._put(
            boundary.run_id,
            boundary.step_name,
            qualified_name(type(boundary.input_event)),
            boundary.output_events,
            ctx_data,
            final_event=final_event,
            created_at=boundary.finished_at,
            state_changes=delta,
            events=(boundary.input_event, next(iter(boundary.output_events), None)),
            off_loop=True,
        )
    except BaseException:
        if delta is not None:
            boundary.ctx.store.changes_lost()  # type: ignore[attr-defined]
        raise
    if pending is None:
        return None
    return _written(pending, boundary.ctx if delta is not None else None)


async def _written(pending: Awaitable[None], ctx: Context[Any] | None) -> None:
    """Wait for a checkpoint written off the loop; as :func:`on_step` when it failed."""
    try:
        await pending
    except BaseException:
        if ctx is not None:
            ctx.store.changes_lost()  # type: ignore[attr-defined]
        raise


def changes(self: WorkflowCheckpointer, ctx: Context[Any]) -> tuple[dict[str, Any], int | None]:
    """The snapshot of ``ctx`` with only the state keys changed since the last one.

    Returns the ``ctx_data`` and the checkpoint's ``state_changes`` (see
    :class:`Checkpoint`); a state store that cannot tell its changes gives the whole
    state (``None``).
    """
    take = getattr(ctx.store, "take_changes", None)
    changes = take(self.serializer) if take is not None else None
    if changes is None:
        return dict(ctx.to_dict(self.serializer)), None
    delta, values = changes
    data = dump(ctx, self.serializer, include_state=False)
    # A key that grew is stored as the edit of its previous text (_state_extensions.py).
    stored, mode = self._texts.compact(str(ctx.run_id), delta, values)
    cached = self._empty_state
    if cached is None or cached[0] is not self.serializer:
        # The state's header (its layout and type), the same at every checkpoint.
        cached = self._empty_state = (self.serializer, encode_untyped({}, self.serializer))
    data["state"] = with_state_values(cached[1], stored)
    return data, mode


def put(
    self: WorkflowCheckpointer,
    run_id: str,
    step_name: str | None,
    input_type: str | None,
    outputs: Iterable[Event],
    ctx_data: dict[str, Any],
    *,
    final_event: str | None = None,
    created_at: float | None = None,
    state_changes: int | None = None,
    events: tuple[Event | None, Event | None] = (None, None),
    off_loop: bool = False,
) -> Awaitable[None] | None:
    """Write the run's next checkpoint; with ``off_loop``, through the store's
    :meth:`~batonflow.core.durable._store.OffLoopWrites.aput` when it has one, returning the
    write's awaitable (``None``: written already)."""
    seq = next(self._seq[run_id])
    checkpoint = Checkpoint(
        id=checkpoint_id(run_id, seq),
        run_id=run_id,
        workflow_name=self.workflow.workflow_name,
        step_name=step_name,
        input_event_type=input_type,
        output_event_types=tuple(qualified_name(type(e)) for e in outputs),
        created_at=created_at if created_at is not None else time.time(),
        ctx_data=ctx_data,
        seq=seq,
        final_event=final_event,
        inbox_seq=self._inbox.get(run_id, 0),
        state_changes=state_changes,
        input_event=events[0],
        output_event=events[1],
    )
    if off_loop and self._off_loop is not None:
        return self._off_loop.aput(checkpoint)
    self.store.put(checkpoint)
    return None


def watch(self: WorkflowCheckpointer, handler: WorkflowHandler) -> None:
    run_id = handler.run_id

    def finished(fut: asyncio.Future[Any]) -> None:
        if run_id in self._released:
            self._released.discard(run_id)
            return  # released (a shutdown): the record stays as it was
        self._seq.pop(run_id, None)
        self._inbox.pop(run_id, None)
        self._asked.pop(run_id, None)
        self._texts.forget(run_id)
        if self._live.get(run_id) is handler:
            del self._live[run_id]
        status, result, error = outcome(fut, self.serializer)
        if self._on_end is not None:
            self._on_end(run_id, status, result, error)  # it writes the events left too
            return
        try:
            self._flush_events(run_id)
            self.store.set_status(run_id, status, result=result, error=error)
        except CheckpointError as exc:
            # The run stays as last recorded (running): resumable once the store works.
            logger.warning("Run %s ended %s, but the store refused it: %s", run_id, status, exc)

    handler.add_done_callback(finished)
