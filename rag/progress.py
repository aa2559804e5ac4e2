"""Ingestion progress: streamed as events, and drawn as bars when ``show_progress=True``.

Every phase is counted (``read`` files, ``split`` documents, ``store`` chunks), so a progress bar
moves from the first second of a large folder, not only once the chunks are known. The bars use
tqdm, which llama-index-core already depends on (its own ``show_progress=True`` uses it).
"""

from __future__ import annotations

import weakref
from typing import Any

from batonflow.core import Context

from .events import IngestProgress

#: What each phase counts, for bars and reports.
PHASES = {"read": "reading files", "split": "splitting documents", "store": "storing chunks"}

# One set of bars per run (several runs of one workflow can be in flight); a run's bars go with
# its context.
_BARS: weakref.WeakKeyDictionary[Context, dict[str, Any]] = weakref.WeakKeyDictionary()


def report(ctx: Context, phase: str, done: int, total: int, *, show: bool) -> None:
    """Stream an :class:`IngestProgress` event and, when ``show``, move the phase's bar."""
    ctx.write_event_to_stream(IngestProgress(phase=phase, done=done, total=total))
    if not show:
        return
    bars = _BARS.setdefault(ctx, {})
    bar = bars.get(phase)
    if bar is None:
        from tqdm.auto import tqdm  # only when bars are asked for

        bar = bars[phase] = tqdm(total=total, desc=PHASES[phase], unit="")
    bar.total = total
    bar.n = done
    bar.refresh()
    if done >= total:
        bar.close()


def close(ctx: Context) -> None:
    """Close the run's bars left open (an ingestion that stopped early)."""
    for bar in _BARS.pop(ctx, {}).values():
        bar.close()


__all__ = ["PHASES", "close", "report"]
