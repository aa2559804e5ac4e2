"""RAG benchmark: batonflow.rag's embedded store (Qdrant Edge) next to raw qdrant-client.

Usage::

    .venv/bin/python bench/rag_bench.py                      # 10,000 and 100,000 chunks
    .venv/bin/python bench/rag_bench.py --chunks 10000 --queries 50 --json out.json

For each corpus size, in one run and interleaved so machine load hits both alike:

* **ingest (chunks/s)**
  - ``embedded``: ``QdrantStore.upsert`` on Qdrant Edge in a temporary folder: BM25 encoding,
    point ids, payloads (llama-index layout) and the engine's writes;
  - ``client``: raw ``QdrantClient.upsert`` (qdrant-client's local mode, what the store used
    before, in memory: on disk it commits each point to SQLite) of ready-made points with the
    same sparse vectors and payloads: only the client's work;
  - ``workflow``: ``IngestionWorkflow.run(documents=...)`` into Qdrant Edge (sentence
    splitting, batching through the engine, the store, the content-hash check), on the first
    ``--workflow-chunks`` chunks.
* **query latency (ms, p50/p95)** over the same query texts
  - ``embedded``: ``QdrantStore.query`` (encodes the query, BM25 on Qdrant Edge);
  - ``edge``: raw Qdrant Edge, the same shard the store writes, queried directly with the
    precomputed sparse query vector (``EdgeShard.query``): the engine without our layer;
  - ``client``: raw ``QdrantClient.query_points`` with the same precomputed sparse query vector
    (its local mode scans every point in Python, seconds per query at 100,000 chunks, so only
    the first ``--client-queries`` / ``--client-queries-large`` queries);
  - ``rag``: a whole ``RAGWorkflow.run`` on the embedded store (retrieve + extractive answer).
* **answers**: hit@3 (the chunk a query's words were drawn from is in the top 3) on each, the
  embedded store's also on the raw client's (smaller) query set, so the two compare on the same
  queries; and how many top-5 lists have the same scores on the embedded store and each raw
  engine.
* **quality**: hit@3 on the Chinese and English test corpora (``tests/rag/corpora.py``).

All figures come from one run, on whatever machine runs it.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "rag"))  # the test corpora

import qdrant_edge as qe  # noqa: E402
from batonflow.rag import IngestionWorkflow, QdrantStore, RAGWorkflow  # noqa: E402
from batonflow.rag.layout import SPARSE, payload_of  # noqa: E402
from batonflow.rag.sparse import BM25SparseEncoder  # noqa: E402
from batonflow.rag.store import Chunk, chunks_of  # noqa: E402
from corpora import EN_DOCS, EN_QUERIES, ZH_DOCS, ZH_QUERIES, hit_at_k  # noqa: E402
from llama_index.core import Document  # noqa: E402
from qdrant_client import QdrantClient, models  # noqa: E402

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
    return [
        " ".join(rng.choices(vocab, weights=weights, k=rng.randint(60, 120))) + "."
        for _ in range(n)
    ]


def make_queries(texts: list[str], n: int, seed: int = 11) -> list[tuple[str, int]]:
    """``n`` queries of 3-4 words, each drawn from one random chunk: (query, that chunk's index)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        target = rng.randrange(len(texts))
        words = texts[target].rstrip(".").split()
        out.append((" ".join(rng.sample(words, k=min(len(words), rng.randint(3, 4)))), target))
    return out


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


def _chunks(texts: list[str], first: int) -> list[Chunk]:
    return [Chunk(text=t, source=f"doc{first + i}", index=0) for i, t in enumerate(texts)]


def _raw_points(chunks: list[Chunk], encoder: BM25SparseEncoder) -> list[Any]:
    return [
        models.PointStruct(
            id=c.id,
            vector={SPARSE: models.SparseVector(indices=vec.indices, values=vec.values)},
            payload=payload_of(c),
        )
        for c, vec in zip(chunks, encoder.encode_documents([c.text for c in chunks]), strict=True)
    ]


def bench_ingest(
    root: Path, texts: list[str], encoder: BM25SparseEncoder, slices: int = 10
) -> tuple[dict[str, float], QdrantStore, QdrantClient]:
    """Seconds to ingest ``texts`` on the embedded store and on raw qdrant-client, interleaved."""
    # In memory: on disk, qdrant-client's local mode commits each point to SQLite (~55 points/s
    # here, half an hour for 100,000); in memory it is at its fastest.
    client = QdrantClient(location=":memory:")
    client.create_collection(
        "docs",
        vectors_config={},
        sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    store = QdrantStore(path=root / "edge", batch_size=BATCH)
    seconds = {"embedded": 0.0, "client": 0.0}
    size = -(-len(texts) // slices)
    for first in range(0, len(texts), size):
        chunks = _chunks(texts[first : first + size], first)
        points = _raw_points(chunks, encoder)  # prepared outside the timing: raw has no encoder
        start = time.perf_counter()
        for i in range(0, len(points), BATCH):
            client.upsert("docs", points=points[i : i + BATCH], wait=True)
        seconds["client"] += time.perf_counter() - start
        start = time.perf_counter()
        store.upsert(chunks)
        seconds["embedded"] += time.perf_counter() - start
    counts = {client.count("docs").count, store.count()}
    if counts != {len(texts)}:
        raise SystemExit(f"collections hold {counts} points, expected {len(texts)}")
    return seconds, store, client


async def bench_workflow(root: Path, texts: list[str]) -> float:
    """Seconds for IngestionWorkflow to ingest ``texts`` as documents into Qdrant Edge."""
    with QdrantStore(path=root / "flow", batch_size=BATCH) as store:
        flow = IngestionWorkflow(store=store, embed_batch_size=BATCH)
        docs = [Document(text=t, metadata={"source": f"doc{i}"}) for i, t in enumerate(texts)]
        start = time.perf_counter()
        report = await flow.run(documents=docs)
        took = time.perf_counter() - start
    if report.chunks != len(texts):
        raise SystemExit(f"workflow stored {report.chunks} chunks for {len(texts)} texts")
    return took


async def bench_queries(
    store: QdrantStore,
    client: QdrantClient,
    queries: list[tuple[str, int]],
    client_queries: int,
    encoder: BM25SparseEncoder,
) -> dict[str, Any]:
    """Latencies (ms) and answers of the embedded store, raw qdrant-client and RAGWorkflow."""
    flow = RAGWorkflow(store=store, top_k=5)
    shard = store._engine._shards["docs"]  # the Edge shard the store wrote: the raw engine
    lat: dict[str, list[float]] = {"embedded": [], "edge": [], "client": [], "rag": []}
    hits = {"embedded": 0, "edge": 0, "client": 0, "embedded_on_client_queries": 0}
    same = {"edge": 0, "client": 0}
    for n, (q, target) in enumerate(queries):
        want = f"doc{target}"
        vec = encoder.encode_query(q)
        start = time.perf_counter()
        found = store.query(q, top_k=5)
        lat["embedded"].append((time.perf_counter() - start) * 1000)
        hit = want in [h.source for h in found[:3]]
        hits["embedded"] += hit
        start = time.perf_counter()
        points = shard.query(
            qe.QueryRequest(
                limit=5,
                query=qe.Query.Nearest(qe.SparseVector(vec.indices, vec.values), using=SPARSE),
                with_payload=True,
            )
        )
        lat["edge"].append((time.perf_counter() - start) * 1000)
        hits["edge"] += want in [(p.payload or {}).get("source") for p in points[:3]]
        # Ties may come back in another order; the scores must be the same.
        same["edge"] += [round(h.score, 4) for h in found] == [round(p.score, 4) for p in points]
        start = time.perf_counter()
        response = await flow.run(query=q)
        lat["rag"].append((time.perf_counter() - start) * 1000)
        if not found or not response.sources:
            raise SystemExit(f"query {q!r} found nothing: the benchmark corpus is broken")
        if n < client_queries:
            hits["embedded_on_client_queries"] += hit
            start = time.perf_counter()
            raw = client.query_points(
                "docs",
                query=models.SparseVector(indices=vec.indices, values=vec.values),
                using=SPARSE,
                limit=5,
                with_payload=True,
            ).points
            lat["client"].append((time.perf_counter() - start) * 1000)
            hits["client"] += want in [(p.payload or {}).get("source") for p in raw[:3]]
            same["client"] += [round(h.score, 4) for h in found] == [round(p.score, 4) for p in raw]
    return {
        "query_ms": {
            name: {"p50": pct(v, 50), "p95": pct(v, 95), "mean": statistics.fmean(v), "n": len(v)}
            for name, v in lat.items()
        },
        "hit_at_3": {
            "embedded": hits["embedded"] / len(queries),
            "edge": hits["edge"] / len(queries),
            "client": hits["client"] / client_queries,
            "embedded_on_client_queries": hits["embedded_on_client_queries"] / client_queries,
        },
        "same_top5_scores": {
            "edge": f"{same['edge']}/{len(queries)}",
            "client": f"{same['client']}/{client_queries}",
        },
    }


def corpus_quality() -> dict[str, dict[str, float]]:
    """hit@3 on the Chinese and English test corpora, on both engines."""
    out: dict[str, dict[str, float]] = {}
    for lang, docs, queries in (("zh", ZH_DOCS, ZH_QUERIES), ("en", EN_DOCS, EN_QUERIES)):
        out[lang] = {}
        for engine in ("embedded", "client"):
            client = QdrantClient(location=":memory:") if engine == "client" else None
            store = (
                QdrantStore(client=client)
                if client is not None
                else QdrantStore(location=":memory:")
            )
            for source, text in docs.items():
                store.upsert(chunks_of(source, [text]))
            found = [[h.source for h in store.query(q, top_k=3)] for q, _ in queries]
            out[lang][engine] = hit_at_k(found, [want for _, want in queries])
            store.close()
            if client is not None:
                client.close()
    return out


def run_size(n: int, args: argparse.Namespace, encoder: BM25SparseEncoder) -> dict[str, Any]:
    """Every measurement at ``n`` chunks."""
    texts = make_corpus(n)
    queries = make_queries(texts, args.queries)
    client_queries = min(
        len(queries), args.client_queries if n <= 20_000 else args.client_queries_large
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        seconds, store, client = bench_ingest(root, texts, encoder)
        flow_n = min(n, args.workflow_chunks)
        flow_s = asyncio.run(bench_workflow(root, texts[:flow_n]))
        result = asyncio.run(bench_queries(store, client, queries, client_queries, encoder))
        store.close()
        client.close()
    result["chunks"] = n
    result["ingest_chunks_per_s"] = {
        "embedded": n / seconds["embedded"],
        "client": n / seconds["client"],
        "workflow": flow_n / flow_s,
    }
    for engine in ("client", "edge"):
        result[f"query_p50_ratio_{engine}_over_embedded"] = (
            result["query_ms"][engine]["p50"] / result["query_ms"]["embedded"]["p50"]
        )
    return result


def print_size(r: dict[str, Any]) -> None:
    """One size's figures, for humans."""
    ing, q, hit = r["ingest_chunks_per_s"], r["query_ms"], r["hit_at_3"]
    print(f"\n{r['chunks']:,} chunks")
    print(f"  {'':<36}{'ingest/s':>10}{'p50 ms':>10}{'p95 ms':>10}{'hit@3':>8}{'queries':>9}")
    rows = [
        ("embedded QdrantStore (Qdrant Edge)", ing["embedded"], q["embedded"], hit["embedded"]),
        ("raw Qdrant Edge (same shard)", None, q["edge"], hit["edge"]),
        ("raw qdrant-client (local, memory)", ing["client"], q["client"], hit["client"]),
        ("RAGWorkflow.run on embedded", ing["workflow"], q["rag"], None),
    ]
    for label, rate, lat, h in rows:
        shown = f"{h:.2f}" if h is not None else "-"
        rate_shown = f"{rate:,.0f}" if rate is not None else "-"
        print(
            f"  {label:<36}{rate_shown:>10}{lat['p50']:>10.2f}{lat['p95']:>10.2f}"
            f"{shown:>8}{lat['n']:>9}"
        )
    same = r["same_top5_scores"]
    print(
        f"  query p50 raw Edge/embedded: {r['query_p50_ratio_edge_over_embedded']:.2f}x; "
        f"raw client/embedded: {r['query_p50_ratio_client_over_embedded']:.0f}x"
    )
    print(
        f"  hit@3 on the raw client's {q['client']['n']} queries: embedded "
        f"{hit['embedded_on_client_queries']:.2f}, raw client {hit['client']:.2f}; "
        f"same top-5 scores as embedded: raw Edge {same['edge']}, raw client {same['client']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, action="append", help="corpus size (repeatable)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--client-queries",
        type=int,
        default=50,
        help="raw qdrant-client queries up to 20,000 chunks (the first ones of --queries)",
    )
    parser.add_argument(
        "--client-queries-large",
        type=int,
        default=10,
        help="raw qdrant-client queries above 20,000 chunks (each scans every point in Python)",
    )
    parser.add_argument("--workflow-chunks", type=int, default=10_000)
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args()
    sizes = args.chunks or [10_000, 100_000]
    encoder = BM25SparseEncoder()
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "quality_hit_at_3": corpus_quality(),
        "sizes": [],
    }
    quality = results["quality_hit_at_3"]
    print("RAG bench: embedded Qdrant Edge (on disk) vs raw qdrant-client local mode (in memory)")
    print(
        "hit@3 on the test corpora: "
        + ", ".join(
            f"{lang} {v['embedded']:.2f} (client {v['client']:.2f})" for lang, v in quality.items()
        )
    )
    for n in sizes:
        r = run_size(n, args, encoder)
        results["sizes"].append(r)
        print_size(r)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
        print(f"wrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
