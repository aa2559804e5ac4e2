"""Qdrant Edge's memory per point, by shard configuration: what grows, anonymous or file-backed.

Usage::

    .venv/bin/python bench/edge_memory.py                          # 100,000 chunks, every variant
    .venv/bin/python bench/edge_memory.py --chunks 20000 --variants default,cold

Each variant is one fresh process that writes ``--chunks`` hybrid chunks (BM25 and a
64-dimension hash vector, :mod:`_hash_embed`) through ``QdrantStore.upsert`` into an on-disk
store (``path=``), in batches of 1,000, and reads ``/proc/self/smaps_rollup`` after a tenth of
them and at the end: anonymous memory (the heap: Python's and the engine's, not reclaimable
without swap) and file-backed resident pages (the shard's mapped files: page cache the kernel
drops under pressure). The growth between the two readings, per point, is what a bigger folder
costs. A variant is a shard configuration (:func:`batonflow.rag._edge._disk_config` replaced in the
child process, batonflow's settling off) and optionally the engine's ``optimize()`` and
``flush()`` every 10,000 points; ``before`` is the configuration of in-memory stores (and of
on-disk ones before), ``after`` batonflow's on-disk default.
Query speed of the variant's shard: the p50 of 200 BM25 and 200 hybrid queries at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _smaps import smaps  # noqa: E402
from rag_bench import make_corpus, make_queries  # noqa: E402

BATCH = 1000
EVERY = 10_000


#: The variants: shard settings (``vectors``/``sparse`` params, ``config`` fields) and what the
#: benchmark calls every 10,000 points (``optimize`` and/or ``flush``). ``after`` is batonflow's
#: own on-disk configuration and settling; every other variant turns batonflow's settling off.
VARIANTS: dict[str, dict[str, Any]] = {
    "before": {},
    "before, flush": {"calls": ("flush",)},
    "before, optimize": {"calls": ("optimize",)},
    "vectors Cold": {"vectors": {"memory": "Cold"}},
    "sparse index Cold": {"sparse": {"memory": "Cold"}},
    "payload Cold": {"config": {"payload_memory": "Cold"}},
    "id tracker Cold": {"config": {"id_tracker_memory": "Cold"}},
    "no WAL": {"config": {"wal_enabled": False}},
    "all Cold": {
        "vectors": {"memory": "Cold"},
        "sparse": {"memory": "Cold"},
        "config": {"payload_memory": "Cold", "id_tracker_memory": "Cold"},
    },
    "all Cold, small segments, optimize": {
        "vectors": {"memory": "Cold"},
        "sparse": {"memory": "Cold"},
        "config": {"payload_memory": "Cold", "small": True},
        "calls": ("optimize",),
    },
    "sparse Pinned, small segments, optimize+flush": {
        "vectors": {"memory": "Cold", "m0": True},
        "config": {"payload_memory": "Cold", "small": True},
        "calls": ("optimize", "flush"),
    },
    "Cached, small segments, optimize+flush": {
        "vectors": {"m0": True},
        "sparse": {"memory": "Cached"},
        "config": {"small": True},
        "calls": ("optimize", "flush"),
    },
    "Cached, 20 MB segments, optimize+flush": {
        "vectors": {"m0": True},
        "sparse": {"memory": "Cached"},
        "config": {"small": 20_000},
        "calls": ("optimize", "flush"),
    },
    "after (batonflow's _disk_config)": {"after": True},
    "after, 6 MB segments": {"after": True, "segment_kb": 6_000},
    "after, settled every 30,000": {"after": True, "settle_every": 30_000},
}


def _variant_config(spec: dict[str, Any]) -> Any:
    """The shard configuration function of a variant's ``spec`` (see :data:`VARIANTS`)."""
    import qdrant_edge as qe
    from batonflow.rag import _edge

    def memory(params: dict[str, Any]) -> dict[str, Any]:
        out = {k: getattr(qe.Memory, v) if k.endswith("memory") else v for k, v in params.items()}
        if out.pop("m0", False):
            out["hnsw_config"] = qe.HnswIndexConfig(
                m=0, ef_construct=100, full_scan_threshold=10_000
            )
        small = out.pop("small", False)
        if small:
            out["optimizers"] = qe.EdgeOptimizersConfig(
                indexing_threshold=1_000, max_segment_size=3_000 if small is True else small
            )
        return out

    def config(layout: Any) -> Any:
        vectors = (
            {
                layout.dense: qe.EdgeVectorParams(
                    size=layout.dense_size,
                    distance=qe.Distance.Cosine,
                    **memory(spec.get("vectors", {})),
                )
            }
            if layout.dense is not None
            else None
        )
        sparse = (
            {
                layout.sparse: qe.EdgeSparseVectorParams(
                    modifier=qe.Modifier.Idf, **memory(spec.get("sparse", {}))
                )
            }
            if layout.sparse is not None
            else None
        )
        return qe.EdgeConfig(
            vectors=vectors,
            sparse_vectors=sparse,
            max_search_threads=_edge._SEARCH_THREADS,
            **memory(spec.get("config", {})),
        )

    return config


