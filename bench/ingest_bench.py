"""Ingest benchmark: batonflow's store and pipeline beside qdrant-client and llama-index.

Usage::

    .venv/bin/python bench/ingest_bench.py                    # 10,000 chunks, 3 rounds, 100,000 memory
    .venv/bin/python bench/ingest_bench.py --chunks 5000 --rounds 1 --large 0
    sh bench/before_tree.sh 14143ba /tmp/before && \
        .venv/bin/python bench/ingest_bench.py --chunks 5000 --large 0 --before /tmp/before/pkg

Every figure is one fresh process (so peak RSS is that side's alone), the sides interleaved in
each round so machine load hits them alike; the medians and their ratios are printed.

* **store** (the same vectors): ``QdrantStore.upsert`` of chunks on Qdrant Edge (BM25
  encoding, point ids, payloads and the engine's writes), against ``QdrantClient.upsert`` in
  its in-memory local mode of ready-made points with the same sparse vectors, dense vectors
  and payloads (built before the clock starts: only the client's work is timed).
  ``sparse``: BM25 only; ``hybrid``: BM25 and a 64-dimension dense vector.
* **pipeline** (the same splitter and embedding): ``IngestionWorkflow.run(documents=...)``
  into Qdrant Edge against llama-index's ``VectorStoreIndex.from_documents`` into
  ``QdrantVectorStore`` on qdrant-client's in-memory mode, both with
  ``SentenceSplitter(chunk_size=256, chunk_overlap=20)`` and :class:`_hash_embed.HashEmbedding`.
  batonflow also writes a BM25 vector per chunk, which llama-index does not.
* **memory at scale**: ``IngestionWorkflow.run(paths=[folder])`` of a folder of ``--large``
  chunks (and of a tenth of it) into Qdrant Edge on disk, in-process and with worker
  processes, beside llama-index's ``SimpleDirectoryReader`` + ``from_documents`` of the same
  folder into ``QdrantVectorStore`` on qdrant-client's local mode, in memory and on disk
  (``path=``), same splitter and embedding: peak RSS of each, and the peaks of its anonymous
  and file-backed resident memory (``/proc/self/smaps_rollup``, sampled, :mod:`_smaps`).
  ``--rounds 0`` runs only this part; ``--edge-before`` adds batonflow's folder run with
  on-disk shards configured as before issue 32 (:func:`edge_memory.use_before_config`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _smaps import PeakSampler  # noqa: E402
from rag_bench import make_corpus  # noqa: E402

CHUNK_SIZE, OVERLAP = 256, 20
#: Corpus texts per document (each text is one 60-120 word paragraph).
PER_DOC = 8
#: The suffix of the sides that run the code of ``--before``.
BEFORE = " (before)"
STORE_SIDES = ("store-sparse", "client-sparse", "store-hybrid", "client-hybrid")
PIPELINE_SIDES = ("pipeline", "llama")


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# --- one side, in its own process -------------------------------------------------------------


def bench_chunks(texts: list[str], dense: bool) -> list[Any]:
    """The store's chunks of ``texts`` (one a document), with hash embeddings when ``dense``."""
    from _hash_embed import hash_vector
    from batonflow.rag.store import Chunk

    return [
        Chunk(
            text=t,
            source=f"doc{i}",
            index=0,
            dense=hash_vector(t) if dense else None,
            content_hash="h",
            source_chunks=1,
        )
        for i, t in enumerate(texts)
    ]


