"""Fixtures of the RAG tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from batonflow.rag.store import QdrantStore
from rag_helpers import write_corpus


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus")


@pytest.fixture
def memory_store():
    store = QdrantStore(location=":memory:")
    yield store
    store.close()
