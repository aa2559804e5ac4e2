"""Lay out a BEIR data set (SciFact by default) in the folder ``bench/beir_bench.py`` reads.

The data is never part of this repository: SciFact's corpus is licensed CC BY-NC 2.0 by its
authors (Wadden et al., "Fact or Fiction: Verifying Scientific Claims", EMNLP 2020; the
``allenai/scifact`` repository), and BEIR's packaging of it (Thakur et al., BEIR, NeurIPS 2021
Datasets and Benchmarks; ``beir-cellar/beir``) keeps that licence. Get the files yourself, from
BEIR's ``scifact.zip`` or the SciFact release, and point this script at them.

Inputs (any mix):

* ``--corpus``: BEIR's ``corpus.jsonl`` (``_id``, ``title``, ``text``), SciFact's own
  ``corpus.jsonl`` (``doc_id``, ``title``, ``abstract``: a list of sentences), or a CSV export
  of SciFact's corpus with the columns ``doc_id,title,abstract`` (the abstract a printed list
  of sentences); the sentences are joined with single spaces, as BEIR does.
* ``--queries``: BEIR's ``queries.jsonl`` (``_id``, ``text``); only the queries that the
  relevance judgements name are kept.
* ``--qrels``: BEIR's ``qrels/test.tsv`` (``query-id corpus-id score``, with or without the
  header) or the same judgements as TREC lines (``query-id Q0 corpus-id score``).
* ``--qrels-train``: optionally, BEIR's ``qrels/train.tsv`` (the same forms), written as
  ``qrels/train.tsv``: ``bench/beir_bench.py --split train`` chooses settings on it, so the
  test split stays unseen.
* or a single folder (positional, or ``$BATONFLOW_BEIR_SRC``) holding ``corpus.jsonl``,
  ``queries.jsonl`` and ``qrels/test.tsv`` in BEIR's layout.

Output: ``--out`` (default ``$BATONFLOW_BEIR``, else ``.bench-data/scifact``) gets
``corpus.jsonl``, ``queries.jsonl`` and ``qrels/test.tsv`` in BEIR's layout, and the script
prints the counts (SciFact's test split: 5,183 documents, 300 queries, 339 judgements).
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import os
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path


def _sentences(printed: str) -> list[str]:
    """The strings of a printed list of strings (Python's or numpy's repr, commas optional)."""
    tokens = tokenize.generate_tokens(io.StringIO(printed).readline)
    return [ast.literal_eval(t.string) for t in tokens if t.type == tokenize.STRING]


def read_corpus(path: Path) -> Iterator[tuple[str, str, str]]:
    """``(id, title, text)`` of each document of a corpus file in one of the accepted forms."""
    if path.suffix == ".csv":
        csv.field_size_limit(sys.maxsize)
        with path.open(encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                yield row["doc_id"], row["title"], " ".join(_sentences(row["abstract"]))
        return
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            doc = json.loads(line)
            if "_id" in doc:
                yield str(doc["_id"]), doc.get("title") or "", doc.get("text") or ""
            else:
                abstract = doc.get("abstract") or []
                text = abstract if isinstance(abstract, str) else " ".join(abstract)
                yield str(doc["doc_id"]), doc.get("title") or "", text


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """query id -> {document id: relevance}, from BEIR's TSV or TREC lines."""
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) < 3 or not parts[-1].lstrip("-").isdigit():
            continue  # the header, or a blank line
        qrels.setdefault(parts[0], {})[parts[-2]] = int(parts[-1])
    return qrels


def main(argv: list[str] | None = None) -> int:
    """Read the inputs, check them, write the BEIR folder and print its counts."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("src", nargs="?", default=os.environ.get("BATONFLOW_BEIR_SRC"))
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--queries", type=Path)
    parser.add_argument("--qrels", type=Path)
    parser.add_argument("--qrels-train", type=Path)
    parser.add_argument(
        "--out", type=Path, default=Path(os.environ.get("BATONFLOW_BEIR", ".bench-data/scifact"))
    )
    args = parser.parse_args(argv)
    src = Path(args.src) if args.src else None
    corpus = args.corpus or (src / "corpus.jsonl" if src else None)
    queries = args.queries or (src / "queries.jsonl" if src else None)
    qrels_path = args.qrels or (src / "qrels" / "test.tsv" if src else None)
    for name, p in (("corpus", corpus), ("queries", queries), ("qrels", qrels_path)):
        if p is None or not p.is_file():
            parser.error(
                f"no {name} file ({p}); give a BEIR folder or --corpus, --queries and --qrels "
                "(see --help for where the data comes from)."
            )
    assert corpus and queries and qrels_path
    docs = list(read_corpus(corpus))
    splits = {"test": read_qrels(qrels_path)}
    if args.qrels_train is not None:
        splits["train"] = read_qrels(args.qrels_train)
    qrels = {q: r for split in splits.values() for q, r in split.items()}
    texts: dict[str, str] = {}
    with queries.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                q = json.loads(line)
                texts[str(q["_id"])] = q["text"]
    missing = sorted(set(qrels) - set(texts))
    if missing:
        parser.error(f"{len(missing)} judged queries are not in {queries} (e.g. {missing[:3]}).")
    ids = {d[0] for d in docs}
    unknown = sorted({d for rel in qrels.values() for d in rel} - ids)
    if unknown:
        parser.error(f"{len(unknown)} judged documents are not in {corpus} (e.g. {unknown[:3]}).")
    out: Path = args.out
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for doc_id, title, text in docs:
            f.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as f:
        for qid in qrels:
            f.write(json.dumps({"_id": qid, "text": texts[qid]}) + "\n")
    for name, split in splits.items():
        with (out / "qrels" / f"{name}.tsv").open("w", encoding="utf-8") as f:
            f.write("query-id\tcorpus-id\tscore\n")
            for qid, rel in split.items():
                for doc_id, score in rel.items():
                    f.write(f"{qid}\t{doc_id}\t{score}\n")
        pairs = sum(len(r) for r in split.values())
        print(f"{out} {name}: {len(docs)} documents, {len(split)} queries, {pairs} judgements")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