def client_collection(chunks: list[Any]) -> Any:
    """qdrant-client in memory with collection ``docs`` laid out as the store lays out its own
    (BM25 sparse vectors with IDF, and the dense vector when ``chunks`` have one)."""
    from batonflow.rag.layout import DENSE, SPARSE
    from qdrant_client import QdrantClient, models

    client = QdrantClient(location=":memory:")
    size = len(chunks[0].dense or ())
    client.create_collection(
        "docs",
        vectors_config={DENSE: models.VectorParams(size=size, distance="Cosine")} if size else {},
        sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    return client


def _store_side(kind: str, n: int) -> dict[str, Any]:
    from batonflow.rag import QdrantStore

    texts = make_corpus(n)
    dense = kind.endswith("hybrid")
    chunks = bench_chunks(texts, dense)
    if kind.startswith("store"):
        store = QdrantStore(location=":memory:")
        base = _current_rss_mb()
        start, cpu = time.perf_counter(), time.process_time()
        for i in range(0, n, 256):
            store.upsert(chunks[i : i + 256])
        took, cpu = time.perf_counter() - start, time.process_time() - cpu
        count = store.count()
        store.close()
    else:
        from batonflow.rag.layout import DENSE, SPARSE, payload_of
        from batonflow.rag.sparse import BM25SparseEncoder
        from qdrant_client import models

        encoder = BM25SparseEncoder()
        client = client_collection(chunks)
        vectors = encoder.encode_documents(texts, avg_len=None)
        points = []
        for c, vec in zip(chunks, vectors, strict=True):
            vector: dict[str, Any] = {
                SPARSE: models.SparseVector(indices=vec.indices, values=vec.values)
            }
            if c.dense is not None:
                vector[DENSE] = list(c.dense)
            points.append(models.PointStruct(id=c.id, vector=vector, payload=payload_of(c, "h")))
        base = _current_rss_mb()
        start, cpu = time.perf_counter(), time.process_time()
        for i in range(0, n, 256):
            client.upsert("docs", points=points[i : i + 256], wait=True)
        took, cpu = time.perf_counter() - start, time.process_time() - cpu
        count = client.count("docs").count
        client.close()
    if count != n:
        raise SystemExit(f"{kind}: {count} points stored, expected {n}")
    return {"seconds": took, "cpu": cpu, "chunks": n, "peak_rss_mb": _rss_mb(), "base_rss_mb": base}


async def _run(flow: Any, **kwargs: Any) -> Any:
    return await flow.run(**kwargs)


def _documents(n: int) -> list[Any]:
    from llama_index.core import Document

    texts = make_corpus(n)
    return [
        Document(text="\n\n".join(texts[i : i + PER_DOC]), metadata={"source": f"doc{i}"})
        for i in range(0, n, PER_DOC)
    ]


def _pipeline_side(kind: str, n: int, workers: int | None) -> dict[str, Any]:
    from _hash_embed import HashEmbedding
    from llama_index.core.node_parser import SentenceSplitter

    docs = _documents(n)
    splitter = SentenceSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=OVERLAP)
    embed = HashEmbedding(embed_batch_size=64)
    if kind == "pipeline":
        from batonflow.rag import IngestionWorkflow, QdrantStore

        store = QdrantStore(location=":memory:")
        more = {"num_workers": workers} if workers else {}  # 0: the option's in-process run
        flow = IngestionWorkflow(store=store, embed_model=embed, splitter=splitter, **more)
        base = _current_rss_mb()
        start, cpu = time.perf_counter(), time.process_time()
        report = asyncio.run(_run(flow, documents=docs))
        took, cpu = time.perf_counter() - start, time.process_time() - cpu
        chunks = report.chunks
        store.close()
    else:
        from llama_index.core import StorageContext, VectorStoreIndex
        from llama_index.vector_stores.qdrant import QdrantVectorStore
        from qdrant_client import QdrantClient

        client = QdrantClient(location=":memory:")
        vector_store = QdrantVectorStore(client=client, collection_name="docs")
        base = _current_rss_mb()
        start, cpu = time.perf_counter(), time.process_time()
        VectorStoreIndex.from_documents(
            docs,
            storage_context=StorageContext.from_defaults(vector_store=vector_store),
            embed_model=embed,
            transformations=[splitter],
        )
        took, cpu = time.perf_counter() - start, time.process_time() - cpu
        chunks = client.count("docs").count
        client.close()
    return {
        "seconds": took,
        "cpu": cpu,
        "chunks": chunks,
        "peak_rss_mb": _rss_mb(),
        "base_rss_mb": base,
    }


def _folder_side(folder: str, workers: int | None, before: bool = False) -> dict[str, Any]:
    from _hash_embed import HashEmbedding
    from batonflow.rag import IngestionWorkflow, QdrantStore
    from llama_index.core.node_parser import SentenceSplitter

    if before:  # on-disk shards configured as before issue 32: every point in the heap
        from edge_memory import use_before_config

        use_before_config()

    with tempfile.TemporaryDirectory() as tmp:
        store = QdrantStore(path=tmp)
        flow = IngestionWorkflow(
            store=store,
            embed_model=HashEmbedding(embed_batch_size=64),
            splitter=SentenceSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=OVERLAP),
            timeout=None,
            **({"num_workers": workers} if workers else {}),
        )
        base = _current_rss_mb()
        start, cpu = time.perf_counter(), time.process_time()
        with PeakSampler() as sampled:
            report = asyncio.run(_run(flow, paths=[folder]))
        took, cpu = time.perf_counter() - start, time.process_time() - cpu
        store.close()
    return {
        "seconds": took,
        "cpu": cpu,
        "chunks": report.chunks,
        "peak_rss_mb": _rss_mb(),
        "base_rss_mb": base,
        "peak_anon_mb": sampled.peak["anon"],
        "peak_file_mb": sampled.peak["file"],
    }


