"""The server's run queue: starts recorded ``queued``, pulled by replicas under limits.

When a served workflow has limits (``batonflow serve --max-running``, ``--max-queued``,
``--limit NAME:SETTING=VALUE``; ``create_app(..., limits=...)``), ``POST
/workflows/{name}/runs`` records the run ``queued`` and answers ``202`` at once; a full queue
answers ``429`` with ``Retry-After`` and records nothing. Each replica serves the queue of
every limited workflow (:class:`~batonflow.core.durable._dispatch.Dispatcher`): it claims the
queued runs its limits let it run and runs them as any run it resumes (:meth:`RunManager.
adopt`), so a claimed run is leased to it and taken over by the others if it dies. Workflows
without limits start their runs at once, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from batonflow.core.durable._dispatch import Dispatcher
from batonflow.core.durable._queue import RunLimits
from batonflow.core.durable._store import OffLoopWrites

if TYPE_CHECKING:
    from ._runs import RunManager

logger = logging.getLogger("batonflow.apps.server")

#: The settings ``--limit NAME:SETTING=VALUE`` takes, and how each is read.
_SETTINGS = {
    "concurrency": int,
    "key_field": str,
    "key_header": str,
    "key_concurrency": int,
    "max_queued": int,
    "rate": str,  # N/SECONDS
}


class LimitError(ValueError):
    """A ``--limit`` (or ``limits=``) setting that cannot be read."""


def parse_limits(
    workflows: Iterable[str],
    *,
    max_running: int | None = None,
    max_queued: int | None = None,
    items: Iterable[str] = (),
) -> dict[str, RunLimits]:
    """The limits of each served workflow from ``batonflow serve``'s options.

    ``items`` are ``NAME:SETTING=VALUE`` (``report:concurrency=2``, ``chat:key_field=tenant``,
    ``chat:rate=10/60``); ``NAME`` ``*`` sets every workflow. Workflows with no limit at all
    are left out (their runs start at once).

    Raises:
        LimitError: An item that is not ``NAME:SETTING=VALUE``, an unknown setting or
            workflow, or a value that is not a count.
    """
    names = sorted(workflows)
    settings: dict[str, dict[str, Any]] = {name: {} for name in names}
    for item in items:
        name, colon, rest = item.partition(":")
        setting, equals, value = rest.partition("=")
        name, setting, value = name.strip(), setting.strip(), value.strip()
        if not colon or not equals or not name or not value:
            raise LimitError(
                f"--limit expects NAME:SETTING=VALUE, such as report:concurrency=2; got {item!r}."
            )
        if setting not in _SETTINGS:
            raise LimitError(
                f"--limit {item!r}: unknown setting {setting!r}; use one of "
                f"{', '.join(sorted(_SETTINGS))}."
            )
        targets = names if name == "*" else [name]
        if name != "*" and name not in settings:
            raise LimitError(
                f"--limit {item!r}: no served workflow is named {name!r}; serve it, or use one "
                f"of {', '.join(names) or '(none)'} (or * for all)."
            )
        parsed = _value(item, setting, value)
        for target in targets:
            settings[target].update(parsed)
    found: dict[str, RunLimits] = {}
    for name in names:
        options = {"max_running": max_running, "max_queued": max_queued, **settings[name]}
        try:
            limits = RunLimits(**options)
        except ValueError as exc:
            raise LimitError(f"Limits of workflow {name!r}: {exc}") from exc
        if limits.queues:
            found[name] = limits
    return found


def _value(item: str, setting: str, value: str) -> dict[str, Any]:
    if setting == "rate":
        count, slash, seconds = value.partition("/")
        try:
            return {"rate": int(count), "per": float(seconds) if slash else 60.0}
        except ValueError:
            raise LimitError(
                f"--limit {item!r}: rate is RUNS/SECONDS, such as rate=10/60."
            ) from None
    if _SETTINGS[setting] is int:
        try:
            return {setting: int(value)}
        except ValueError:
            raise LimitError(f"--limit {item!r}: {setting} is a whole number.") from None
    return {setting: value}


class ServerQueue:
    """The queues of a server's limited workflows: admission and the dispatchers.

    Args:
        manager: The server's run manager.
        limits: The limits of each limited workflow (see :func:`parse_limits`).
        poll: Seconds between a dispatcher's looks at the store when nothing here wakes it.
    """

    def __init__(
        self, manager: RunManager, limits: Mapping[str, RunLimits], poll: float = 0.2
    ) -> None:
        self.manager = manager
        self.limits = {name: lim for name, lim in limits.items() if lim.queues}
        for name, lim in self.limits.items():
            manager.checkpointers[name].limits = lim
        self.dispatchers = {
            name: Dispatcher(
                manager.records,
                name,
                lim,
                start=self._start,
                running=lambda: len(manager.live),
                poll=poll,
            )
            for name, lim in self.limits.items()
        }
        self._tasks: list[asyncio.Task[None]] = []
        self._off_loop = isinstance(manager.records, OffLoopWrites)

    def applies(self, name: str) -> bool:
        """Whether runs of workflow ``name`` are queued."""
        return name in self.limits

    async def enqueue(
        self,
        name: str,
        start_event: Any,
        fields: dict[str, Any],
        traceparent: str | None,
        idempotency_key: str | None,
        headers: Mapping[str, str],
        priority: int,
    ) -> str:
        """Record a run of ``name`` ``queued`` (off the loop where the store writes so).

        Raises:
            QueueFullError: Its queue is full; nothing was recorded.
            DuplicateStartError, IdempotencyKeyError, CheckpointError: as a start.
        """
        from batonflow.core.checkpoints import RunInfo

        from ._wire import jsonable

        checkpointer = self.manager.checkpointers[name]
        info = RunInfo(jsonable(fields), traceparent, owner="server", name=name)
        key = self.limits[name].key_of(fields, headers)

        def enqueue() -> str:
            return str(
                checkpointer.enqueue(
                    start_event,
                    info=info,
                    idempotency_key=idempotency_key,
                    priority=priority,
                    key=key,
                )
            )

        run_id = await asyncio.to_thread(enqueue) if self._off_loop else enqueue()
        self.dispatchers[name].wake()
        return run_id

    def _start(self, record: Any) -> None:
        """Run a claimed run here from its recorded start event (durable or not)."""
        from batonflow.core.errors import LeaseLostError, RunBusyError

        from ._live import LiveRun

        manager = self.manager
        name = record.workflow_name
        if record.run_id in manager.live:
            return
        try:
            handler = manager.checkpointers[name].start_claimed(record)
        except (RunBusyError, LeaseLostError) as exc:
            logger.warning("Queued run %s is not started here: %s", record.run_id, exc)
            return
        except Exception as exc:
            logger.warning("Queued run %s could not start: %s", record.run_id, exc)
            manager._finish_stored(record.run_id, "interrupted", None, f"It could not start: {exc}")
            return
        live = manager._follow(LiveRun(record.run_id, name, manager.workflows[name], handler))
        if live.pump is not None:
            live.pump.add_done_callback(lambda _: self.wake_all())

    def wake_all(self) -> None:
        """A slot may be free here: every dispatcher makes a pass."""
        for dispatcher in self.dispatchers.values():
            dispatcher.wake()

    def place(self, run_id: str, workflow: str) -> dict[str, Any] | None:
        """A queued run's ``{"position", "waiting_on"}``, else ``None``."""
        store = self.manager.records
        found = store.queue_place(run_id, self.limits.get(workflow))
        if found is None:
            return None
        return {"position": found.position, "waiting_on": found.waiting_on}

    def start(self) -> None:
        """Start serving the queues (after the server restored its runs)."""
        for name, dispatcher in self.dispatchers.items():
            self._tasks.append(
                asyncio.get_running_loop().create_task(
                    dispatcher.serve(), name=f"batonflow-queue-{name}"
                )
            )

    async def stop(self) -> None:
        """Stop claiming runs (queued runs stay queued for the other replicas)."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*tasks, return_exceptions=True)


#: The error of a run cancelled while it waited in the queue.
CANCELLED_QUEUED = "The run was cancelled while queued; it never started."


def cancel_queued(manager: Any, run_id: str) -> bool:
    """Cancel ``run_id`` if it is still queued (it never starts); whether it was."""
    import json

    store = manager.records
    if not hasattr(store, "cancel_queued"):
        return False
    end = json.dumps({"status": "cancelled", "result": None, "error": CANCELLED_QUEUED})
    return bool(store.cancel_queued(run_id, CANCELLED_QUEUED, end))


def queue_place(manager: Any, row: Any) -> dict[str, Any] | None:
    """The ``queue`` member of a run's record: where it waits while ``queued``."""
    queue = getattr(manager, "queue", None)
    if row.status != "queued" or queue is None:
        store = manager.records
        if row.status == "queued" and hasattr(store, "queue_place"):
            found = store.queue_place(row.run_id, None)
            if found is not None:
                return {"position": found.position, "waiting_on": found.waiting_on}
        return None
    return queue.place(row.run_id, row.workflow)


__all__ = [
    "CANCELLED_QUEUED",
    "LimitError",
    "ServerQueue",
    "cancel_queued",
    "parse_limits",
    "queue_place",
]
