"""Retention: ended runs are forgotten in the background once they are old enough.

A run store keeps every run, with its checkpoints, event log and inbox, until something deletes
it; a busy service grows its database without bound. A :class:`Retention` policy says how long
ended runs (completed, failed, cancelled) are kept, for all workflows and per workflow, and
:meth:`Retention.sweep` deletes those past it, a few at a time, each run in its own short
transaction, so runs going on never wait long for the database. ``batonflow serve
--keep-finished 7d`` sweeps every minute; in a program, ``await retention.run_forever(store)``
does the same. Runs still going on (running, waiting) and runs a crash left interrupted are
never deleted, however old.

::

    retention = Retention("7d", per_workflow={"nightly_report": "90d"})
    deleted = retention.sweep(store)
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._public import publish
from ._store import CheckpointStore

log = logging.getLogger("batonflow.retention")

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(value: str | float | int, what: str = "a duration") -> float:
    """Seconds in ``"90s"``, ``"30m"``, ``"12h"``, ``"7d"``, ``"2w"`` or a number of seconds.

    Raises:
        ValueError: anything else, or a negative number (the message says what is accepted).
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value).lower())
        if match is None:
            raise ValueError(
                f"{what} expects a duration such as 30m, 12h, 7d or 2w (or seconds as a "
                f"number); got {value!r}."
            )
        seconds = float(match[1]) * _UNIT[match[2]]
    if seconds < 0:
        raise ValueError(f"{what} cannot be negative; got {value!r}.")
    return seconds


@dataclass(frozen=True)
class Retention:
    """How long ended runs are kept: ``keep_finished`` for all, ``per_workflow`` overrides.

    Args:
        keep_finished: how long after it ended a run is kept (``"7d"``, ``"12h"``, seconds).
        per_workflow: a different period for some workflows, by workflow name.
        batch: runs deleted per pass of one query (each run in its own transaction).
        every: seconds between sweeps in :meth:`run_forever`.

    Raises:
        ValueError: a period is not a duration, or ``batch`` / ``every`` are not positive.
    """

    keep_finished: float | str
    per_workflow: Mapping[str, float | str] = field(default_factory=dict)
    batch: int = 100
    every: float = 60.0

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "keep_finished", parse_duration(self.keep_finished, "keep_finished")
        )
        periods = {
            name: parse_duration(period, f"the period of workflow {name!r}")
            for name, period in dict(self.per_workflow).items()
        }
        object.__setattr__(self, "per_workflow", periods)
        if self.batch < 1:
            raise ValueError(f"batch must be at least 1, got {self.batch}.")
        if self.every <= 0:
            raise ValueError(f"every must be a positive number of seconds, got {self.every}.")

    def sweep(self, store: CheckpointStore, now: float | None = None) -> int:
        """Delete the ended runs past their period; returns how many were deleted.

        Each run is deleted in its own transaction (its record, checkpoints, event log and
        inbox together), a batch of ids at a time, until none is left. Safe to run on several
        replicas at once: deleting a run twice is deleting it once.
        """
        now = time.time() if now is None else now
        deleted = 0
        overridden = tuple(self.per_workflow)
        plans: list[tuple[float, str | None, tuple[str, ...]]] = [
            (now - float(period), name, ()) for name, period in self.per_workflow.items()
        ]
        plans.append((now - float(self.keep_finished), None, overridden))
        for before, name, exclude in plans:
            while True:
                ids = store.ended_runs(
                    before, workflow_name=name, exclude=exclude, limit=self.batch
                )
                for run_id in ids:
                    store.delete(run_id)
                deleted += len(ids)
                if len(ids) < self.batch:
                    break
        return deleted

    async def run_forever(self, store: CheckpointStore) -> None:
        """Sweep every :attr:`every` seconds (in a worker thread) until cancelled.

        A sweep that fails (the database unreachable for a while) is logged and tried again at
        the next one; nothing is lost, the runs are only deleted later.
        """
        while True:
            try:
                deleted = await asyncio.to_thread(self.sweep, store)
            except Exception as exc:  # the next sweep tries again
                log.warning("retention sweep failed, trying again in %ss: %s", self.every, exc)
            else:
                if deleted:
                    log.info("retention: deleted %d ended run(s)", deleted)
            await asyncio.sleep(self.every)

    def describe(self) -> dict[str, Any]:
        """The policy as JSON-friendly data (seconds), for logs and the server's info."""
        return {"keep_finished": self.keep_finished, "per_workflow": dict(self.per_workflow)}


__all__ = ["Retention", "parse_duration"]

publish(__name__, globals())
