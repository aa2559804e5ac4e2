"""Installing an instrument on every workflow, through the engine's default-instrument hook.

Kept apart so that the one place that knows how the engine registers process-wide instruments
is small and easy to follow when that API changes.
"""

from __future__ import annotations

from batonflow.core import instrument as _instrument_module
from batonflow.core.instrument import Instrument


def install(instrument: Instrument) -> bool:
    """Add ``instrument`` to every workflow run from now on; False if the engine cannot."""
    add = getattr(_instrument_module, "add_global_instrument", None)
    if add is None:
        return False
    add(instrument)
    return True


def uninstall(instrument: Instrument) -> None:
    """Undo :func:`install` (no error when it was never installed)."""
    remove = getattr(_instrument_module, "remove_global_instrument", None)
    if remove is not None:
        remove(instrument)
