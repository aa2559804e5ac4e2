"""Waiting in tests for something another thread or process does, with a deadline (never a
timing assert: a slow machine waits longer, a broken feature fails at the deadline)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def until(check: Callable[[], T], what: str, timeout: float = 60) -> T:
    """Call ``check`` every 20 ms until it returns something true, and return that; fail with
    ``never: <what>`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        time.sleep(0.02)
    return found
