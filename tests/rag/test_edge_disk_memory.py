"""An on-disk store moves its points out of the process's heap into memory-mapped segments.

Qdrant Edge writes points into an appendable segment whose sparse index lives in the heap
(about 1.4 KB a BM25 point, kept until the shard closes). An on-disk store has the optimizer
move them into memory-mapped segments every ``_SETTLE_EVERY`` points, so anonymous memory (what
the kernel cannot reclaim) stops growing with the collection; the mapped files' pages are page
cache. These tests check the memory in a fresh process, and that settled points read, search,
update and delete as before (against an in-memory store, which never settles).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from batonflow.rag import QdrantStore, _edge
from batonflow.rag.store import Chunk

SCRIPT = textwrap.dedent(
    """
    import gc, json, random, sys
    from batonflow.rag import QdrantStore
    from batonflow.rag.store import Chunk

    def anonymous_kb():
        with open("/proc/self/smaps_rollup") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("Anonymous:"))

    path, first, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(3)
    words = ["".join(rng.choices("abcdefghijklmnoprstuvy", k=rng.randint(3, 9))) for _ in range(4000)]
    readings = {}
    with QdrantStore(path=path) as store:
        for start in range(0, total, 1000):
            store.upsert([
                Chunk(text=" ".join(rng.choices(words, k=90)), source=f"f{start + i}", index=0,
                      dense=[rng.random() for _ in range(16)])
                for i in range(1000)
            ])
            if start + 1000 in (first, total):
                gc.collect()
                readings[start + 1000] = anonymous_kb()
        assert store.count() == total
    print(json.dumps(readings))
    """
)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_anonymous_memory_does_not_grow_with_an_on_disk_collection(tmp_path: Path) -> None:
    """From 20,000 to 60,000 hybrid points, anonymous memory grows under 800 bytes a point.

    Held in the appendable segment, the points cost about 1.6 KB each of Edge's heap, plus the
    store's own ~300 bytes (each point's BM25 length, kept in Python).
    """
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "q"), "20000", "60000"],
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    readings = json.loads(out.stdout.strip().splitlines()[-1])
    per_point = (readings["60000"] - readings["20000"]) * 1024 / 40_000
    assert per_point < 800, f"anonymous memory grew {per_point:.0f} bytes a point"


def _chunks(n: int, seed: int, source: str | None = None) -> list[Chunk]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(300)]
    return [
        Chunk(
            text=" ".join(rng.choices(words, k=30)),
            source=source or f"s{i % 40}",
            index=i if source else i // 40,
            dense=[rng.random() for _ in range(8)],
        )
        for i in range(n)
    ]


def _write(store: QdrantStore) -> None:
    """400 chunks in 4 writes (the BM25 mean drifts: earlier points are re-encoded), a source
    deleted and one replaced."""
    chunks = _chunks(400, seed=1)
    for start in range(0, 400, 100):
        store.upsert(chunks[start : start + 100])
    store.delete_source("s3")
    store.replace_source("s5", _chunks(4, seed=2, source="s5"))


def _hits(store: QdrantStore) -> list[tuple[list[float], set[tuple[str, str]]]]:
    """Per query (BM25 alone, the embedding alone): the top scores, and the hits above the
    last score (points tied at the cut may come in any order)."""
    out = []
    for text, dense in [
        ("w1 w7 w30", None),
        ("w2 w250", None),
        ("the", [0.5] * 8),
        ("a", [0.1, 0.9] * 4),
    ]:
        hits = store.query(text, top_k=5, dense=dense)
        scores = [round(h.score, 5) for h in hits]
        out.append((scores, {(h.source, h.text) for h in hits if round(h.score, 5) > scores[-1]}))
    return out


def _segments(store: QdrantStore) -> int:
    return int(store._engine._shards[store.collection].info().segments_count)  # type: ignore[union-attr]


@pytest.fixture
def settle_often(monkeypatch: pytest.MonkeyPatch) -> None:
    """On-disk shards settle every 50 points, into segments of a few KB."""
    monkeypatch.setattr(_edge, "_SETTLE_EVERY", 50)
    monkeypatch.setattr(_edge, "_INDEXING_KB", 1)
    monkeypatch.setattr(_edge, "_SEGMENT_KB", 8)


@pytest.mark.usefixtures("settle_often")
def test_settled_points_read_search_update_and_delete_as_in_memory(tmp_path: Path) -> None:
    """Settled every 50 points, a disk store answers as a memory store written alike, and
    again when reopened."""
    with QdrantStore(path=tmp_path / "q") as disk, QdrantStore(location=":memory:") as memory:
        _write(disk)
        _write(memory)
        assert _segments(disk) > 1, "the disk store's points never left the appendable segment"
        assert disk.count() == memory.count() == 400 - 10 - 10 + 4
        assert disk.stored_sources() == memory.stored_sources()
        expected = _hits(memory)
        assert _hits(disk) == expected
    with QdrantStore(path=tmp_path / "q") as reopened:
        assert _hits(reopened) == expected


@pytest.mark.usefixtures("settle_often")
def test_a_folder_written_before_opens_and_settles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shard created with the earlier configuration (everything in the appendable segment)
    opens with the on-disk one, takes more points and finds the old ones."""
    with monkeypatch.context() as m:
        m.setattr(_edge, "_disk_config", _edge._config)
        m.setattr(_edge, "_SETTLE_EVERY", 10**9)
        with QdrantStore(path=tmp_path / "q") as old:
            old.upsert(_chunks(200, seed=1))
    more = _chunks(100, seed=3, source="new")
    with QdrantStore(path=tmp_path / "q") as store, QdrantStore(location=":memory:") as memory:
        store.upsert(more)
        memory.upsert(_chunks(200, seed=1))
        memory.upsert(more)
        assert _segments(store) > 1
        assert store.count() == memory.count() == 300
        assert _hits(store) == _hits(memory)
