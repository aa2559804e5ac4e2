"""Which files ingestion reads in a real folder, and that every other one is reported."""

from __future__ import annotations

import asyncio
import gzip
from pathlib import Path

import pytest
from batonflow.rag import IngestionWorkflow, IngestProgress, QdrantStore
from batonflow.rag.errors import RAGConfigError
from batonflow.rag.files import FileSelection, count_skipped, discover, load_files
from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.readers.base import BaseReader


def _tree(root: Path) -> Path:
    """A folder like /usr/share/doc: text with and without suffixes, .gz, binaries, dotfiles."""
    root.mkdir()
    (root / "guide.md").write_text("# Guide\n\nTurn the dial to start the oven.\n")
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "copyright").write_text("Copyright 2026 The Authors. Licensed as you like.\n")
    (pkg / "README.Debian").write_text("Debian notes: the oven is packaged for Debian.\n")
    (pkg / "NEWS.txt.gz").write_bytes(gzip.compress(b"News: the oven bakes bread now.\n"))
    (pkg / "changelog.gz").write_bytes(gzip.compress(b"oven (1.0) stable; urgency=low\n"))
    (pkg / "page.html").write_text("<p>Oven manual in HTML</p>\n")
    (pkg / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (pkg / "blob").write_bytes(b"ELF\x00\x01\x02")
    (pkg / "latin1.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    (pkg / "empty.md").write_text("   \n")
    (pkg / "broken.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    (pkg / "image.png.gz").write_bytes(gzip.compress(b"\x89PNG\x00"))
    (root / ".env").write_text("SECRET=1\n")
    git = root / ".git"
    git.mkdir()
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    return root


def _names(paths: list[str] | list[Path]) -> set[str]:
    return {Path(p).name for p in paths}


def test_every_file_of_a_folder_is_read_or_reported_with_its_reason(tmp_path: Path) -> None:
    root = _tree(tmp_path / "doc")
    docs, read, skipped = load_files([root])
    assert _names(read) == {"guide.md", "copyright", "README.Debian", "NEWS.txt.gz", "changelog.gz"}
    kinds = {Path(s.path).name: s.kind for s in skipped}
    assert kinds == {
        "page.html": "type",
        "logo.png": "type",
        "image.png.gz": "type",
        "blob": "binary",
        "latin1.txt": "encoding",
        "empty.md": "empty",
        "broken.gz": "unreadable",
        ".env": "hidden",
        ".git": "hidden",
    }
    # Nothing under the folder is unaccounted for (a hidden folder counts as one entry).
    every = {p.name for p in root.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert every | {".git"} == _names(read) | set(kinds)
    text = {Path(d.metadata["file_path"]).name: d.text for d in docs}
    assert text["NEWS.txt.gz"] == "News: the oven bakes bread now.\n"
    assert text["changelog.gz"].startswith("oven (1.0)")
    assert count_skipped(skipped)["type"] == 3
    html = next(s for s in skipped if s.path.endswith("page.html"))
    assert "--ext .html" in html.reason


def test_required_exts_select_like_simple_directory_reader(tmp_path: Path) -> None:
    root = _tree(tmp_path / "doc")
    _, read, skipped = load_files([root], FileSelection(required_exts=(".html", "")))
    assert _names(read) == {"page.html", "copyright", "changelog.gz"}
    assert {s.kind for s in skipped} >= {"excluded", "binary"}
    excluded = next(s for s in skipped if s.path.endswith("guide.md"))
    assert excluded.kind == "excluded" and "'.html', ''" in excluded.reason
    _, read_gz, _ = load_files([root], FileSelection(required_exts=(".gz",)))
    assert _names(read_gz) == {"NEWS.txt.gz", "changelog.gz"}


def test_hidden_files_are_read_when_asked(tmp_path: Path) -> None:
    root = _tree(tmp_path / "doc")
    _, read, skipped = load_files([root], FileSelection(exclude_hidden=False))
    assert {".env", "HEAD"} <= _names(read)
    assert not [s for s in skipped if s.kind == "hidden"]


class _Upper(BaseReader):
    """A reader that shouts, to show which reader read a file."""

    def load_data(self, file: Path, extra_info: dict | None = None) -> list[Document]:
        return [Document(text=Path(file).read_text().upper(), metadata=extra_info or {})]


def test_file_extractor_reads_its_suffix(tmp_path: Path) -> None:
    root = _tree(tmp_path / "doc")
    docs, read, _ = load_files([root], FileSelection(file_extractor={".html": _Upper()}))
    assert "page.html" in _names(read)
    page = next(d for d in docs if d.metadata["file_path"].endswith("page.html"))
    assert page.text == "<P>OVEN MANUAL IN HTML</P>\n"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"required_exts": "md"}, "is one string; pass a list of suffixes"),
        ({"required_exts": ("md",)}, "give suffixes with their dot, like '.html'"),
        ({"file_extractor": {".csv": object()}}, "give a llama-index reader instance"),
    ],
)
def test_bad_selection_says_what_to_pass(kwargs: dict, message: str) -> None:
    with pytest.raises(RAGConfigError, match=message):
        FileSelection(**kwargs)


