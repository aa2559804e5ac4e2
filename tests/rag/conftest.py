"""Fixtures of the RAG tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from batonflow.rag.store import QdrantStore
from qdrant_client import QdrantClient
from rag_helpers import write_corpus


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus")


@pytest.fixture
def memory_store():
    """An in-memory store on the embedded engine (Qdrant Edge)."""
    store = QdrantStore(location=":memory:")
    yield store
    store.close()


@pytest.fixture
def client_store():
    """An in-memory store through qdrant-client (the engine used for a server by URL)."""
    client = QdrantClient(location=":memory:")
    store = QdrantStore(client=client)
    yield store
    store.close()
    client.close()
