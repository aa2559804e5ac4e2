"""Sending events to a durable run: its inbox, and the delivery of what it holds to the run.

An event sent to a run (an answer, a cancel request, any event it accepts) is committed to the
run's inbox in the store first, then given to the run if it runs in this process; a run that
runs elsewhere (another replica), or is resumed later, takes it in from the inbox there. A
checkpoint records how far the run had taken its inbox in, so each entry reaches it once.
:class:`RunInbox` holds these methods of
:class:`~batonflow.core.durable.checkpoints.WorkflowCheckpointer`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..data.events import Event
from ..data.serialization import BaseSerializer
from ..errors import CheckpointError, ContextSerdeError, WorkflowRuntimeError
from ._child_answers import answer_target
from ._store import CheckpointStore, encode

if TYPE_CHECKING:
    from ..engine.handler import WorkflowHandler
    from ..engine.workflow import Workflow

logger = logging.getLogger("batonflow.core")

#: The inbox body of a cancel request (see :meth:`RunInbox.request_cancel`). No serializer
#: writes it for an event: they all encode an event's class with it.
CANCEL_REQUEST = '{"batonflow_request": "cancel"}'


class RunInbox:
    """The inbox methods of ``WorkflowCheckpointer`` (see the module docs)."""

    store: CheckpointStore
    workflow: Workflow
    serializer: BaseSerializer
    #: The runs recorded by this checkpointer that run in this process, by id.
    _live: dict[str, WorkflowHandler]
    #: How far each live run has taken its inbox in (the last ``seq`` given to it).
    _inbox: dict[str, int]
    #: The checkpointers of the child runs of these runs in this process, by child run id.
    _children_live: dict[str, RunInbox]
    #: Stream events (and questions) of live runs not written yet (_checkpoint_recording).
    _backlog: dict[str, list[tuple[Any, bool]]]
    #: Cancellations started by inbox requests, and inbox reads made in a thread (kept
    #: referenced until done).
    _cancelling: set[asyncio.Future[Any]]

    #: Writes the stream events of a run that waited (_checkpoint_recording).
    flush_events: Callable[[str], None]

    #: After an answer was taken: ask a question still open again (_checkpoint_recording).
    _ask_again: Callable[[str], None]

    def send_event(self, run_id: str, event: Event, *, answer: bool = False) -> int:
        """Send ``event`` to a run durably: committed to its inbox, then delivered.

        The event is in the store before this returns; the run takes it in at once when it
        runs in this process, else when it is resumed. A checkpoint records how many inbox
        events the run had taken in, so a resume delivers exactly the ones after it.

        An event that a child run of ``run_id`` waits for, sent to a run that waits for
        nothing itself and has no step that takes it, goes to that child's inbox (see
        ``_child_answers``: the rule, and the error when several children wait).

        Args:
            run_id: The run.
            event: The event (a ``HumanResponseEvent``, or any event the run accepts).
            answer: It answers the question the run waits for: only one answer per
                question is accepted, atomically in the store.

        Returns:
            The event's position in the run's inbox.

        Raises:
            RunConflictError: The run has ended, or (``answer``) waits for nothing or was
                answered already, or several of its child runs wait for the event.
            SerializationError: The event cannot be encoded.
            CheckpointError: The store refused the write (``StoreFullError``, ...).
        """
        body = encode(self.serializer, event, f"the event sent to run {run_id}")
        self._settle_children()
        takes = bool(self.workflow._graph().targets(type(event)))
        target = answer_target(self.store, run_id, event, takes)
        if target != run_id:
            answer = True  # the child's question takes one answer
        seq = self.store.post_event(target, body, answer=answer)
        self._deliver(target)
        return seq

    def request_cancel(self, run_id: str) -> int:
        """Ask a run to cancel itself, durably: the request is committed to its inbox.

        The process that runs it (this one, another server replica, or whichever resumes it
        after a crash) cancels it when it takes the request in, so an accepted cancel is
        never lost.

        Returns:
            The request's position in the run's inbox.

        Raises:
            RunConflictError: The run has ended already.
            CheckpointError: The store refused the write.
        """
        seq = self.store.post_event(run_id, CANCEL_REQUEST)
        if run_id in self._live:
            self._deliver(run_id)
        return seq

    def deliver(self, run_id: str) -> None:
        """Give run ``run_id``, if it runs here, the inbox events it has not taken in yet.

        For events committed to the inbox by another process (a server replica that took an
        answer): :meth:`send_event` delivers its own events already.
        """
        self._deliver(run_id)

    def taken_in(self, run_id: str) -> int | None:
        """The inbox ``seq`` up to which run ``run_id`` has been given its inbox events here.

        ``None`` when the run does not run in this process. A server compares it with the
        inbox's last ``seq`` to deliver only what is new (:meth:`deliver` is idempotent
        anyway: an entry is given to the run once, however often it is called).
        """
        if run_id not in self._live:
            child = self._child_inbox(run_id)
            return None if child is None else child.taken_in(run_id)
        return self._inbox.get(run_id)

    def _settle_children(self) -> None:
        """Record the questions this process's child runs have asked but not written yet,
        so that routing (and the child's inbox) sees them ``waiting``."""
        for child_id, child in list(self._children_live.items()):
            if child._backlog.get(child_id):
                try:
                    child.flush_events(child_id)
                except CheckpointError as exc:  # the store is away: the routing says so
                    logger.warning(
                        "Child run %s: its question is not written yet: %s", child_id, exc
                    )
            child._settle_children()

    def _child_inbox(self, run_id: str) -> RunInbox | None:
        """The checkpointer of child run ``run_id`` (at any depth) of a run here, if any."""
        for child in list(self._children_live.values()):
            if run_id in child._live:
                return child
            found = child._child_inbox(run_id)
            if found is not None:
                return found
        return None

    def _deliver(self, run_id: str) -> None:
        """Give the live run the inbox events it has not taken in yet, in order."""
        handler = self._live.get(run_id)
        if handler is None:
            child = self._child_inbox(run_id)
            if child is not None:
                child._deliver(run_id)
            return
        self._take_in(run_id, handler, self.store.inbox(run_id, after=self._inbox.get(run_id, 0)))

    def _deliver_off_loop(self, run_id: str) -> None:
        """:meth:`_deliver` with the store read in a thread (called on the run's loop): a run
        just taken out of the queue gets what was sent to it meanwhile without the loop
        waiting for a round trip to a store over the network."""

        async def deliver() -> None:
            items = await asyncio.to_thread(
                self.store.inbox, run_id, after=self._inbox.get(run_id, 0)
            )
            handler = self._live.get(run_id)
            if handler is not None:
                self._take_in(run_id, handler, items)

        self._cancelling.add(asyncio.ensure_future(deliver()))
        self._cancelling = {t for t in self._cancelling if not t.done()}

    def _take_in(self, run_id: str, handler: WorkflowHandler, items: Any) -> None:
        """Give ``handler`` the inbox ``items`` it has not taken in yet, in order (another
        delivery may have given it some meanwhile)."""
        for item in items:
            if item.seq <= self._inbox.get(run_id, 0):
                continue
            self._inbox[run_id] = item.seq
            if item.body == CANCEL_REQUEST:
                self._cancelling.add(asyncio.ensure_future(handler.cancel_run()))
                self._cancelling = {t for t in self._cancelling if not t.done()}
                continue
            try:
                event = self.serializer.deserialize(item.body)
            except ContextSerdeError as exc:
                logger.warning("Run %s: inbox event %d cannot be read: %s", run_id, item.seq, exc)
                event = None
            if isinstance(event, Event):
                try:
                    handler.ctx.send_event(event)
                except WorkflowRuntimeError as exc:  # its wait ended meanwhile (a timeout)
                    logger.warning(
                        "Run %s: inbox event %d is taken by no step: %s", run_id, item.seq, exc
                    )
                    continue
                if item.key is not None:  # an answer: is another question still open?
                    handler._run.loop.call_soon(self._ask_again, run_id)


__all__ = ["CANCEL_REQUEST", "RunInbox"]
