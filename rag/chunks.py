"""The records the store reads and writes: :class:`Chunk` in, :class:`Hit` out, stable point ids.

:class:`StoredSource` says what the collection holds of one source, for re-ingestion.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://batonflow.dev/rag/chunk")


_NAMESPACE_BYTES = _ID_NAMESPACE.bytes
#: A UUID's variant digit (RFC 4122: the top two bits 10) from the hash's hex digit there.
_VARIANT = {f"{n:x}": "89ab"[n & 3] for n in range(16)}


def point_id(source: str, index: int, text: str) -> str:
    """The stable point id of chunk ``index`` of ``source`` with content ``text``.

    ``str(uuid.uuid5(namespace, name))``, with the name ``source, index, SHA-256 of text``;
    spelled out (the SHA-1, then the version and variant digits set in its hex) because every
    stored chunk needs one and ``uuid.uuid5`` builds a ``UUID`` object to print it.
    """
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    name = f"{source}\x1f{index}\x1f{digest}".encode()
    h = hashlib.sha1(_NAMESPACE_BYTES + name, usedforsecurity=False).hexdigest()
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of a document, ready to store.

    Attributes:
        text: the chunk's text (what retrieval returns and the sparse vector is built from).
        source: what the chunk came from (a file path or document id); re-ingesting a source
            replaces its chunks.
        index: the chunk's position within its source.
        metadata: JSON-compatible metadata, returned with the chunk.
        dense: the chunk's dense embedding, when an embedding model is used.
        content_hash: a hash of the whole source document the chunk came from; ingestion
            compares it to skip documents that did not change.
        source_chunks: how many chunks that version of the source has; with ``content_hash``
            it tells a source stored whole from one whose ingestion was interrupted.
    """

    text: str
    source: str
    index: int
    metadata: dict[str, Any] = field(default_factory=dict)
    dense: Sequence[float] | None = None
    content_hash: str | None = None
    source_chunks: int | None = None

    @property
    def id(self) -> str:
        """The chunk's stable point id."""
        return point_id(self.source, self.index, self.text)


class Hit:
    """A chunk found by a query, with its score (higher is better).

    A hit read from the store decodes its stored node (llama-index's ``_node_content`` JSON,
    which holds the chunk's text and metadata) only when ``text`` or ``metadata`` is first
    read, so a caller that needs ids, scores and sources pays for no JSON parsing.
    """

    __slots__ = ("_id", "_metadata", "_node_json", "_text", "score", "source")

    def __init__(
        self,
        id: Any,
        text: str | None,
        score: float,
        source: str,
        metadata: dict[str, Any] | None,
        *,
        node_json: str | None = None,
    ) -> None:
        self._id = id  # a str, or the engine's UUID until the id is asked for
        self.score = score
        self.source = source
        self._text = text
        self._metadata = metadata
        self._node_json = node_json

    def _decode(self) -> None:
        node = json.loads(self._node_json) if self._node_json else {}
        if self._text is None:
            text = node.get("text")
            if text is None:  # llama-index's later layout keeps it in text_resource
                text = (node.get("text_resource") or {}).get("text")
            self._text = str(text or "")
        if self._metadata is None:
            self._metadata = dict(node.get("metadata") or {})
        self._node_json = None

    @property
    def id(self) -> str:
        """The chunk's point id."""
        if not isinstance(self._id, str):
            self._id = str(self._id)
        return self._id

    @id.setter
    def id(self, value: str) -> None:
        self._id = value

    @property
    def text(self) -> str:
        """The chunk's text."""
        if self._text is None:
            self._decode()
        return self._text or ""

    @property
    def metadata(self) -> dict[str, Any]:
        """The chunk's metadata."""
        if self._metadata is None:
            self._decode()
        return self._metadata if self._metadata is not None else {}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Hit):
            return NotImplemented
        return (self.id, self.text, self.score, self.source, self.metadata) == (
            other.id,
            other.text,
            other.score,
            other.source,
            other.metadata,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Hit(id={self.id!r}, score={self.score!r}, source={self.source!r}, "
            f"text={self.text[:40]!r})"
        )


@dataclass(frozen=True, slots=True)
class StoredSource:
    """What a collection holds of one source (see :meth:`QdrantStore.stored_sources`).

    Attributes:
        content_hash: the hash its chunks were ingested with; ``None`` when they carry none or
            do not agree on one (chunks of two versions).
        chunks: how many chunks of it are stored.
        complete: whether the stored chunks are one whole version of the source: they agree
            on one hash and, when they record how many chunks that version has
            (``source_chunks``, written by ingestion), that many are stored. ``False`` when an
            ingestion was interrupted while writing the source. Chunks that record no count
            (written by hand, or by an earlier batonflow) cannot be checked and count as whole.
    """

    content_hash: str | None
    chunks: int
    complete: bool


def chunks_of(
    source: str, texts: Iterable[str], metadata: dict[str, Any] | None = None
) -> list[Chunk]:
    """Number ``texts`` as the chunks of ``source`` (a helper for hand-made corpora)."""
    return [
        Chunk(text=t, source=source, index=i, metadata=dict(metadata or {}))
        for i, t in enumerate(texts)
    ]


__all__ = ["Chunk", "Hit", "StoredSource", "chunks_of", "point_id"]
