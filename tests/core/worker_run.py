"""The start-or-resume of the kill-trial worker scripts (``*_worker.py`` beside it)."""

from __future__ import annotations

import json
from typing import Any


async def start_or_resume(cptr: Any, mode: str, run_id: str, **fields: Any) -> None:
    """Start run ``run_id`` with ``fields`` (``mode == "start"``: prints ``started`` once it is
    recorded) or resume it; then print its result as one JSON line."""
    if mode == "start":
        handler = cptr.run(run_id=run_id, **fields)
        print("started", flush=True)
    else:
        handler = cptr.resume(run_id)
    print(json.dumps({"result": await handler}), flush=True)
