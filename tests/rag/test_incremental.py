"""Incremental re-ingestion: unchanged sources skipped by content hash, changes re-embedded."""

from __future__ import annotations

from pathlib import Path

from batonflow.rag import IngestionWorkflow, QdrantStore
from llama_index.core import Document
from llama_index.core.node_parser import SentenceSplitter
from rag_helpers import CORPUS, ConceptEmbedding


def _resolved(corpus: Path, name: str) -> str:
    return str((corpus / name).resolve())


async def test_unchanged_corpus_is_skipped_without_embedding(
    memory_store: QdrantStore, corpus: Path
) -> None:
    """A second ingestion of the same files stores and embeds nothing and says so."""
    embed = ConceptEmbedding()
    flow = IngestionWorkflow(store=memory_store, embed_model=embed)
    first = await flow.run(paths=[corpus])
    assert len(first.added) == len(CORPUS)
    ConceptEmbedding.calls.clear()
    again = await flow.run(paths=[corpus])
    assert ConceptEmbedding.calls == []
    assert (again.chunks, again.added, again.updated, again.removed) == (0, [], [], [])
    assert sorted(again.unchanged) == sorted(_resolved(corpus, n) for n in CORPUS)
    assert memory_store.count() == len(CORPUS)


async def test_only_changed_files_are_reembedded_and_gone_files_removed(
    memory_store: QdrantStore, corpus: Path
) -> None:
    """Edit one file, add one, delete one: each is reported, and only two are embedded."""
    embed = ConceptEmbedding()
    flow = IngestionWorkflow(store=memory_store, embed_model=embed)
    await flow.run(paths=[corpus])
    (corpus / "cars.md").write_text("Rotate the tyres every season.\n", encoding="utf-8")
    (corpus / "new.md").write_text("Qdrant Edge runs inside the process.\n", encoding="utf-8")
    (corpus / "bread.txt").unlink()
    ConceptEmbedding.calls.clear()
    report = await flow.run(paths=[corpus])
    assert sum(ConceptEmbedding.calls) == 2
    assert report.added == [_resolved(corpus, "new.md")]
    assert report.updated == [_resolved(corpus, "cars.md")]
    assert report.removed == [str(corpus.resolve() / "bread.txt")]
    assert len(report.unchanged) == len(CORPUS) - 2
    assert report.chunks_removed == 2  # the old cars.md chunk and bread.txt's
    assert memory_store.count() == len(CORPUS)
    assert memory_store.query("dough") == []
    assert memory_store.query("tyres season")[0].source == _resolved(corpus, "cars.md")


async def test_a_skipped_file_keeps_its_chunks(memory_store: QdrantStore, corpus: Path) -> None:
    """A file that turns unreadable is reported as skipped, not removed."""
    flow = IngestionWorkflow(store=memory_store)
    await flow.run(paths=[corpus])
    (corpus / "dogs.txt").write_bytes(b"\x00\x01binary now")
    report = await flow.run(paths=[corpus])
    assert report.removed == []
    assert memory_store.count(_resolved(corpus, "dogs.txt")) == 1


async def test_new_splitter_settings_reingest_everything(
    memory_store: QdrantStore, corpus: Path
) -> None:
    """The hash covers how sources are split, so new splitter settings re-split every file."""
    await IngestionWorkflow(store=memory_store).run(paths=[corpus])
    splitter = SentenceSplitter(chunk_size=64, chunk_overlap=0)
    report = await IngestionWorkflow(store=memory_store, splitter=splitter).run(paths=[corpus])
    assert len(report.updated) == len(CORPUS) and report.unchanged == []
    same = await IngestionWorkflow(store=memory_store, splitter=splitter).run(paths=[corpus])
    assert len(same.unchanged) == len(CORPUS)


async def test_documents_are_compared_by_source(memory_store: QdrantStore) -> None:
    """Documents passed directly are skipped when their source's text and metadata match."""
    flow = IngestionWorkflow(store=memory_store)
    docs = [Document(text="Batonflow passes events.", metadata={"source": "notes/1"})]
    assert (await flow.run(documents=docs)).added == ["notes/1"]
    assert (await flow.run(documents=docs)).unchanged == ["notes/1"]
    changed = [Document(text="Batonflow passes events.", metadata={"source": "notes/1", "v": 2})]
    assert (await flow.run(documents=changed)).updated == ["notes/1"]
