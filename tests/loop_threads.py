"""Which thread a store call ran on, for the tests that keep network reads off the event loop."""

from __future__ import annotations

import asyncio


def on_a_loop() -> bool:
    """Whether the calling thread is running an asyncio event loop right now."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
