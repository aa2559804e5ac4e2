"""A run to kill mid-step, and the checks of its stream read again after the restart.

``ReportFlow`` (served as ``report``): ``prepare``, then ``report``, which streams ``n``
``Progress`` events ``pause`` seconds apart, each naming the server process that wrote it. The
SQLite and PostgreSQL tests kill the server while ``report`` streams, reconnect with
``Last-Event-ID`` to the server that resumes the run, and check what they read with
:func:`check_restart`.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step

#: ``-w`` arguments of a server that serves the flow.
SERVE = ("-w", f"report={Path(__file__).resolve()}:ReportFlow")


class Chunks(Event):
    """What ``report`` streams: how many, how far apart."""

    n: int
    pause: float


class Progress(Event):
    """One streamed chunk, and the process that wrote it."""

    i: int
    pid: int


class ReportFlow(Workflow):
    """``prepare`` then ``report`` (it streams ``n`` Progress events, ``pause`` s apart)."""

    @step
    async def prepare(self, ev: StartEvent) -> Chunks:
        return Chunks(n=int(ev.get("n", 30)), pause=float(ev.get("pause", 0.1)))

    @step
    async def report(self, ctx: Context, ev: Chunks) -> StopEvent:
        for i in range(ev.n):
            ctx.write_event_to_stream(Progress(i=i, pid=os.getpid()))
            await asyncio.sleep(ev.pause)
        return StopEvent(result=ev.n)


def check_restart(before: list[dict[str, Any]], after: list[dict[str, Any]], n: int) -> None:
    """Check the messages read before the kill and after reconnecting (``{"id", "event",
    "data"}`` each): the StepRestarted names the interrupted attempt's first event and comes
    before every event of the re-run, which streams all ``n`` chunks again.
    """
    assert before and all(m["data"]["type"] == "Progress" for m in before), before
    killed = before[0]["data"]["value"]["pid"]
    first_id = int(before[0]["id"])
    kinds = [m["data"].get("type", m["event"]) for m in after]
    assert kinds.count("StepRestarted") == 1, kinds
    at = kinds.index("StepRestarted")
    restarted = after[at]
    assert int(restarted["id"]) > int(before[-1]["id"])
    assert restarted["data"]["value"] == {
        "step_name": "report",
        "attempt": 2,
        "first_event_id": first_id,
    }
    assert restarted["data"]["step"] == "report"
    # Before it: the rest of the interrupted attempt's output; after it: the re-run's.
    assert all(m["data"]["value"]["pid"] == killed for m in after[:at]), after[:at]
    rerun = [m for m in after[at + 1 :] if m["data"].get("type") == "Progress"]
    assert [m["data"]["value"]["i"] for m in rerun] == list(range(n))
    assert all(m["data"]["value"]["pid"] != killed for m in rerun)
    assert all(m["data"]["step"] == "report" for m in rerun)
    assert after[-1]["event"] == "end" and after[-1]["data"]["status"] == "completed"
