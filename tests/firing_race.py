"""Threads racing to claim the same schedule firings, for the SQLite and PostgreSQL tests."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any


def race_for_firings(
    stores: Sequence[Any], threads: int, firings: int, schedule: str
) -> list[tuple[int, str]]:
    """``threads`` threads, spread over ``stores``, each claim firings ``0..firings-1`` of
    ``schedule`` at once; returns ``(firing, thread)`` for every claim a store said was won."""
    won: list[tuple[int, str]] = []
    barrier = threading.Barrier(threads)

    def race(who: str, store: Any) -> None:
        barrier.wait()
        for at in range(firings):
            if store.claim_firing(schedule, at, who):
                won.append((at, who))

    workers = [
        threading.Thread(target=race, args=(f"t{i}", stores[i % len(stores)]))
        for i in range(threads)
    ]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return won
