"""Ingesting a folder holds a few batches of chunks, not the folder: memory does not grow with it.

Each size runs in a fresh process that measures its Python heap's peak (``tracemalloc``) while
``IngestionWorkflow`` ingests a folder of generated text files. The heap excludes the engine's
own memory (tests/rag/test_edge_disk_memory.py measures that), so what is measured is what
ingestion itself holds. A chunk held until the end would cost more than
3 KB (its text twice, with the embedding's, and its file metadata); what may grow per chunk is
the store's record of its BM25 length and the report's per-file entries, a few hundred bytes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: Generated paragraphs (about one chunk each) per file.
PER_FILE = 8
SCRIPT = textwrap.dedent(
    """
    import asyncio, json, random, sys, tracemalloc
    from pathlib import Path
    from batonflow.rag import IngestionWorkflow, QdrantStore
    from llama_index.core.node_parser import SentenceSplitter

    folder, qdrant, chunks, per_file = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(5)
    words = ["".join(rng.choices("abcdefghijklmnoprstuvy", k=rng.randint(3, 9))) for _ in range(3000)]
    for i in range(0, chunks, per_file):
        paragraphs = [" ".join(rng.choices(words, k=150)) + "." for _ in range(per_file)]
        (folder / f"f{i:06d}.txt").write_text("\\n\\n".join(paragraphs), encoding="utf-8")

    async def main():
        with QdrantStore(path=qdrant) as store:
            flow = IngestionWorkflow(
                store=store, splitter=SentenceSplitter(chunk_size=256, chunk_overlap=0),
                num_workers=0, timeout=None,
            )
            tracemalloc.start()
            report = await flow.run(paths=[folder])
            _, peak = tracemalloc.get_traced_memory()
        print(json.dumps({"chunks": report.chunks, "peak": peak}))

    asyncio.run(main())
    """
)


def _peak(tmp_path: Path, chunks: int) -> tuple[int, int]:
    """(chunks stored, the Python heap's peak in bytes) of ingesting ``chunks`` chunks."""
    folder = tmp_path / f"corpus{chunks}"
    folder.mkdir()
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(folder), str(tmp_path / f"q{chunks}"), str(chunks)]
        + [str(PER_FILE)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    return figures["chunks"], figures["peak"]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_ingestion_memory_does_not_grow_with_the_folder(tmp_path: Path) -> None:
    """Four times the chunks raise the heap's peak by under 1 KB per extra chunk."""
    small_chunks, small = _peak(tmp_path, 1000)
    large_chunks, large = _peak(tmp_path, 4000)
    assert small_chunks >= 1000 and large_chunks >= 4 * small_chunks - PER_FILE
    per_chunk = (large - small) / (large_chunks - small_chunks)
    assert per_chunk < 1024, f"{per_chunk:.0f} bytes more per extra chunk"
