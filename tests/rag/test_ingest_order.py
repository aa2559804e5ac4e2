"""Batches are stored in the order they were split, whatever order their writes finish in:
each batch's BM25 vectors use the collection's mean length at its write, so the order decides
the vectors (rag/_in_order.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import qdrant_edge as qe
from batonflow.rag import IngestionWorkflow, QdrantStore
from batonflow.rag.chunks import Chunk
from llama_index.core import Document
from llama_index.core.node_parser import SentenceSplitter
from rag_helpers import ConceptEmbedding

WORDS = "car dog engine puppy vet recipe bread qdrant workflow event oil tyre flour".split()


class SlowFirstWrite(QdrantStore):
    """A store whose first write waits before it starts (as a loaded machine may make it)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._first = threading.Lock()
        self._waited = False

    def upsert(self, chunks: Sequence[Chunk]) -> int:
        with self._first:
            wait, self._waited = not self._waited, True
        if wait:
            time.sleep(0.5)
        return super().upsert(chunks)


def _documents() -> list[Document]:
    """Documents of very different lengths, so each batch moves the mean length."""
    return [
        Document(
            text=" ".join(WORDS[(i + k) % len(WORDS)] for k in range(3 + 40 * (i % 3))),
            id_=f"doc{i}",
        )
        for i in range(24)
    ]


def _vectors(store: QdrantStore) -> dict[str, Any]:
    """Every point's sparse vector, by id."""
    shard = store._engine._shards[store.collection]
    request = qe.ScrollRequest(limit=1000, with_payload=False, with_vector=True)
    records, _ = shard.scroll(request)
    return {
        str(r.id): (tuple(r.vector["sparse"].indices), tuple(r.vector["sparse"].values))
        for r in records
    }


async def test_a_late_first_write_stores_the_points_an_ordered_one_does() -> None:
    """The first batch's write is held back while three more batches are ready: the points are
    the ones written in order."""
    found = []
    for store in (QdrantStore(location=":memory:"), SlowFirstWrite(location=":memory:")):
        with store:
            flow = IngestionWorkflow(
                store=store,
                embed_model=ConceptEmbedding(),
                splitter=SentenceSplitter(chunk_size=96, chunk_overlap=8),
                embed_batch_size=4,
                num_workers=0,
                timeout=60,
            )
            report = await flow.run(documents=_documents())
            assert report.chunks >= 16
            found.append(_vectors(store))
    assert found[1] == found[0]