def use_before_config() -> None:
    """Configure on-disk shards (in this process) as before issue 32: the in-memory stores'
    configuration, and no settling: every point stays in the appendable segment."""
    from batonflow.rag import _edge

    _edge._SETTLE_EVERY = 2**62
    _edge._disk_config = _edge._config


def _one(variant: str, n: int) -> dict[str, Any]:
    from _hash_embed import hash_vector
    from batonflow.rag import QdrantStore, _edge
    from batonflow.rag.store import Chunk

    spec = VARIANTS[variant]
    if not spec.get("after"):
        use_before_config()  # then the variant's configuration, and its own calls only
        _edge._disk_config = _variant_config(spec)
    if "segment_kb" in spec:
        _edge._SEGMENT_KB = spec["segment_kb"]
    if "settle_every" in spec:
        _edge._SETTLE_EVERY = spec["settle_every"]
    calls = spec.get("calls", ())
    texts = make_corpus(n, seed=23)
    readings: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = QdrantStore(path=tmp)
        shard: Any = None
        start = time.perf_counter()
        for i in range(0, n, BATCH):
            store.upsert(
                [
                    Chunk(
                        text=t,
                        source=f"doc{i + j}",
                        index=0,
                        dense=hash_vector(t),
                        content_hash="h",
                        source_chunks=1,
                    )
                    for j, t in enumerate(texts[i : i + BATCH])
                ]
            )
            done = i + BATCH
            shard = store._engine._shards[store.collection]  # type: ignore[attr-defined]
            if done % EVERY == 0:
                for call in calls:
                    getattr(shard, call)()
            if done == n // 10:
                readings.append(smaps())
        took = time.perf_counter() - start
        readings.append(smaps())
        segments = shard.info().segments_count
        queries = make_queries(texts, 200)
        sparse_ms, hybrid_ms = [], []
        store.query("warm up", top_k=10)
        for q, _ in queries:
            t0 = time.perf_counter()
            store.query(q, top_k=10)
            sparse_ms.append((time.perf_counter() - t0) * 1000)
            vector = hash_vector(q)
            t0 = time.perf_counter()
            store.query(q, dense=vector, top_k=10)
            hybrid_ms.append((time.perf_counter() - t0) * 1000)
        count = store.count()
        store.close()
        disk = sum(p.stat().st_blocks * 512 for p in Path(tmp).rglob("*") if p.is_file()) / 2**20
    first, last = readings
    points = n - n // 10
    return {
        "variant": variant,
        "chunks": count,
        "seconds": took,
        "segments": segments,
        "disk_mb": disk,
        "anon_mb": last["anon"],
        "file_mb": last["file"],
        "anon_b_per_point": (last["anon"] - first["anon"]) * 2**20 / points,
        "file_b_per_point": (last["file"] - first["file"]) * 2**20 / points,
        "sparse_p50_ms": statistics.median(sparse_ms),
        "hybrid_p50_ms": statistics.median(hybrid_ms),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--variants", default=";".join(VARIANTS), help="names, ; between")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_one(args.one, args.chunks)))
        return
    print(
        f"{'variant':<46}{'s':>6}{'segs':>5}{'disk MB':>8}{'anon MB':>8}{'file MB':>8}"
        f"{'anon B/pt':>10}{'file B/pt':>10}{'bm25 p50':>9}{'hybrid p50':>10}"
    )
    for variant in args.variants.split(";"):
        proc = subprocess.run(
            [sys.executable, __file__, "--one", variant, "--chunks", str(args.chunks)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            print(f"{variant:<46}failed: {proc.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"{variant:<46}{r['seconds']:>6.0f}{r['segments']:>5}{r['disk_mb']:>8.0f}"
            f"{r['anon_mb']:>8.0f}{r['file_mb']:>8.0f}{r['anon_b_per_point']:>10.0f}"
            f"{r['file_b_per_point']:>10.0f}{r['sparse_p50_ms']:>9.2f}{r['hybrid_p50_ms']:>10.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