def test_a_gz_that_expands_too_far_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("batonflow.rag.files.MAX_GZIP_BYTES", 10)
    (tmp_path / "big.txt.gz").write_bytes(gzip.compress(b"x" * 100))
    _, read, skipped = load_files([tmp_path])
    assert not read and [s.kind for s in skipped] == ["too-large"]


def test_named_paths_are_reported_too(tmp_path: Path) -> None:
    root = _tree(tmp_path / "doc")
    files, skipped = discover([root / "pkg" / "page.html", root / "nope.md", root / ".env"])
    assert _names(files) == {".env"}  # named directly: read even though hidden
    assert [(Path(s.path).name, s.kind) for s in skipped] == [
        ("page.html", "type"),
        ("nope.md", "missing"),
    ]


async def test_ingestion_reports_skips_and_counts_every_phase(
    tmp_path: Path, memory_store: QdrantStore, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _tree(tmp_path / "doc")
    workflow = IngestionWorkflow(store=memory_store, required_exts=[".md", "", ".gz"])
    handler = workflow.run(paths=[root], show_progress=True)
    events = [ev async for ev in handler.stream_events() if isinstance(ev, IngestProgress)]
    report = await handler
    assert report.files == 4  # guide.md, copyright, NEWS.txt.gz, changelog.gz
    assert {Path(s.path).name for s in report.skipped} >= {"page.html", "blob", "empty.md"}
    phases = [ev.phase for ev in events]
    assert phases == sorted(phases, key=["read", "split", "store"].index)
    last = {ev.phase: (ev.done, ev.total) for ev in events}
    assert last["read"] == (8, 8)  # 4 read; empty.md, blob and two .gz skipped after reading
    assert last["split"] == (4, 4)
    assert last["store"] == (report.chunks, report.chunks)
    err = capsys.readouterr().err
    assert "reading files" in err and "storing chunks" in err


class _SlowEmbedding(BaseEmbedding):
    """An embedding model that takes its time, so reading could run far ahead of storing."""

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        await asyncio.sleep(0.02)
        return [[1.0, float(len(t))] for t in texts]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self._aget_text_embeddings([text]))[0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return [1.0, float(len(text))]

    def _get_query_embedding(self, query: str) -> list[float]:
        return [1.0, float(len(query))]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


async def test_reading_waits_for_storing_so_memory_holds_a_few_batches(
    tmp_path: Path, memory_store: QdrantStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("batonflow.rag._ingest_run.MAX_IN_FLIGHT", 2)
    folder = tmp_path / "many"
    folder.mkdir()
    for n in range(48):
        (folder / f"note{n:02}.txt").write_text(f"Note number {n} about teapots.\n")
    workflow = IngestionWorkflow(
        store=memory_store, embed_model=_SlowEmbedding(), embed_batch_size=1
    )
    handler = workflow.run(paths=[folder])
    stored = 0
    stored_when_read: dict[int, int] = {}
    async for ev in handler.stream_events():
        if isinstance(ev, IngestProgress) and ev.phase == "store":
            stored = ev.done
        elif isinstance(ev, IngestProgress) and ev.phase == "read":
            stored_when_read[ev.done] = stored
    report = await handler
    assert report.chunks == 48 and memory_store.count() == 48
    # Files are read 16 at a time, each one chunk, one chunk a batch: the third batch of files
    # is read only once all but two (in flight) of the first 32 chunks are stored.
    assert stored_when_read[48] >= 32 - 2
