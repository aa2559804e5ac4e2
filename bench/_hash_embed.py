"""A deterministic offline embedding for the ingest benchmark: the same vectors in every run.

Each text's vector is drawn from a generator seeded with the SHA-256 of the text, so both sides
of a comparison (and worker processes) embed the same text to the same vector, at a cost
(tens of microseconds a text) that does not hide the rest of the pipeline.
"""

from __future__ import annotations

import hashlib
import random

from llama_index.core.base.embeddings.base import BaseEmbedding

DIM = 64


def hash_vector(text: str, dim: int = DIM) -> list[float]:
    """The vector of ``text``: ``dim`` floats in [-1, 1) seeded by the text's hash."""
    rng = random.Random(hashlib.sha256(text.encode("utf-8")).digest())
    return [rng.random() * 2.0 - 1.0 for _ in range(dim)]


class HashEmbedding(BaseEmbedding):
    """:func:`hash_vector` as a llama-index embedding model."""

    def _get_query_embedding(self, query: str) -> list[float]:
        return hash_vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return hash_vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return hash_vector(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [hash_vector(t) for t in texts]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [hash_vector(t) for t in texts]
