"""Load one engine's public names under a common shape.

Every engine workload in ``workloads.py`` is written once against an :class:`Api` and runs
unchanged on batonflow (``batonflow.core``) and on llama-index-workflows (``workflows``): both
offer the LlamaIndex Workflows API.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

IMPLS = ("batonflow", "llama", "floor")
LABELS = {
    "batonflow": "batonflow",
    "llama": "llama-index-workflows",
    "floor": "raw asyncio floor",
}

_NAMES = ("Workflow", "step", "Context", "Event", "StartEvent", "StopEvent")


class Unsupported(Exception):
    """The engine under test lacks a feature the workload needs (reported as n/a)."""


@dataclass(frozen=True)
class Api:
    """The engine names a workload uses."""

    impl: str
    Workflow: Any
    step: Any
    Context: Any
    Event: Any
    StartEvent: Any
    StopEvent: Any


def load_api(impl: str) -> Api:
    """Import the engine ``impl`` ("batonflow" or "llama") and return its names."""
    if impl == "llama":
        try:
            import workflows
            from workflows import events
        except ImportError as exc:
            raise Unsupported(
                f"llama-index-workflows is not installed ({exc}); "
                "run .venv/bin/pip install -r bench/requirements.txt"
            ) from exc

        return Api(
            impl=impl,
            Workflow=workflows.Workflow,
            step=workflows.step,
            Context=workflows.Context,
            Event=events.Event,
            StartEvent=events.StartEvent,
            StopEvent=events.StopEvent,
        )
    if impl == "batonflow":
        try:
            core = importlib.import_module("batonflow.core")
        except ImportError as exc:  # pragma: no cover - depends on the tree
            raise Unsupported(f"batonflow.core does not import: {exc}") from exc
        missing = [name for name in _NAMES if not hasattr(core, name)]
        if missing:
            raise Unsupported(f"batonflow.core does not export {', '.join(missing)} yet")
        return Api(impl=impl, **{name: getattr(core, name) for name in _NAMES})
    raise ValueError(f"unknown engine {impl!r}; expected one of {', '.join(IMPLS)}")
