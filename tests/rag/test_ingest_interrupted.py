"""An ingestion SIGKILLed between two batches of one file: re-ingestion stores the file whole.

The worker (``ingest_worker.py``) ingests in batches of two chunks and hangs in its second
embedding call, so the kill lands after exactly one batch of a seven-chunk file was stored.
Both embedded paths of ``QdrantStore(path=...)`` are covered: Qdrant Edge, and a folder that
holds qdrant-client local-mode data.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from batonflow.rag import IngestionReport, QdrantStore
from ingest_worker import GatedEmbedding, ingestion
from qdrant_client import QdrantClient

HERE = Path(__file__).parent
PLACES = ["river", "mountain", "forest", "valley", "meadow", "canyon"]
LAST = (
    "The last section names the zebra quartz lighthouse, which appears nowhere else in these "
    "notes, and says that its lamp is lit every evening by the keeper who lives beside it."
)

pytestmark = pytest.mark.slow


def _paragraph(i: int, place: str) -> str:
    return (
        f"Section {i} is about the {place} and describes how the {place} changes with the "
        f"seasons, the weather and the people who live near it. Visitors come to the {place} "
        "in spring."
    )


def _write(path: Path, paragraphs: list[str]) -> None:
    path.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")


def _whole() -> list[str]:
    """The file's seven paragraphs, one chunk each; the last one is :data:`LAST`."""
    return [_paragraph(i, p) for i, p in enumerate(PLACES)] + [LAST]


def _qdrant(tmp_path: Path, engine: str) -> Path:
    folder = tmp_path / "qdrant"
    if engine == "client":
        QdrantClient(path=str(folder)).close()  # a folder of qdrant-client's local mode
    return folder


def _ingest(folder: Path, qdrant: Path) -> IngestionReport:
    """Ingest ``folder`` as the worker does, in this process, with an embedding that answers."""
    GatedEmbedding.answered = None

    async def run() -> IngestionReport:
        with QdrantStore(path=qdrant) as store:
            return await ingestion(store).run(paths=[folder])

    return asyncio.run(run())


def _kill_after_first_batch(folder: Path, qdrant: Path) -> None:
    """Run the worker and SIGKILL it once one batch is stored and the next one is pending."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    worker = subprocess.Popen(
        [sys.executable, str(HERE / "ingest_worker.py"), str(folder), str(qdrant)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        seen: list[str] = []
        while time.monotonic() < deadline:
            ready, _, _ = select.select([worker.stdout], [], [], 1)
            if not ready:
                assert worker.poll() is None, worker.stderr.read()
                continue
            line = worker.stdout.readline().strip()
            seen.append(line)
            done, _, total = line.removeprefix("stored ").partition("/")
            if line.startswith("stored ") and 0 < int(done) < int(total):
                break
        else:
            raise AssertionError(f"no batch was stored within 60 s: {seen}")
        worker.send_signal(signal.SIGKILL)
    finally:
        worker.kill()
        worker.communicate(timeout=30)


@pytest.mark.parametrize("engine", ["edge", "client"])
def test_a_new_file_cut_between_batches_is_stored_whole_on_reingest(tmp_path, engine):
    """A new file killed after one of its batches is reported repaired and then found whole."""
    folder = tmp_path / "docs"
    folder.mkdir()
    big = folder / "notes.md"
    _write(big, _whole())
    qdrant = _qdrant(tmp_path, engine)
    _kill_after_first_batch(folder, qdrant)
    with QdrantStore(path=qdrant) as store:
        assert (store.engine, store.count(str(big.resolve()))) == (engine, 2)

    report = _ingest(folder, qdrant)

    with QdrantStore(path=qdrant) as store:
        assert store.count(str(big.resolve())) == 7
        hits = store.query("zebra quartz lighthouse", top_k=1)
        assert [(h.text, h.source) for h in hits] == [(LAST, str(big.resolve()))]
        assert store.stored_sources()[str(big.resolve())].complete
    assert report.repaired == [str(big.resolve())]
    assert (report.added, report.updated, report.unchanged) == ([], [], [])
    assert _ingest(folder, qdrant).unchanged == [str(big.resolve())]


@pytest.mark.parametrize("engine", ["edge", "client"])
@pytest.mark.parametrize(
    "first",
    [
        # The new version's first batch overwrites every old chunk (same text, same place):
        # what is left carries only the new hash.
        pytest.param(2, id="grown"),
        # Old chunks the first batch did not overwrite stay next to the new ones.
        pytest.param(5, id="edited"),
    ],
)
def test_a_changed_file_cut_between_batches_is_replaced_whole(tmp_path, engine, first):
    """Old and new chunks are never left as a version re-ingestion takes as up to date."""
    folder = tmp_path / "docs"
    folder.mkdir()
    big = folder / "notes.md"
    old = [_paragraph(i, p) for i, p in enumerate(PLACES[:first])]
    if first > 2:
        old[2] = _paragraph(2, "orchard")  # edited in the new version
    _write(big, old)
    qdrant = _qdrant(tmp_path, engine)
    assert _ingest(folder, qdrant).added == [str(big.resolve())]
    _write(big, _whole())
    _kill_after_first_batch(folder, qdrant)

    report = _ingest(folder, qdrant)

    with QdrantStore(path=qdrant) as store:
        assert store.count(str(big.resolve())) == 7
        assert store.query("orchard") == []  # the old version's chunk is gone
        hits = store.query("zebra quartz lighthouse", top_k=1)
        assert [(h.text, h.source) for h in hits] == [(LAST, str(big.resolve()))]
    assert report.repaired == [str(big.resolve())]
    assert _ingest(folder, qdrant).unchanged == [str(big.resolve())]


def test_the_cli_says_which_files_it_repaired(tmp_path):
    """batonflow rag ingest prints a 'repaired' line for a file found incomplete."""
    from batonflow.apps.cli import app
    from batonflow.rag.store import Chunk
    from typer.testing import CliRunner

    folder = tmp_path / "docs"
    folder.mkdir()
    big = folder / "notes.md"
    _write(big, _whole())
    source = str(big.resolve())
    with QdrantStore(path=tmp_path / "q") as store:  # two of seven chunks, as a kill leaves
        store.upsert(
            [
                Chunk(text=t, source=source, index=i, content_hash="h", source_chunks=7)
                for i, t in enumerate(_whole()[:2])
            ]
        )
    done = CliRunner().invoke(
        app, ["rag", "ingest", str(folder), "--qdrant-path", str(tmp_path / "q")]
    )
    assert done.exit_code == 0, done.output
    assert f"repaired {source}: an interrupted ingestion had stored only part of it" in done.stdout
    with QdrantStore(path=tmp_path / "q") as store:
        assert store.stored_sources()[source].complete
