"""How ``batonflow runs`` shows and cancels a queued run (its place, the limit it waits on).

Kept apart from :mod:`batonflow.apps._queue` (the server's queues), which loads the engine:
``batonflow runs --help`` must not (see bench/startup.py).
"""

from __future__ import annotations

from typing import Any

#: What each limit a queued run waits on means, for people.
WAITING_ON = {
    "concurrency": "the workflow's concurrency limit (its runs in progress)",
    "key_concurrency": "its key's concurrency limit (runs of the same tenant or user)",
    "rate": "the rate limit (runs started in the period)",
    "max_running": "the replicas' --max-running",
    "position": "the runs ahead of it",
}


def queue_line(queue: dict[str, Any]) -> str:
    """``queue: position 3, waiting on ...`` for ``batonflow runs show``."""
    why = WAITING_ON.get(str(queue.get("waiting_on")), str(queue.get("waiting_on")))
    return f"queue: position {queue.get('position')}, waiting on {why}"


def local_place(store: Any, run_id: str) -> dict[str, Any] | None:
    """A queued run's place in a local store (the limits are the server's: not known here)."""
    place = getattr(store, "queue_place", None)
    found = place(run_id, None) if place is not None else None
    return None if found is None else {"position": found.position, "waiting_on": found.waiting_on}


def cancel_local(store: Any, run_id: str) -> bool:
    """Cancel a queued run in a local store; whether it was still queued."""
    cancel = getattr(store, "cancel_queued", None)
    return bool(cancel is not None and cancel(run_id, "The run was cancelled while queued."))


__all__ = ["WAITING_ON", "cancel_local", "local_place", "queue_line"]