def _llama_folder_side(folder: str, where: str) -> dict[str, Any]:
    """llama-index's way to ingest ``folder``: its reader, ``from_documents`` into
    ``QdrantVectorStore`` on qdrant-client's local mode (``where``: ``memory`` or ``disk``)."""
    from _hash_embed import HashEmbedding
    from llama_index.core import SimpleDirectoryReader, StorageContext, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.vector_stores.qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient

    with tempfile.TemporaryDirectory() as tmp:
        client = QdrantClient(location=":memory:") if where == "memory" else QdrantClient(path=tmp)
        vector_store = QdrantVectorStore(client=client, collection_name="docs")
        base = _current_rss_mb()
        start, cpu = time.perf_counter(), time.process_time()
        with PeakSampler() as sampled:
            docs = SimpleDirectoryReader(folder, recursive=True).load_data()
            VectorStoreIndex.from_documents(
                docs,
                storage_context=StorageContext.from_defaults(vector_store=vector_store),
                embed_model=HashEmbedding(embed_batch_size=64),
                transformations=[SentenceSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=OVERLAP)],
            )
        took, cpu = time.perf_counter() - start, time.process_time() - cpu
        chunks = client.count("docs").count
        client.close()
    return {
        "seconds": took,
        "cpu": cpu,
        "chunks": chunks,
        "peak_rss_mb": _rss_mb(),
        "base_rss_mb": base,
        "peak_anon_mb": sampled.peak["anon"],
        "peak_file_mb": sampled.peak["file"],
    }


def write_folder(root: Path, n: int) -> Path:
    """A folder of text files holding about ``n`` chunks (``PER_DOC`` paragraphs a file)."""
    texts = make_corpus(n, seed=23)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(0, n, PER_DOC):
        sub = root / f"d{i // 5000:03d}"
        sub.mkdir(exist_ok=True)
        (sub / f"f{i}.txt").write_text("\n\n".join(texts[i : i + PER_DOC]), encoding="utf-8")
    return root


# --- the parent: interleaved rounds --------------------------------------------------------


