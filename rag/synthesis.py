"""Answers from retrieved passages: the result models, the LLM prompt and the extractive answer.

With an LLM, :class:`~batonflow.rag.RAGWorkflow` asks it to answer from numbered sources and
cite them as ``[1]``, ``[2]``. With none, :func:`extractive_answer` quotes the passages' best
sentences with the same citations, so the flow works offline. When retrieval found nothing,
:func:`nothing_found` says so instead of guessing.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.schema import MetadataMode, NodeWithScore
from pydantic import BaseModel, Field

from .sparse import BM25SparseEncoder

#: A custom synthesizer: ``(query, nodes) -> answer`` (sync or async).
SynthesizerFn = Callable[[str, list[NodeWithScore]], "str | Awaitable[str]"]

SYSTEM_PROMPT = (
    "You answer questions using only the numbered sources given. Cite the sources you use "
    "with their numbers in square brackets, like [1] or [2][3], right after the sentence they "
    "support. If the sources do not contain the answer, say that they do not; never make up "
    "facts."
)


class Source(BaseModel):
    """A passage an answer is based on.

    Attributes:
        text: the passage.
        score: its retrieval (or rerank) score; higher is better.
        metadata: its metadata (``source``, ``file_path``, ``file_name``, ...).
        node_id: its node (point) id.
    """

    text: str
    score: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    node_id: str


class RAGResponse(BaseModel):
    """The result of a :class:`~batonflow.rag.RAGWorkflow` run: the answer and its sources.

    ``str(response)`` is the answer. Citation ``[n]`` in the answer is ``sources[n - 1]``.
    """

    answer: str
    sources: list[Source] = Field(default_factory=list)

    def __str__(self) -> str:
        return self.answer


def to_sources(nodes: Sequence[NodeWithScore]) -> list[Source]:
    """Nodes as :class:`Source` records, in order."""
    return [
        Source(
            text=n.node.get_content(metadata_mode=MetadataMode.NONE),
            score=n.score,
            metadata=dict(n.node.metadata),
            node_id=n.node.node_id,
        )
        for n in nodes
    ]


def nothing_found(query: str) -> str:
    """The answer when retrieval found no passage: say so, never guess."""
    return (
        f"I found nothing about {query!r} in the indexed documents, so I cannot answer it from "
        "them. Try other words, or ingest documents that cover it."
    )


def build_messages(query: str, nodes: Sequence[NodeWithScore]) -> list[ChatMessage]:
    """The chat messages asking an LLM to answer ``query`` from numbered ``nodes``."""
    blocks = []
    for i, n in enumerate(nodes, 1):
        name = n.node.metadata.get("file_name") or n.node.metadata.get("source") or ""
        header = f"[{i}] {name}".rstrip()
        blocks.append(f"{header}\n{n.node.get_content(metadata_mode=MetadataMode.NONE).strip()}")
    user = "Sources:\n\n" + "\n\n".join(blocks) + f"\n\nQuestion: {query}\nAnswer:"
    return [
        ChatMessage(role=MessageRole.SYSTEM, content=SYSTEM_PROMPT),
        ChatMessage(role=MessageRole.USER, content=user),
    ]


# A sentence ends at . ! ? followed by space, or at the CJK full stops, which need none.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")
_LIST_ITEM = re.compile(r"^(?:[-*+>]|\d+[.)])\s+")


def _paragraphs(text: str) -> tuple[list[str], list[str]]:
    """(paragraphs and list items with wrapped lines joined, Markdown headings)."""
    paragraphs: list[str] = []
    headings: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            paragraphs.append(" ".join(current))
            current.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            flush()
        elif line.startswith("#"):
            flush()
            headings.append(line.lstrip("#").strip())
        elif _LIST_ITEM.match(line):
            flush()
            current.append(_LIST_ITEM.sub("", line))
        else:
            current.append(line)
    flush()
    return paragraphs, headings


def _sentences(text: str) -> list[str]:
    """The sentences of a passage; Markdown headings are left out unless nothing else is there."""
    paragraphs, headings = _paragraphs(text)
    out = [s.strip() for p in paragraphs for s in _SENTENCE_END.split(p) if s.strip()]
    return out or [h for h in headings if h]


def extractive_answer(
    query: str,
    nodes: Sequence[NodeWithScore],
    *,
    encoder: BM25SparseEncoder | None = None,
    max_sources: int = 3,
    sentences_per_source: int = 2,
) -> str:
    """An answer made of the retrieved passages' own sentences, cited; no LLM needed.

    From each of the best ``max_sources`` passages it quotes the sentence sharing the most
    (stemmed) words with the query, plus up to ``sentences_per_source - 1`` more that match
    nearly as well (at least 3/4 as many words), in their original order, and cites the
    passage as ``[n]`` (its position in the sources). The best passage is always quoted (a
    semantic match may share no word with the query); the others only when their best sentence
    matches at least half as well as the best passage's.
    """
    if not nodes:
        return nothing_found(query)
    encoder = encoder or BM25SparseEncoder()
    wanted = set(encoder.tokenize(query))
    lines = []
    first_best: int | None = None
    for i, n in enumerate(nodes[:max_sources], 1):
        sentences = _sentences(n.node.get_content(metadata_mode=MetadataMode.NONE))
        if not sentences:
            continue
        overlap = [len(wanted & set(encoder.tokenize(s))) for s in sentences]
        best = max(overlap)
        if first_best is None:
            first_best = best
        elif best == 0 or 2 * best < first_best:
            continue
        ranked = sorted(range(len(sentences)), key=lambda j: (-overlap[j], j))
        keep = [ranked[0]] + [
            j
            for j in ranked[1:sentences_per_source]
            if overlap[j] > 0 and 4 * overlap[j] >= 3 * best
        ]
        lines.append(f"- {' '.join(sentences[j] for j in sorted(keep))} [{i}]")
    return "From the indexed documents:\n" + "\n".join(lines)


__all__ = [
    "SYSTEM_PROMPT",
    "RAGResponse",
    "Source",
    "SynthesizerFn",
    "build_messages",
    "extractive_answer",
    "nothing_found",
    "to_sources",
]
