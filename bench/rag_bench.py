"""RAG storage benchmark: batonflow.rag on local Qdrant next to raw qdrant-client.

Usage::

    .venv/bin/python bench/rag_bench.py                 # 10,000 chunks, 200 queries
    .venv/bin/python bench/rag_bench.py --chunks 2000 --queries 50 --json out.json

What is measured, on embedded (local, on-disk) Qdrant in a temporary folder:

* **ingest (chunks/s)**
  - ``raw``: ``QdrantClient.upsert`` of ready-made points (sparse vectors precomputed), in
    batches of 256 — only the client calls;
  - ``store``: ``QdrantStore.upsert`` of the same chunks — BM25 encoding, point ids, payloads
    and the same batched client calls;
  - ``workflow``: ``IngestionWorkflow.run(documents=...)`` — sentence splitting, batching
    through the engine, the store, and pruning of stale chunks.
* **query latency (ms, p50/p95)** over the same query texts
  - ``raw``: ``QdrantClient.query_points`` with a precomputed sparse query vector;
  - ``store``: ``QdrantStore.query`` (encodes the query, then the same call);
  - ``rag``: a whole ``RAGWorkflow`` run (retrieve + extractive answer, no LLM).

Ratios are batonflow's time over raw's for the same work (1.00 = no overhead). All figures come
from one run, on whatever machine runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from batonflow.rag import IngestionWorkflow, QdrantStore, RAGWorkflow
from batonflow.rag.sparse import BM25SparseEncoder
from batonflow.rag.store import SPARSE, Chunk
from llama_index.core import Document
from llama_index.core.node_parser import SentenceSplitter
from qdrant_client import QdrantClient, models

BATCH = 256


def make_corpus(n: int, seed: int = 7) -> list[str]:
    """``n`` deterministic pseudo-English chunks of 60-120 words over a 5,000-word vocabulary."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ra", "te", "zu", "no", "pe", "si", "va", "do", "qu"]
    vocab = sorted({"".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(8000)})[
        :5000
    ]
    # Zipf-like: a few words are common, most are rare.
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    texts = []
    for _ in range(n):
        words = rng.choices(vocab, weights=weights, k=rng.randint(60, 120))
        texts.append(" ".join(words) + ".")
    return texts


