"""What the kill-trial worker scripts (``*_worker.py`` beside it) share: starting or resuming
their run in the worker, and, in the trial, starting a worker, killing it, resuming the run."""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


async def start_or_resume(cptr: Any, mode: str, run_id: str, **fields: Any) -> None:
    """Start run ``run_id`` with ``fields`` (``mode == "start"``: prints ``started`` once it is
    recorded) or resume it; then print its result as one JSON line (its text when JSON cannot
    hold it: an agent's output)."""
    if mode == "start":
        handler = cptr.run(run_id=run_id, **fields)
        print("started", flush=True)
    else:
        handler = cptr.resume(run_id)
    print(json.dumps({"result": await handler}, default=str), flush=True)


def _env() -> dict[str, str]:
    """The environment of a worker: no real LLM keys, no trace export."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}


def start_and_kill(
    script: str, args: list[str], rng: random.Random, reached: Callable[[], bool], python: str
) -> None:
    """Run ``script start *args``; once it printed ``started`` (its run is recorded) and
    ``reached()`` holds (or it ended), wait 0-4 ms more (seeded by ``rng``) and SIGKILL it."""
    proc = subprocess.Popen(
        [python, script, "start", *args], stdout=subprocess.PIPE, text=True, env=_env()
    )
    assert proc.stdout is not None
    proc.stdout.readline()  # "started": the run is recorded
    while proc.poll() is None and not reached():
        time.sleep(0.001)
    time.sleep(rng.uniform(0.0, 0.004))
    proc.kill()
    proc.wait(10)
    proc.stdout.close()


def resume(script: str, args: list[str], python: str) -> Any:
    """Run ``script resume *args`` to its end; the run's result, or ``None`` if it failed."""
    done = subprocess.run(
        [python, script, "resume", *args], capture_output=True, text=True, env=_env(), timeout=120
    )
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1])["result"] if done.returncode == 0 and lines else None


def line_count(path: Path) -> int:
    """How many lines the side-effect file ``path`` holds (0 before it exists)."""
    return len(path.read_text().splitlines()) if path.exists() else 0
