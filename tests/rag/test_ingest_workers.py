"""IngestionWorkflow(num_workers=): worker processes read, split and embed; nothing else changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from batonflow.rag import IngestionReport, IngestionWorkflow, QdrantStore, RAGConfigError, _workers
from batonflow.rag._workers import AUTO_MIN_CORES, AUTO_MIN_FILES, workers_for
from llama_index.core import Document
from llama_index.core.node_parser import SentenceSplitter
from rag_helpers import ConceptEmbedding, write_corpus

WORDS = "car dog engine puppy vet recipe bread qdrant workflow event oil tyre flour".split()


def _folder(root: Path, files: int) -> Path:
    """The test corpus and ``files`` more files of a few paragraphs each (several batches)."""
    write_corpus(root)
    for i in range(files):
        lines = [" ".join(WORDS[(i + j + k) % len(WORDS)] for k in range(9)) for j in range(12)]
        (root / f"extra{i:03d}.txt").write_text(".\n\n".join(lines) + ".\n", encoding="utf-8")
    return root


def _points(store: QdrantStore) -> dict[str, Any]:
    """Every point's payload, dense vector and sparse vector, by id."""
    payloads = dict(store._engine.scroll(store.collection, None, True))
    shard = store._engine._shards[store.collection]
    out: dict[str, Any] = {}
    for record in shard.retrieve(list(payloads), False, True):
        sparse = record.vector["sparse"]
        vectors = (record.vector["text-dense"], sparse.indices, sparse.values)
        out[str(record.id)] = (payloads[str(record.id)], vectors)
    return out


async def _ingest(store: QdrantStore, workers: int, **run: Any) -> IngestionReport:
    flow = IngestionWorkflow(
        store=store,
        embed_model=ConceptEmbedding(),
        splitter=SentenceSplitter(chunk_size=96, chunk_overlap=8),
        embed_batch_size=8,
        num_workers=workers,
        timeout=120,
    )
    return await flow.run(**run)


@pytest.mark.slow
async def test_workers_store_the_same_points_and_report(tmp_path: Path) -> None:
    """A folder and documents ingested by two worker processes give the points, vectors and
    report an ingestion in this process gives."""
    folder = _folder(tmp_path / "corpus", files=40)
    docs = [Document(text=f"{w} {w} maintenance.", metadata={"source": w}) for w in WORDS]
    found: list[tuple[IngestionReport, dict[str, dict[str, Any]], list[Any]]] = []
    for workers in (0, 2):
        with QdrantStore(location=":memory:") as store:
            report = await _ingest(store, workers, paths=[folder], documents=docs)
            hits = [
                sorted((-round(h.score, 6), h.id) for h in store.query(q, top_k=500))
                for q in ("puppy vet", "engine oil tyre")
            ]  # every match, ties sorted by id (the engine returns them in its storage order)
            found.append((report, _points(store), hits))
    (alone, alone_points, alone_hits), (spread, spread_points, spread_hits) = found
    assert alone.chunks > 60 and alone.files == 45
    assert spread.model_dump() == alone.model_dump()
    assert spread_points == alone_points
    assert spread_hits == alone_hits


@pytest.mark.slow
async def test_workers_skip_unchanged_sources(tmp_path: Path) -> None:
    """Re-ingesting with workers skips what is stored, as in this process."""
    folder = _folder(tmp_path / "corpus", files=20)
    with QdrantStore(location=":memory:") as store:
        first = await _ingest(store, 0, paths=[folder])
        (folder / "extra000.txt").write_text("A new text about bread.\n", encoding="utf-8")
        again = await _ingest(store, 2, paths=[folder])
    assert len(again.unchanged) == len(first.added) - 1
    assert again.updated == [str((folder / "extra000.txt").resolve())]


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True])
def test_num_workers_must_be_a_count(bad: Any) -> None:
    """A num_workers that is not None or a count is refused, naming the choices."""
    with pytest.raises(RAGConfigError, match=r"num_workers must be None .* got"):
        IngestionWorkflow(store=QdrantStore(location=":memory:"), num_workers=bad)


@pytest.mark.parametrize("machine", [1, 2, 3, 8])
def test_the_default_starts_workers_for_large_folders_on_three_cores_or_more(
    machine: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """num_workers=None: one process per core from AUTO_MIN_FILES files on a machine of
    AUTO_MIN_CORES cores or more (on two, the workers and the storing share them), none below."""
    monkeypatch.setattr(_workers, "cores", lambda: machine)
    assert workers_for(None, AUTO_MIN_FILES - 1) == 0
    assert workers_for(None, AUTO_MIN_FILES) == (machine if machine >= AUTO_MIN_CORES else 0)
    assert workers_for(0, 10_000) == 0 and workers_for(3, 1) == 3
