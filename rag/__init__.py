"""batonflow.rag: ingestion and retrieval-augmented generation on Qdrant.

* :class:`QdrantStore`: chunks with BM25 sparse (and optional dense) vectors in Qdrant, embedded
  locally (a folder or memory) or on a server by URL.
* :class:`IngestionWorkflow`: files/documents → chunks → (embeddings) → the store.
* :class:`RAGWorkflow`: retrieve → (rerank) → answer citing sources as [1], [2]; extractive
  when no LLM is configured, so it works offline.
* :class:`QdrantRetriever`: a llama-index retriever over the store.

Install with ``pip install 'batonflow[rag]'``.
"""

import importlib
from typing import TYPE_CHECKING, Any

from batonflow._extras import require_extra

# The extra's packages are checked first (without importing them), for a clear error.
require_extra(
    "batonflow.rag",
    "rag",
    {
        "llama_index.core": "llama-index-core",
        "qdrant_client": "qdrant-client",
        "qdrant_edge": "qdrant-edge-py",
        "Stemmer": "PyStemmer",
    },
)

# The names are imported when first used (PEP 562), so ``from batonflow.rag import
# QdrantStore`` does not import llama-index: the command line checks a store (a missing
# collection, a server that is down) and says so before it loads the workflows.
_EXPORTS = {
    "MiniLMEmbedding": ".embeddings",
    "CollectionNotFoundError": ".errors",
    "RAGConfigError": ".errors",
    "RAGError": ".errors",
    "StoreConfigError": ".errors",
    "StoreLockedError": ".errors",
    "StoreUnavailableError": ".errors",
    "AnswerDelta": ".events",
    "IngestProgress": ".events",
    "QueryEvent": ".events",
    "RerankedEvent": ".events",
    "RetrievedEvent": ".events",
    "RetrieveEvent": ".events",
    "SourcesEvent": ".events",
    "to_qdrant_filter": ".filters",
    "IngestionReport": ".ingestion",
    "IngestionWorkflow": ".ingestion",
    "FileSelection": ".files",
    "SkippedFile": ".files",
    "count_skipped": ".files",
    "QdrantQuery": ".retriever",
    "QdrantRetriever": ".retriever",
    "sample_docs_dir": ".samples",
    "BM25SparseEncoder": ".sparse",
    "Chunk": ".store",
    "Hit": ".store",
    "QdrantStore": ".store",
    "RAGResponse": ".synthesis",
    "Source": ".synthesis",
    "RAGStart": ".workflow",
    "RAGWorkflow": ".workflow",
}

if TYPE_CHECKING:
    from .embeddings import MiniLMEmbedding as MiniLMEmbedding
    from .errors import CollectionNotFoundError as CollectionNotFoundError
    from .errors import RAGConfigError as RAGConfigError
    from .errors import RAGError as RAGError
    from .errors import StoreConfigError as StoreConfigError
    from .errors import StoreLockedError as StoreLockedError
    from .errors import StoreUnavailableError as StoreUnavailableError
    from .events import AnswerDelta as AnswerDelta
    from .events import IngestProgress as IngestProgress
    from .events import QueryEvent as QueryEvent
    from .events import RerankedEvent as RerankedEvent
    from .events import RetrievedEvent as RetrievedEvent
    from .events import RetrieveEvent as RetrieveEvent
    from .events import SourcesEvent as SourcesEvent
    from .files import FileSelection as FileSelection
    from .files import SkippedFile as SkippedFile
    from .files import count_skipped as count_skipped
    from .filters import to_qdrant_filter as to_qdrant_filter
    from .ingestion import IngestionReport as IngestionReport
    from .ingestion import IngestionWorkflow as IngestionWorkflow
    from .retriever import QdrantQuery as QdrantQuery
    from .retriever import QdrantRetriever as QdrantRetriever
    from .samples import sample_docs_dir as sample_docs_dir
    from .sparse import BM25SparseEncoder as BM25SparseEncoder
    from .store import Chunk as Chunk
    from .store import Hit as Hit
    from .store import QdrantStore as QdrantStore
    from .synthesis import RAGResponse as RAGResponse
    from .synthesis import Source as Source
    from .workflow import RAGStart as RAGStart
    from .workflow import RAGWorkflow as RAGWorkflow


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'batonflow.rag' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "AnswerDelta",
    "BM25SparseEncoder",
    "Chunk",
    "CollectionNotFoundError",
    "FileSelection",
    "Hit",
    "IngestProgress",
    "IngestionReport",
    "IngestionWorkflow",
    "MiniLMEmbedding",
    "QdrantQuery",
    "QdrantRetriever",
    "QdrantStore",
    "QueryEvent",
    "RAGConfigError",
    "RAGError",
    "RAGResponse",
    "RAGStart",
    "RAGWorkflow",
    "RerankedEvent",
    "RetrieveEvent",
    "RetrievedEvent",
    "SkippedFile",
    "Source",
    "SourcesEvent",
    "StoreConfigError",
    "StoreLockedError",
    "StoreUnavailableError",
    "count_skipped",
    "sample_docs_dir",
    "to_qdrant_filter",
]
