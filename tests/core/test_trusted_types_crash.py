"""Plain pydantic models in a run's data survive SIGKILL: a new process restores their class.

A worker process runs a durable workflow on SQLite whose first step keeps ``Order`` models
(which no step annotation names) in untyped state, nested in lists and dicts, and queues an
event that carries one in an ``Any`` field; the start event carries one as an extra field. The
second step blocks, the worker is killed with SIGKILL after the first step's checkpoint, and
another process resumes the run with ``WorkflowCheckpointer`` and gets the same classes back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from batonflow.core.checkpoints import SqliteCheckpointStore

FLOW = textwrap.dedent(
    """
    import asyncio, os
    from typing import Any

    from pydantic import BaseModel

    from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step


    class Order(BaseModel):
        item: str
        qty: int


    class Packed(Event):
        payload: Any = None


    class OrderFlow(Workflow):
        @step
        async def begin(self, ctx: Context, ev: StartEvent) -> Packed:
            await ctx.store.set("order", ev.order)
            await ctx.store.set("orders", [Order(item="a", qty=1), Order(item="b", qty=2)])
            await ctx.store.set("by_name", {"c": Order(item="c", qty=3)})
            return Packed(payload=Order(item="queued", qty=4))

        @step
        async def pack(self, ctx: Context, ev: Packed) -> StopEvent:
            if os.environ.get("BLOCK") == "1":
                await asyncio.sleep(3600)  # killed here, after begin's checkpoint
            values = [
                await ctx.store.get("order"),
                *await ctx.store.get("orders"),
                (await ctx.store.get("by_name"))["c"],
                ev.payload,
            ]
            return StopEvent(
                result=[[type(v).__module__, type(v).__qualname__, v.model_dump()] for v in values]
            )
    """
)

WORKER = textwrap.dedent(
    """
    import asyncio, json, sys

    from batonflow.core.checkpoints import SqliteCheckpointStore, WorkflowCheckpointer

    if "OrderFlow" not in globals():
        from orderflow import Order, OrderFlow


    async def main(mode, db, run_id):
        cptr = WorkflowCheckpointer(OrderFlow(timeout=None), store=SqliteCheckpointStore(db))
        if mode == "start":
            handler = cptr.run(run_id=run_id, order=Order(item="tea", qty=5))
            print("started", flush=True)
        else:
            handler = cptr.resume(run_id)
        print(json.dumps({"result": await handler}), flush=True)


    asyncio.run(main(*sys.argv[1:4]))
    """
)


def _env(block: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
    env["BLOCK"] = "1" if block else "0"
    return env


def _start_and_kill(script: Path, db: Path, run_id: str) -> None:
    """Start the run in ``script``, SIGKILL it once ``begin`` is checkpointed."""
    proc = subprocess.Popen(
        [sys.executable, str(script), "start", str(db), run_id],
        cwd=script.parent,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(block=True),
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "started"
        deadline = time.monotonic() + 30
        with SqliteCheckpointStore(db) as store:
            while not any(c.step_name == "begin" for c in store.list(run_id)):
                assert proc.poll() is None, "the worker exited before it was killed"
                assert time.monotonic() < deadline, "no checkpoint after 'begin'"
                time.sleep(0.02)
    finally:
        proc.kill()  # SIGKILL: nothing runs on the way out
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def _resume(folder: Path, db: Path, run_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(folder / "worker.py"), "resume", str(db), run_id],
        cwd=folder,
        capture_output=True,
        text=True,
        env=_env(block=False),
        timeout=120,
    )


@pytest.mark.slow
def test_models_in_state_and_events_come_back_as_their_class_after_sigkill(
    tmp_path: Path,
) -> None:
    """Killed after a checkpoint holding plain models (state, lists, dicts, a queued event,
    the start event's extra field), the run resumes in a new process with the same classes."""
    (tmp_path / "orderflow.py").write_text(FLOW)
    (tmp_path / "worker.py").write_text(WORKER)
    db = tmp_path / "runs.db"
    _start_and_kill(tmp_path / "worker.py", db, "run-1")

    done = _resume(tmp_path, db, "run-1")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])["result"]
    assert result == [
        ["orderflow", "Order", {"item": "tea", "qty": 5}],
        ["orderflow", "Order", {"item": "a", "qty": 1}],
        ["orderflow", "Order", {"item": "b", "qty": 2}],
        ["orderflow", "Order", {"item": "c", "qty": 3}],
        ["orderflow", "Order", {"item": "queued", "qty": 4}],
    ]


@pytest.mark.slow
def test_a_class_of_the_writers_main_script_is_refused_with_the_fix(tmp_path: Path) -> None:
    """A run whose classes lived in the killed process's ``__main__`` script, resumed by
    another script, fails with an error that says to move the class to an importable module."""
    (tmp_path / "orderflow.py").write_text(FLOW)
    (tmp_path / "worker.py").write_text(WORKER)
    (tmp_path / "script.py").write_text(FLOW + WORKER)  # everything in __main__
    db = tmp_path / "runs.db"
    _start_and_kill(tmp_path / "script.py", db, "run-main")

    done = _resume(tmp_path, db, "run-main")
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    # A CheckpointError: since runs record their workflow's version, the check before the
    # resume finds it first (IncompatibleRunError, a subclass), naming the same fix.
    assert "IncompatibleRunError" in last or "CheckpointError" in last, done.stderr
    assert "'__main__:" in last and "the writing process ran as __main__" in last, last
    assert "Move " in last and "to an importable module" in last and "register_type(" in last
