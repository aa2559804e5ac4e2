"""Test doubles for the RAG tests: a deterministic "concept" embedding and a small corpus."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from llama_index.core.base.embeddings.base import BaseEmbedding

# Words that mean the same thing share one dimension, so paraphrases land close together
# even when they share no word; that is what a real embedding model gives and BM25 cannot.
_CONCEPTS: dict[str, int] = {}
for _dim, _words in enumerate(
    [
        "car cars automobile automobiles vehicle engine oil tyre tyres motor",
        "dog dogs puppy puppies canine pet pets",
        "maintenance upkeep servicing care repair",
        "health healthcare vaccination vaccinations vet illness",
        "database vectors vector qdrant collection storage",
        "workflow workflows pipeline event events step steps orchestration",
        "food meals feed feeding nutrition eat",
        "recipe bread bake baking flour",
    ]
):
    for _w in _words.split():
        _CONCEPTS[_w] = _dim
DIM = 8


class ConceptEmbedding(BaseEmbedding):
    """A deterministic fake dense embedding: a bag of concepts, one dimension per concept."""

    calls: ClassVar[list[int]] = []

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * DIM
        for word in re.findall(r"\w+", text.lower()):
            if word in _CONCEPTS:
                vec[_CONCEPTS[word]] += 1.0
        if not any(vec):
            vec[-1] = 1e-3  # cosine needs a non-zero vector
        return vec

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        ConceptEmbedding.calls.append(len(texts))
        return [self._vector(t) for t in texts]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._get_text_embeddings(texts)


CORPUS = {
    "cars.md": "# Looking after a car\n\nChange the engine oil every 8000 kilometres and check "
    "the tyre pressure once a month.\n",
    "dogs.txt": "Puppies need their vaccinations before their first walk outside. Feed a young "
    "dog three small meals a day.\n",
    "qdrant.md": "# Qdrant\n\nQdrant keeps vectors and payloads in a collection; local mode "
    "stores the collection in a folder on disk.\n",
    "workflow.md": "# Workflows\n\nA workflow passes events between steps, and the context "
    "keeps shared state for the run.\n",
    "bread.txt": "Knead the dough for ten minutes, let it rise for an hour, then bake at 220 "
    "degrees until golden.\n",
}


def write_corpus(root: Path, *, bad_files: bool = True) -> Path:
    """Write the test corpus (and, by default, an empty and a binary file) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in CORPUS.items():
        (root / name).write_text(text, encoding="utf-8")
    if bad_files:
        (root / "empty.txt").write_text("", encoding="utf-8")
        (root / "blob.txt").write_bytes(bytes(range(256)) * 8)
    return root
