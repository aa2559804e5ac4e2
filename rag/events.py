"""The events of the ingestion and RAG workflows.

Written to the event stream (``handler.stream_events()``) for callers to show:
:class:`IngestProgress`, :class:`SourcesEvent` and :class:`AnswerDelta`. The others pass work
between steps; subclasses of the workflows may emit or accept them too.
"""

from __future__ import annotations

from typing import Any, Literal

from batonflow.core import Event
from llama_index.core.schema import NodeWithScore

from .loading import PendingChunk
from .synthesis import Source


class IngestProgress(Event):
    """Ingestion progress (streamed): ``done`` of ``total`` in one ``phase``.

    Phases, in order: ``read`` counts files read, ``split`` documents split into chunks,
    ``store`` chunks embedded and stored. A phase with nothing to do sends no event.
    """

    done: int
    total: int
    phase: Literal["read", "split", "store"] = "store"


class EmbedBatchEvent(Event):
    """A batch of chunks to embed (when a model is set) and store."""

    chunks: list[PendingChunk]
    total_batches: int = 0  # unused: kept so checkpoints of earlier versions load
    #: the batch's place in the run (0, 1, ...): with worker processes, batches are stored
    #: in this order, so the store's BM25 mean moves as it does without them
    seq: int = 0


class BatchStoredEvent(Event):
    """A batch of ``count`` chunks was stored."""

    count: int
    # unused: kept so checkpoints of earlier versions load
    ids: dict[str, list[str]] = {}
    total_batches: int = 0


class IngestPlanEvent(Event):
    """What ingestion read and decided, and the number of batches to wait for."""

    files: int
    skipped: list[tuple[str, str] | tuple[str, str, str]]  # (path, reason[, kind])
    added: list[str]
    updated: list[str]
    unchanged: list[str]
    removed: list[str]
    changed: list[str]
    chunks_removed: int
    total_chunks: int
    total_batches: int
    repaired: list[str] = []
    #: the changed sources' new content hashes: their chunks with another hash are deleted
    changed_hashes: dict[str, str] = {}


class QueryEvent(Event):
    """The prepared query, held for the synthesis step."""

    query: str


class RetrieveEvent(Event):
    """Asks the retrieval step to fetch passages for ``query`` (with the run's options)."""

    query: str
    filters: Any = None
    top_k: int | None = None


class RetrievedEvent(Event):
    """The passages retrieval found, best first."""

    query: str
    nodes: list[NodeWithScore]


class RerankedEvent(Event):
    """The passages after the (optional) reranker, best first: what synthesis answers from."""

    query: str
    nodes: list[NodeWithScore]


class SourcesEvent(Event):
    """The sources the answer will cite, in citation order (streamed before the answer)."""

    query: str
    sources: list[Source]


class AnswerDelta(Event):
    """A piece of the answer as the LLM streams it (streamed)."""

    delta: str


__all__ = [
    "AnswerDelta",
    "BatchStoredEvent",
    "EmbedBatchEvent",
    "IngestPlanEvent",
    "IngestProgress",
    "QueryEvent",
    "RerankedEvent",
    "RetrieveEvent",
    "RetrievedEvent",
    "SourcesEvent",
]
