"""Splitting documents into chunks and hashing them, for ingestion.

Documents are split with any llama-index node parser (``SentenceSplitter`` by default). Which
files are read, and how, is :mod:`batonflow.rag.files` (re-exported here, where it used to live).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.ingestion import run_transformations
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import MetadataMode, TransformComponent
from pydantic import BaseModel, ConfigDict, Field

from ._splitting import for_splitting
from .errors import RAGConfigError
from .files import PDF_SUFFIX as PDF_SUFFIX
from .files import TEXT_SUFFIXES as TEXT_SUFFIXES
from .files import SkippedFile as SkippedFile
from .files import discover as discover
from .files import load_files as load_files
from .files import read_file as read_file
from .store import Chunk


class PendingChunk(BaseModel):
    """A chunk before embedding: what to store, and the text to embed (with metadata).

    A pydantic model (not a dataclass like :class:`Chunk`) because it travels inside workflow
    events, which checkpoints serialize.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    source: str
    index: int
    metadata: dict[str, Any] = Field(default_factory=dict)
    embed_text: str
    content_hash: str | None = None
    source_chunks: int | None = None

    def to_chunk(self, dense: Sequence[float] | None = None) -> Chunk:
        """The :class:`Chunk` to store, with its dense vector when there is one."""
        return Chunk(
            text=self.text,
            source=self.source,
            index=self.index,
            metadata=dict(self.metadata),
            dense=dense,
            content_hash=self.content_hash,
            source_chunks=self.source_chunks,
        )


def source_of(doc: Document) -> str:
    """What a document's chunks are filed under: its file path, else ``source``, else its id."""
    meta = doc.metadata
    return str(meta.get("file_path") or meta.get("source") or doc.id_)


def check_transformations(splitter: Any) -> list[TransformComponent]:
    """``splitter=`` as a list of llama-index transformations (a node parser, extractors, ...).

    Raises:
        RAGConfigError: an item is not a llama-index ``TransformComponent``, or is an embedding
            model (pass that as ``embed_model=``).
    """
    if splitter is None:
        return [SentenceSplitter()]
    items = list(splitter) if isinstance(splitter, list | tuple) else [splitter]
    for item in items:
        if isinstance(item, BaseEmbedding):
            raise RAGConfigError(
                f"splitter= holds the embedding model {type(item).__name__}; pass it as "
                "embed_model= instead (ingestion embeds the chunks itself)."
            )
        if not isinstance(item, TransformComponent):
            raise RAGConfigError(
                f"splitter= got {type(item).__name__}; pass a llama-index node parser (e.g. "
                "SentenceSplitter(chunk_size=512)) or a list of transformations (node parsers "
                "and metadata extractors), applied in order as an IngestionPipeline would."
            )
    if not items:
        raise RAGConfigError("splitter= is an empty list; leave it out for SentenceSplitter().")
    return items


def split_documents(
    documents: Sequence[Document],
    splitter: Any = None,
    hashes: Mapping[str, str] | None = None,
) -> list[PendingChunk]:
    """Split documents into chunks numbered per source (several documents may share one).

    Args:
        documents: the documents.
        splitter: a llama-index node parser, or a list of transformations applied in order
            (as ``IngestionPipeline(transformations=...)`` does); ``SentenceSplitter()`` by
            default.
        hashes: each source's content hash, recorded on its chunks.

    Each chunk also records how many chunks its source has (``source_chunks``), so a store
    can tell a source written whole from one whose writing was interrupted.
    """
    hashes = hashes or {}
    transformations = check_transformations(splitter)
    pending: list[PendingChunk] = []
    next_index: dict[str, int] = {}
    splitting = for_splitting(transformations)  # the same chunks, token counts remembered
    for doc in documents:
        source = source_of(doc)
        for node in run_transformations([doc], splitting):
            text = node.get_content(metadata_mode=MetadataMode.NONE)
            if not text.strip():
                continue
            index = next_index.get(source, 0)
            next_index[source] = index + 1
            metadata: dict[str, Any] = {k: _jsonable(v) for k, v in node.metadata.items()}
            pending.append(
                PendingChunk(
                    text=text,
                    source=source,
                    index=index,
                    metadata=metadata,
                    embed_text=node.get_content(metadata_mode=MetadataMode.EMBED),
                    content_hash=hashes.get(source),
                )
            )
    return [p.model_copy(update={"source_chunks": next_index[p.source]}) for p in pending]


def _describe(component: Any) -> Any:
    # The settings of a llama-index component (chunk size, model name, ...), for the hash; an
    # object inside is reduced to its type name so the hash is the same in every process.
    to_dict = getattr(component, "to_dict", None)
    data = to_dict() if callable(to_dict) else {}
    return [type(component).__name__, data]


#: File metadata that changes when a file is touched or copied, not when its content does.
_VOLATILE_METADATA = frozenset({"creation_date", "last_modified_date", "last_accessed_date"})


def pipeline_of(transformations: Sequence[Any], embed_model: Any = None) -> str:
    """How documents are processed (the splitter's and the embedding's settings), hashed with
    each source by :func:`content_hashes`."""
    return json.dumps(
        [_describe(t) for t in transformations]
        + [[type(embed_model).__name__, getattr(embed_model, "model_name", None)]],
        sort_keys=True,
        default=lambda o: type(o).__name__,
    )


def content_hashes(
    documents: Sequence[Document],
    transformations: Sequence[Any],
    embed_model: Any = None,
    *,
    pipeline: str | None = None,
) -> dict[str, str]:
    """A hash per source of its documents' text and metadata and of how they are processed.

    Ingestion skips a source whose hash matches the one its stored chunks carry: the same
    content, split and embedded the same way, gives the same chunks. Changing the splitter's
    settings or the embedding model changes every hash, so everything is re-ingested.
    ``pipeline`` is :func:`pipeline_of` the transformations and model, when already known.
    """
    if pipeline is None:
        pipeline = pipeline_of(transformations, embed_model)
    digests: dict[str, Any] = {}
    for doc in documents:
        source = source_of(doc)
        h = digests.get(source)
        if h is None:
            h = digests[source] = hashlib.sha256(pipeline.encode("utf-8"))
        kept = {k: v for k, v in doc.metadata.items() if k not in _VOLATILE_METADATA}
        meta = json.dumps(kept, sort_keys=True, default=str)
        for part in (doc.text, meta):
            h.update(len(part).to_bytes(8, "big"))
            h.update(part.encode("utf-8"))
    return {source: h.hexdigest() for source, h in digests.items()}


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


__all__ = [
    "PDF_SUFFIX",
    "TEXT_SUFFIXES",
    "PendingChunk",
    "SkippedFile",
    "check_transformations",
    "content_hashes",
    "discover",
    "load_files",
    "pipeline_of",
    "read_file",
    "source_of",
    "split_documents",
]