def _spawn(*args: str, before: str = "") -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=before) if before else None  # the old code first
    proc = subprocess.run(
        [sys.executable, __file__, "--one", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _median(runs: list[dict[str, Any]]) -> dict[str, float]:
    sampled = {
        key: statistics.median(r[key] for r in runs)
        for key in ("peak_anon_mb", "peak_file_mb")
        if key in runs[0]
    }
    return sampled | {
        "chunks_per_s": statistics.median(r["chunks"] / r["seconds"] for r in runs),
        "chunks_per_cpu_s": statistics.median(r["chunks"] / r["cpu"] for r in runs),
        "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in runs),
        "grew_mb": statistics.median(r["peak_rss_mb"] - r["base_rss_mb"] for r in runs),
        "chunks": runs[0]["chunks"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--large", type=int, default=100_000, help="0: no memory-at-scale run")
    parser.add_argument(
        "--workers", type=int, default=2, help="num_workers of the worker runs (0: none)"
    )
    parser.add_argument(
        "--edge-before",
        action="store_true",
        help="also the folder runs with on-disk shards configured as before issue 32",
    )
    parser.add_argument(
        "--before",
        default="",
        help="a directory holding an older batonflow package (see bench/before_tree.sh): its "
        "store and pipeline are measured too, interleaved, labelled ' (before)'",
    )
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.one:
        kind, *rest = args.one
        if kind in STORE_SIDES:
            out = _store_side(kind, int(rest[0]))
        elif kind in PIPELINE_SIDES:
            out = _pipeline_side(kind, int(rest[0]), _workers(rest[1]))
        elif kind == "llama-folder":
            out = _llama_folder_side(rest[0], rest[1])
        else:
            out = _folder_side(rest[0], _workers(rest[1]), kind == "folder-before")
        print(json.dumps(out))
        return
    n = args.chunks
    runs: dict[str, list[dict[str, Any]]] = {}
    sides = [(s, str(n)) for s in STORE_SIDES] + [("pipeline", str(n), "0"), ("llama", str(n), "0")]
    if args.workers:
        sides.append(("pipeline", str(n), str(args.workers)))
    if args.before:  # batonflow's sides again on the old code (the last field: its path)
        sides += [(*s, args.before) for s in sides if not s[0].startswith(("client", "llama"))]
    for r in range(args.rounds):
        for side in sides if r % 2 == 0 else reversed(sides):
            label = side[0] if side[0] != "pipeline" else f"pipeline-w{side[2]}"
            before = side[-1] if side[-1] == args.before and args.before else ""
            if before:
                label += BEFORE
                side = side[:-1]
            runs.setdefault(label, []).append(_spawn(*side, before=before))
            print(f"  round {r + 1} {label}: {runs[label][-1]}", file=sys.stderr, flush=True)
    result: dict[str, Any] = {name: _median(v) for name, v in runs.items()}
    if args.large:
        with tempfile.TemporaryDirectory() as tmp:
            for size in (args.large // 10, args.large):
                folder = write_folder(Path(tmp) / f"c{size}", size)
                for workers in ("0", str(args.workers)) if args.workers else ("0",):
                    label = f"folder-{size}-w{workers}"
                    result[label] = _median([_spawn("folder", str(folder), workers)])
                    print(f"  {label}: {result[label]}", file=sys.stderr, flush=True)
                if args.edge_before:
                    label = f"folder-{size}-before"
                    result[label] = _median([_spawn("folder-before", str(folder), "0")])
                    print(f"  {label}: {result[label]}", file=sys.stderr, flush=True)
                for where in ("memory", "disk"):
                    label = f"llama-folder-{size}-{where}"
                    result[label] = _median([_spawn("llama-folder", str(folder), where)])
                    print(f"  {label}: {result[label]}", file=sys.stderr, flush=True)
    report(result, n, args.workers)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


def _workers(text: str) -> int | None:
    return None if text == "auto" else int(text)


def report(r: dict[str, Any], n: int, workers: int) -> None:
    """Print the medians and the ratios (speed: chunks per wall second, and per CPU second of
    the measuring process, which machine load does not inflate)."""
    print(f"ingest bench, {n:,} chunks, medians of fresh processes (cores: {os.cpu_count()})")
    print(
        f"  {'':<28}{'chunks/s':>10}{'/CPU s':>9}{'peak MB':>9}{'grew MB':>9}"
        f"{'anon MB':>9}{'file MB':>9}"
    )
    for name, v in r.items():
        print(
            f"  {name:<28}{v['chunks_per_s']:>10,.0f}{v['chunks_per_cpu_s']:>9,.0f}"
            f"{v['peak_rss_mb']:>9.0f}{v['grew_mb']:>9.0f}"
            f"{v.get('peak_anon_mb', 0):>9.0f}{v.get('peak_file_mb', 0):>9.0f}"
        )

    def ratio(ours: dict[str, Any], theirs: dict[str, Any]) -> str:
        return (
            f"speed {ours['chunks_per_s'] / theirs['chunks_per_s']:.2f}x, per CPU s "
            f"{ours['chunks_per_cpu_s'] / theirs['chunks_per_cpu_s']:.2f}x, peak RSS "
            f"{ours['peak_rss_mb'] / theirs['peak_rss_mb']:.2f}x"
        )

    for tag in ("", BEFORE):
        for kind in ("sparse", "hybrid"):
            if f"store-{kind}{tag}" in r:
                ours = r[f"store-{kind}{tag}"]
                print(f"  store{tag}/qdrant-client {kind}: {ratio(ours, r[f'client-{kind}'])}")
        for label in dict.fromkeys(("pipeline-w0", f"pipeline-w{workers}")):
            if label + tag in r:
                ours, llama = r[label + tag], r["llama"]
                print(
                    f"  {label}{tag}/from_documents: {ratio(ours, llama)} "
                    f"(chunks {ours['chunks']} vs {llama['chunks']})"
                )
    big = sorted({int(k.split("-")[1]) for k in r if k.startswith("folder-")})
    if len(big) == 2:
        for w in sorted({k.rsplit("-w", 1)[1] for k in r if k.startswith("folder-") and "-w" in k}):
            small, large = r[f"folder-{big[0]}-w{w}"], r[f"folder-{big[1]}-w{w}"]
            print(
                f"  folder, num_workers={w}: peak RSS {small['peak_rss_mb']:.0f} MB at "
                f"{small['chunks']:,} chunks, {large['peak_rss_mb']:.0f} MB at "
                f"{large['chunks']:,} (grew {small['grew_mb']:.0f} and {large['grew_mb']:.0f} MB)"
            )
        for size in big:
            ours = r[f"folder-{size}-w0"]
            before = r.get(f"folder-{size}-before")
            if before is not None:
                print(
                    f"  folder {size:,}, batonflow after / before: peak RSS "
                    f"{ours['peak_rss_mb'] / before['peak_rss_mb']:.2f}x, peak anonymous "
                    f"{ours['peak_anon_mb'] / before['peak_anon_mb']:.2f}x"
                )
            for where in ("memory", "disk"):
                theirs = r.get(f"llama-folder-{size}-{where}")
                if theirs is not None:
                    print(
                        f"  folder {size:,}, batonflow / llama-index + qdrant-client {where}: "
                        f"peak RSS {ours['peak_rss_mb'] / theirs['peak_rss_mb']:.2f}x, peak "
                        f"anonymous {ours['peak_anon_mb'] / theirs['peak_anon_mb']:.2f}x, speed "
                        f"{ours['chunks_per_s'] / theirs['chunks_per_s']:.2f}x "
                        f"(chunks {ours['chunks']:,} vs {theirs['chunks']:,})"
                    )


if __name__ == "__main__":
    main()
