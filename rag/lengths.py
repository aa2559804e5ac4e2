"""The BM25 lengths of a collection's chunks: the mean that length normalisation divides by.

BM25 scales a term's weight by how a chunk's length compares with the collection's mean
length. The mean changes as chunks are written and deleted, so :class:`MeanLength` keeps every
point's length and the mean its sparse vector was encoded with (both are also in the point's
payload, ``bm25_len`` and ``bm25_avg``, so the figure lives with the collection), and says
which points were encoded with a mean too far from the current one (:meth:`MeanLength.stale`).
Kept in memory by the store that writes the collection; read from the payloads once.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

#: A point whose vector was encoded with a mean length this far (relative) from the
#: collection's is re-encoded (see :meth:`batonflow.rag.store.QdrantStore.mean_length`).
DRIFT = 0.05


class MeanLength:
    """Every point's BM25 length and the mean it was encoded with, and their running total.

    Args:
        fallback: The mean of an empty collection (the encoder's fixed ``avg_len``).
    """

    def __init__(self, fallback: float) -> None:
        self.fallback = fallback
        self._lengths: dict[str, tuple[int, float]] = {}
        self._total = 0
        self._by_mean: dict[float, set[str]] = {}

    def __len__(self) -> int:
        return len(self._lengths)

    def mean(self) -> float:
        """The collection's mean length (the fallback while it is empty)."""
        count = len(self._lengths)
        return self._total / count if count and self._total else self.fallback

    def set(self, pid: str, length: int, mean: float) -> None:
        """Point ``pid`` has ``length`` terms and was (or will be) encoded with ``mean``."""
        old = self._lengths.get(pid)
        if old is not None:
            self._total -= old[0]
            self._by_mean.get(old[1], set()).discard(pid)
        self._lengths[pid] = (length, mean)
        self._total += length
        self._by_mean.setdefault(mean, set()).add(pid)

    def forget(self, pids: Collection[str]) -> None:
        """The points ``pids`` were deleted."""
        for pid in pids:
            old = self._lengths.pop(pid, None)
            if old is not None:
                self._total -= old[0]
                self._by_mean.get(old[1], set()).discard(pid)

    def load(
        self,
        recorded: Iterable[tuple[str, dict[str, object]]],
        measure: Callable[[list[str]], dict[str, int]],
    ) -> None:
        """Take the lengths the payloads record; points written before they were recorded (no
        ``bm25_len``) are measured by ``measure(ids)`` and count as encoded with the fallback."""
        unmeasured = []
        for pid, payload in recorded:
            length, mean = payload.get("bm25_len"), payload.get("bm25_avg")
            if isinstance(length, int) and isinstance(mean, int | float):
                self.set(pid, length, float(mean))
            else:
                unmeasured.append(pid)
        for start in range(0, len(unmeasured), 1024):
            for pid, length in measure(unmeasured[start : start + 1024]).items():
                self.set(pid, length, self.fallback)

    def stale(self) -> list[str]:
        """The points encoded with a mean more than :data:`DRIFT` from the current one."""
        mean = self.mean()
        found = [
            pid
            for used, pids in list(self._by_mean.items())
            if pids and abs(used - mean) > DRIFT * mean
            for pid in pids
        ]
        self._by_mean = {m: p for m, p in self._by_mean.items() if p}
        return found


__all__ = ["DRIFT", "MeanLength"]
