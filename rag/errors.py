"""The errors ``batonflow.rag`` raises, under the engine's :class:`~batonflow.core.errors.BatonflowError`.

BatonflowError
└── RAGError
    ├── StoreLockedError (RuntimeError)    a local Qdrant folder another client holds open
    ├── StoreConfigError (ValueError)      a store option or collection that cannot work
    ├── StoreUnavailableError (ConnectionError)  a Qdrant server that cannot be reached
    ├── CollectionNotFoundError (LookupError)    a query on a collection that does not exist
    └── RAGConfigError (ValueError)          a RAGWorkflow/IngestionWorkflow option that cannot work

An LLM call that fails raises the agents' ``LLMCallError`` (a ``WorkflowRuntimeError``).
"""

from __future__ import annotations

from batonflow.core.errors import BatonflowError


class RAGError(BatonflowError):
    """Base class of the errors raised by ``batonflow.rag``."""


class StoreLockedError(RAGError, RuntimeError):
    """The local Qdrant folder is already open in another process or client."""


class StoreConfigError(RAGError, ValueError):
    """Store options, or an existing collection's vectors, that do not fit what was asked."""


class StoreUnavailableError(RAGError, ConnectionError):
    """The Qdrant server at ``url=`` could not be reached."""


class CollectionNotFoundError(RAGError, LookupError):
    """A query named a collection that does not exist (a typo would otherwise find nothing)."""


class RAGConfigError(RAGError, ValueError):
    """A workflow option that cannot work (a reranker that is not a postprocessor, ...)."""


def collection_missing(collection: str, where: str, names: list[str]) -> str:
    """The message of :class:`CollectionNotFoundError`: what is there, and how to fill it."""
    there = (
        f"the collections there are: {', '.join(names)}; pass one with collection= "
        "(--collection), or"
        if names
        else "it has no collections yet;"
    )
    return (
        f"Collection {collection!r} does not exist at {where}; {there} ingest documents first: "
        f"batonflow rag ingest PATH --collection {collection}."
    )


__all__ = [
    "CollectionNotFoundError",
    "RAGConfigError",
    "RAGError",
    "StoreConfigError",
    "StoreLockedError",
    "StoreUnavailableError",
    "collection_missing",
]