def make_queries(texts: list[str], n: int, seed: int = 11) -> list[str]:
    """``n`` queries of 2-3 words each, taken from random chunks (so each has an answer)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = rng.choice(texts).rstrip(".").split()
        out.append(" ".join(rng.sample(words, k=min(len(words), rng.randint(2, 3)))))
    return out


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


def _raw_points(texts: list[str], first: int, encoder: BM25SparseEncoder) -> list[Any]:
    chunks = [Chunk(text=t, source=f"doc{first + i}", index=0) for i, t in enumerate(texts)]
    return [
        models.PointStruct(
            id=c.id,
            vector={SPARSE: models.SparseVector(indices=vec.indices, values=vec.values)},
            payload={"text": c.text, "source": c.source, "chunk": 0, "metadata": {}},
        )
        for c, vec in zip(chunks, encoder.encode_documents(texts), strict=True)
    ]


def _open(root: Path, name: str, memory: bool) -> dict[str, Any]:
    return {"location": ":memory:"} if memory else {"path": str(root / name)}


async def bench_ingest(
    root: Path, texts: list[str], encoder: BM25SparseEncoder, memory: bool, slices: int = 10
) -> tuple[dict[str, float], list[QdrantStore]]:
    """Seconds per implementation to ingest ``texts``, interleaved slice by slice.

    Each slice is ingested by raw qdrant-client, then QdrantStore, then IngestionWorkflow, each
    into its own collection, so a change in machine load hits all three alike.
    """
    opts = _open(root, "raw", memory)
    raw = QdrantClient(**opts) if memory else QdrantClient(path=opts["path"])
    raw.create_collection(
        "docs",
        vectors_config={},
        sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    store = QdrantStore(**_open(root, "store", memory), batch_size=BATCH)
    flow_store = QdrantStore(**_open(root, "flow", memory), batch_size=BATCH)
    flow = IngestionWorkflow(
        store=flow_store, splitter=SentenceSplitter(chunk_size=1024), embed_batch_size=BATCH
    )
    seconds = {"raw": 0.0, "store": 0.0, "workflow": 0.0}
    size = -(-len(texts) // slices)
    for first in range(0, len(texts), size):
        part = texts[first : first + size]
        points = _raw_points(
            part, first, encoder
        )  # prepared outside the timing: raw has no encoder
        start = time.perf_counter()
        for i in range(0, len(points), BATCH):
            raw.upsert("docs", points=points[i : i + BATCH], wait=True)
        seconds["raw"] += time.perf_counter() - start

        chunks = [Chunk(text=t, source=f"doc{first + i}", index=0) for i, t in enumerate(part)]
        start = time.perf_counter()
        store.upsert(chunks)
        seconds["store"] += time.perf_counter() - start

        docs = [
            Document(text=t, metadata={"source": f"doc{first + i}"}) for i, t in enumerate(part)
        ]
        start = time.perf_counter()
        report = await flow.run(documents=docs)
        seconds["workflow"] += time.perf_counter() - start
        if report.chunks != len(part):
            raise SystemExit(f"workflow stored {report.chunks} chunks for {len(part)} texts")
    counts = {raw.count("docs").count, store.count(), flow_store.count()}
    if counts != {len(texts)}:
        raise SystemExit(f"collections hold {counts} points, expected {len(texts)}")
    raw.close()
    flow_store.close()
    return seconds, [store]


async def bench_queries(
    store: QdrantStore, queries: list[str], encoder: BM25SparseEncoder
) -> dict[str, list[float]]:
    """Latencies (ms) of raw query_points, QdrantStore.query and RAGWorkflow.run, interleaved."""
    client = store.client
    flow = RAGWorkflow(store=store, top_k=5)
    lat: dict[str, list[float]] = {"raw": [], "store": [], "rag": []}
    for q in queries:
        vec = encoder.encode_query(q)
        start = time.perf_counter()
        client.query_points(
            "docs",
            query=models.SparseVector(indices=vec.indices, values=vec.values),
            using=SPARSE,
            limit=5,
            with_payload=True,
        )
        lat["raw"].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        hits = store.query(q, top_k=5)
        lat["store"].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        response = await flow.run(query=q)
        lat["rag"].append((time.perf_counter() - start) * 1000)
        if not hits or not response.sources:
            raise SystemExit(f"query {q!r} found nothing: the benchmark corpus is broken")
    return lat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--memory", action="store_true", help="local in-memory Qdrant instead of a disk folder"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args()

    texts = make_corpus(args.chunks)
    queries = make_queries(texts, args.queries)
    encoder = BM25SparseEncoder()
    results: dict[str, Any] = {
        "chunks": args.chunks,
        "queries": args.queries,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        seconds, (store,) = asyncio.run(bench_ingest(Path(tmp), texts, encoder, args.memory))
        lat = asyncio.run(bench_queries(store, queries, encoder))
        store.close()
    raw_s, store_s, flow_s = seconds["raw"], seconds["store"], seconds["workflow"]

    n = args.chunks
    results["ingest_chunks_per_s"] = {
        "raw": n / raw_s,
        "store": n / store_s,
        "workflow": args.chunks / flow_s,
    }
    results["ingest_ratio_vs_raw"] = {"store": store_s / raw_s, "workflow": flow_s / raw_s}
    results["query_ms"] = {
        name: {"p50": pct(v, 50), "p95": pct(v, 95), "mean": statistics.fmean(v)}
        for name, v in lat.items()
    }
    results["query_p50_ratio_vs_raw"] = {
        name: results["query_ms"][name]["p50"] / results["query_ms"]["raw"]["p50"]
        for name in ("store", "rag")
    }

    ing = results["ingest_chunks_per_s"]
    ratio = results["ingest_ratio_vs_raw"]
    where = "in-memory" if args.memory else "on-disk"
    results["qdrant"] = f"local {where}"
    print(f"RAG bench: {n:,} chunks, {args.queries} queries, local {where} Qdrant")
    print(f"{'ingest':<28}{'chunks/s':>12}{'time vs raw':>14}")
    print(f"{'  raw qdrant-client':<28}{ing['raw']:>12,.0f}{1.0:>14.2f}")
    print(f"{'  QdrantStore.upsert':<28}{ing['store']:>12,.0f}{ratio['store']:>14.2f}")
    print(f"{'  IngestionWorkflow':<28}{ing['workflow']:>12,.0f}{ratio['workflow']:>14.2f}")
    print(f"{'query':<28}{'p50 ms':>12}{'p95 ms':>10}{'p50 vs raw':>12}")
    labels = {"raw": "raw query_points", "store": "QdrantStore.query", "rag": "RAGWorkflow.run"}
    for name, label in labels.items():
        q = results["query_ms"][name]
        r = 1.0 if name == "raw" else results["query_p50_ratio_vs_raw"][name]
        print(f"  {label:<26}{q['p50']:>12.2f}{q['p95']:>10.2f}{r:>12.2f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
        print(f"wrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
