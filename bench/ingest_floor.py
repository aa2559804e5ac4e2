"""The floor of the store's write: Qdrant Edge given ready points, beside qdrant-client.

``bench/ingest_bench.py`` compares ``QdrantStore.upsert`` (which tokenizes, encodes BM25,
builds ids and payloads, then writes through Qdrant Edge) with qdrant-client's in-memory
``upsert`` of points built before its clock starts. This measures what is left when the store
does none of its own work: the same points (ids, sparse and dense vectors, payloads, all
computed before the clock starts) handed to the store's Edge engine, which builds Edge's
``Point`` objects and writes them, against qdrant-client's upsert of the same points. Each
side runs in a fresh process, interleaved, CPU time of the process, medians.

    .venv/bin/python bench/ingest_floor.py --chunks 5000 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ingest_bench import bench_chunks, client_collection  # noqa: E402
from rag_bench import make_corpus  # noqa: E402


def _ready(n: int, hybrid: bool) -> tuple[Any, list[Any], list[Any]]:
    """A store, its chunks, and the points its engine writes for them (all built here)."""
    from batonflow.rag import QdrantStore
    from batonflow.rag._bm25_points import encode_points

    chunks = bench_chunks(make_corpus(n), hybrid)
    store = QdrantStore(location=":memory:")
    store.upsert(chunks[:1])  # creates the collection and its layout
    counted = [store.encoder.count_terms(c.text) for c in chunks]
    points = encode_points(
        store.encoder, store._load_lengths(), chunks, [c.id for c in chunks], counted
    )
    return store, chunks, points


def _side(kind: str, n: int, hybrid: bool) -> dict[str, float]:
    store, chunks, points = _ready(n, hybrid)
    if kind == "edge":
        layout = store._ensure_collection(len(chunks[0].dense) if hybrid else None)
        engine, name = store._engine, store.collection
        cpu = time.process_time()
        for i in range(0, n, 256):
            engine.upsert(name, layout, points[i : i + 256])
        cpu = time.process_time() - cpu
    else:
        from batonflow.rag.layout import DENSE, SPARSE
        from qdrant_client import models

        client = client_collection(chunks)
        ready = []
        for pid, sparse, dense, payload in points:
            vector: dict[str, Any] = {
                SPARSE: models.SparseVector(indices=sparse.indices, values=sparse.values)
            }
            if dense is not None:
                vector[DENSE] = list(dense)
            ready.append(models.PointStruct(id=pid, vector=vector, payload=payload))
        cpu = time.process_time()
        for i in range(0, n, 256):
            client.upsert("docs", points=ready[i : i + 256], wait=True)
        cpu = time.process_time() - cpu
    return {"us_per_point": cpu / n * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--side", help=argparse.SUPPRESS)
    parser.add_argument("--hybrid", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(_side(args.side, args.chunks, args.hybrid)))
        return
    for hybrid in (False, True):
        got: dict[str, list[float]] = {"edge": [], "client": []}
        for r in range(args.rounds):
            for side in ("edge", "client") if r % 2 == 0 else ("client", "edge"):
                cmd = [sys.executable, __file__, "--side", side, "--chunks", str(args.chunks)]
                out = subprocess.run(
                    cmd + (["--hybrid"] if hybrid else []),
                    capture_output=True,
                    text=True,
                    check=True,
                )
                got[side].append(json.loads(out.stdout.splitlines()[-1])["us_per_point"])
        edge, client = statistics.median(got["edge"]), statistics.median(got["client"])
        print(
            f"{'hybrid' if hybrid else 'sparse'}: Edge given ready points {edge:.1f} µs/point, "
            f"qdrant-client {client:.1f} µs/point (CPU, medians of {args.rounds}); "
            f"store floor / client = {client / edge:.2f}x speed"
        )


if __name__ == "__main__":
    main()
