"""Resident memory split into anonymous and file-backed pages, read from ``/proc/self``.

Anonymous memory is the processes' heaps (Python's objects, a native library's allocations):
the kernel cannot drop it without swap. File-backed resident pages are mapped files' pages
(a memory-mapped store's segments, the shared libraries): page cache, dropped under pressure
and read back when touched. ``ru_maxrss`` counts both, so the benchmarks read them apart.
"""

from __future__ import annotations

import threading
from typing import Any


def smaps() -> dict[str, float]:
    """This process's resident memory in MB: ``rss``, ``anon`` and ``file`` (the rest: mapped
    files' pages and shared memory)."""
    fields: dict[str, float] = {}
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                fields[parts[0].rstrip(":")] = int(parts[1]) / 1024
    rss, anon = fields["Rss"], fields["Anonymous"]
    return {"rss": rss, "anon": anon, "file": rss - anon}


class PeakSampler:
    """The peaks of :func:`smaps`'s figures, sampled every ``interval`` seconds in a thread.

    Use as a context manager around the measured work; ``peak`` holds each figure's largest
    reading (taken apart: the anonymous and file peaks may be at different moments).
    """

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.peak: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _sample(self) -> None:
        for key, value in smaps().items():
            self.peak[key] = max(self.peak.get(key, 0.0), value)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> PeakSampler:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
