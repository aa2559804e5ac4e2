"""IngestionWorkflow: files and documents into local Qdrant, skipping bad files, no duplicates."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from batonflow.rag import IngestionReport, IngestionWorkflow, IngestProgress, QdrantStore
from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.node_parser import SentenceSplitter
from rag_helpers import CORPUS, ConceptEmbedding


def _reasons(report: IngestionReport) -> dict[str, str]:
    return {Path(s.path).name: s.reason for s in report.skipped}


@pytest.fixture(params=["memory", "path"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    s = (
        QdrantStore(location=":memory:")
        if request.param == "memory"
        else QdrantStore(path=tmp_path / "q")
    )
    yield s
    s.close()


async def test_ingest_folder_skips_bad_files_and_reports(store: QdrantStore, corpus: Path) -> None:
    """Text and Markdown files are stored; the empty and the binary file are skipped with reasons."""
    report = await IngestionWorkflow(store=store).run(paths=[corpus])
    assert isinstance(report, IngestionReport)
    assert (report.files, report.chunks, report.chunks_removed) == (len(CORPUS), len(CORPUS), 0)
    assert len(report.added) == len(CORPUS) and report.updated == report.unchanged == []
    assert _reasons(report) == {"blob.txt": "binary file, not text", "empty.txt": "empty: no text"}
    assert store.count() == len(CORPUS)
    hit = store.query("knead the dough")[0]
    assert hit.source == str((corpus / "bread.txt").resolve())
    assert hit.metadata["file_name"] == "bread.txt"


async def test_reingesting_never_duplicates(store: QdrantStore, corpus: Path) -> None:
    """Ingesting the same folder twice leaves the same number of points, even when forced."""
    await IngestionWorkflow(store=store).run(paths=[corpus])
    again = await IngestionWorkflow(store=store).run(paths=[str(corpus)], force=True)
    assert again.chunks == len(CORPUS) and again.chunks_removed == 0
    assert len(again.updated) == len(CORPUS)
    assert store.count() == len(CORPUS)


async def test_reingesting_a_changed_file_replaces_its_chunks(
    store: QdrantStore, corpus: Path
) -> None:
    """A file edited between ingestions keeps only its new chunks."""
    await IngestionWorkflow(store=store).run(paths=[corpus])
    (corpus / "cars.md").write_text("Rotate the tyres every season.\n", encoding="utf-8")
    report = await IngestionWorkflow(store=store).run(paths=[corpus / "cars.md"])
    assert (report.files, report.chunks, report.chunks_removed) == (1, 1, 1)
    assert report.updated == [str((corpus / "cars.md").resolve())]
    assert store.count() == len(CORPUS)
    assert store.query("engine oil kilometres") == []
    assert store.query("rotate tyres")[0].text.startswith("Rotate")


async def test_a_long_file_is_split_with_the_given_splitter(
    memory_store: QdrantStore, tmp_path: Path
) -> None:
    """The splitter is configurable; each chunk of a file is stored once, and shrinking it prunes."""
    doc = tmp_path / "long.md"
    doc.write_text(" ".join(f"Sentence number {i} talks about topic{i}." for i in range(200)))
    flow = IngestionWorkflow(
        store=memory_store, splitter=SentenceSplitter(chunk_size=64, chunk_overlap=0)
    )
    report = await flow.run(paths=[doc])
    assert report.chunks > 10
    assert memory_store.count() == report.chunks
    assert memory_store.query("topic150")[0].text.count("topic150") == 1
    doc.write_text("Now it is short.")
    report = await flow.run(paths=[doc])
    assert report.chunks == 1 and memory_store.count() == 1 and report.chunks_removed > 10


async def test_documents_can_be_ingested_directly(memory_store: QdrantStore) -> None:
    """documents=[Document(...)] are stored under their 'source' metadata and replaced on re-ingest."""
    docs = [Document(text="Batonflow steps pass events.", metadata={"source": "notes/a"})]
    report = await IngestionWorkflow(store=memory_store).run(documents=docs)
    assert (report.files, report.chunks) == (0, 1)
    docs = [Document(text="Batonflow steps pass batons.", metadata={"source": "notes/a"})]
    await IngestionWorkflow(store=memory_store).run(documents=docs)
    assert memory_store.count() == 1
    assert memory_store.query("batons")[0].source == "notes/a"


async def test_missing_unsupported_and_undecodable_files_are_reported(
    memory_store: QdrantStore, tmp_path: Path
) -> None:
    """Bad inputs never crash the run: each is skipped with a reason that says what happened."""
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (tmp_path / "photo.png").write_bytes(b"\x89PNG\r\n")
    (tmp_path / "ok.txt").write_text("fine text")
    report = await IngestionWorkflow(store=memory_store).run(
        paths=[
            tmp_path / "latin1.txt",
            tmp_path / "photo.png",
            tmp_path / "nope.md",
            tmp_path / "ok.txt",
        ]
    )
    reasons = _reasons(report)
    assert reasons["latin1.txt"].startswith("not UTF-8 text")
    assert reasons["photo.png"].startswith("file type '.png' is not read by default; add it with")
    assert reasons["nope.md"] == "no such file or directory"
    assert report.files == 1 and memory_store.count() == 1


async def test_pdf_without_pdf_support_is_skipped_with_the_install_hint(
    memory_store: QdrantStore, tmp_path: Path
) -> None:
    """A PDF is not read as raw bytes when PDF support is missing: the report names the extra."""
    pytest.importorskip("llama_index.core")
    try:
        import llama_index.readers.file  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("llama-index-readers-file is installed")
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    report = await IngestionWorkflow(store=memory_store).run(paths=[tmp_path])
    assert _reasons(report) == {
        "doc.pdf": "PDF support is not installed; run pip install 'batonflow[pdf]'"
    }


async def test_nothing_to_ingest_gives_an_empty_report(
    memory_store: QdrantStore, tmp_path: Path
) -> None:
    """A folder with only an empty file stores nothing and reports it."""
    (tmp_path / "empty.md").write_text("   \n")
    report = await IngestionWorkflow(store=memory_store).run(paths=[tmp_path])
    assert (report.files, report.chunks) == (0, 0)
    assert _reasons(report) == {"empty.md": "empty: no text"}
    assert memory_store.count() == 0


async def test_run_without_inputs_is_a_clear_error(memory_store: QdrantStore) -> None:
    """run() with neither paths nor documents says what to pass."""
    with pytest.raises(ValueError, match=r"needs paths=\[...\].*documents=\[Document"):
        await IngestionWorkflow(store=memory_store).run()
    with pytest.raises(
        TypeError, match="documents= must hold llama-index Document objects, got str"
    ):
        await IngestionWorkflow(store=memory_store).run(documents=["plain text"])


async def test_progress_is_streamed(memory_store: QdrantStore, corpus: Path) -> None:
    """IngestProgress events of the store phase count stored chunks up to the total."""
    handler = IngestionWorkflow(store=memory_store, embed_batch_size=2).run(paths=[corpus])
    progress = [
        (ev.done, ev.total)
        async for ev in handler.stream_events()
        if isinstance(ev, IngestProgress) and ev.phase == "store"
    ]
    report = await handler
    assert progress[-1] == (report.chunks, report.chunks)
    assert [d for d, _ in progress] == sorted(d for d, _ in progress)
    assert len(progress) == 3  # one per batch of 2 (5 chunks)


class _SlowEmbedding(BaseEmbedding):
    """Counts how many embedding calls run at once."""

    in_flight: int = 0
    peak: int = 0

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(0.02)
        self.in_flight -= 1
        return [[float(len(t)), 1.0] for t in texts]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self._aget_text_embeddings([text]))[0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return [float(len(text)), 1.0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(len(query)), 1.0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


async def test_embedding_runs_concurrently_but_bounded(
    memory_store: QdrantStore, tmp_path: Path
) -> None:
    """Batches are embedded several at a time, never more than four at once."""
    for i in range(24):
        (tmp_path / f"d{i}.txt").write_text(f"document {i} about subject{i}")
    embed = _SlowEmbedding(embed_batch_size=1)
    report = await IngestionWorkflow(store=memory_store, embed_model=embed, embed_batch_size=1).run(
        paths=[tmp_path]
    )
    assert report.chunks == 24 and memory_store.count() == 24
    assert 1 < embed.peak <= 4
    assert memory_store.dense_size == 2


async def test_hybrid_ingestion_stores_dense_vectors(
    memory_store: QdrantStore, corpus: Path
) -> None:
    """With an embedding model, chunks get dense vectors too, embedded in batches."""
    ConceptEmbedding.calls.clear()
    embed = ConceptEmbedding(embed_batch_size=100)
    await IngestionWorkflow(store=memory_store, embed_model=embed, embed_batch_size=2).run(
        paths=[corpus]
    )
    assert memory_store.dense_size == 8
    assert sorted(ConceptEmbedding.calls) == [1, 2, 2]
    q = "automobile upkeep"
    hits = memory_store.query(q, dense=embed.get_query_embedding(q))
    assert Path(hits[0].source).name == "cars.md"


async def test_ingestion_resumes_from_a_checkpoint(memory_store: QdrantStore, corpus: Path) -> None:
    """Ingestion events serialize: a run continued from its checkpoint after 'load' finishes the job."""
    from batonflow.core import JsonSerializer, WorkflowCheckpointer

    cptr = WorkflowCheckpointer(
        workflow=IngestionWorkflow(
            store=memory_store, embed_batch_size=2, serializer=JsonSerializer()
        )
    )
    handler = cptr.run(paths=[corpus])
    first = await handler
    after_load = next(
        c for c in cptr.checkpoints[handler.run_id] if c.last_completed_step == "load"
    )
    memory_store.drop()  # lose everything stored after the checkpoint
    again = await cptr.run_from(checkpoint=after_load)
    assert (again.files, again.chunks, again.skipped) == (first.files, first.chunks, first.skipped)
    assert memory_store.count() == len(CORPUS)
