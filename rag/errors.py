"""The errors ``batonflow.rag`` raises, under the engine's :class:`~batonflow.core.errors.BatonflowError`.

BatonflowError
└── RAGError
    ├── StoreLockedError (RuntimeError)    a local Qdrant folder another client holds open
    ├── StoreConfigError (ValueError)      a store option or collection that cannot work
    └── StoreUnavailableError (ConnectionError)  a Qdrant server that cannot be reached
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


__all__ = ["RAGError", "StoreConfigError", "StoreLockedError", "StoreUnavailableError"]
