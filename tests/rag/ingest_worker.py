"""A process that ingests a folder and hangs in its second embedding batch, to be SIGKILLed.

``python ingest_worker.py FOLDER QDRANT_PATH`` ingests FOLDER into the local Qdrant folder
QDRANT_PATH in batches of :data:`BATCH` chunks. The first embedding call answers; the others
never do (an embedding API that stopped answering), so exactly one batch gets stored. The
worker prints ``stored DONE/TOTAL`` from the workflow's progress events; the test kills it
after the first one, between batches.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import ClassVar

from batonflow.rag import IngestionWorkflow, IngestProgress, QdrantStore
from llama_index.core.node_parser import SentenceSplitter
from rag_helpers import ConceptEmbedding

#: Chunks per embedding (and store) batch.
BATCH = 2


class GatedEmbedding(ConceptEmbedding):
    """:class:`ConceptEmbedding` whose batch calls after the first ``answered`` ones hang."""

    answered: ClassVar[int | None] = None

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        limit = GatedEmbedding.answered
        if limit is not None and len(ConceptEmbedding.calls) >= limit:
            await asyncio.Event().wait()  # never answers
        return self._get_text_embeddings(texts)


def ingestion(store: QdrantStore) -> IngestionWorkflow:
    """The ingestion the worker runs and the test re-runs: one paragraph per chunk."""
    return IngestionWorkflow(
        store=store,
        embed_model=GatedEmbedding(),
        splitter=SentenceSplitter(chunk_size=70, chunk_overlap=0),
        embed_batch_size=BATCH,
    )


async def _main(folder: str, qdrant_path: str) -> None:
    GatedEmbedding.answered = 1
    store = QdrantStore(path=qdrant_path)
    out = sys.stdout
    # llama-index's splitter prints warnings on stdout, between the lines the test reads.
    with contextlib.redirect_stdout(sys.stderr):
        handler = ingestion(store).run(paths=[folder])
        async for event in handler.stream_events():
            if isinstance(event, IngestProgress) and event.phase == "store":
                print(f"stored {event.done}/{event.total}", file=out, flush=True)
        await handler


if __name__ == "__main__":
    asyncio.run(_main(sys.argv[1], sys.argv[2]))
