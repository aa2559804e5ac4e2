"""The payload layout of a stored chunk, shared with llama-index's ``QdrantVectorStore``.

A point written by :class:`~batonflow.rag.QdrantStore` carries:

* vectors: ``"sparse"``, the BM25 sparse vector (the collection applies IDF), and, when an
  embedding model is used, ``"text-dense"`` (cosine), the name llama-index's
  ``QdrantVectorStore`` looks for;
* payload, the fields llama-index writes (``node_to_metadata_dict``): the chunk's metadata keys at
  the top level, ``_node_content`` (the node as JSON), ``_node_type``, and ``document_id`` /
  ``doc_id`` / ``ref_doc_id`` (the chunk's source); plus batonflow's own ``text`` (the chunk),
  ``source``, ``chunk`` (its index in the source), ``content_hash`` (of the whole source
  document, for incremental re-ingestion) and ``source_chunks`` (how many chunks that version of
  the source has, so re-ingestion can tell a source stored whole from one left incomplete),
  ``bm25_len`` (the chunk's length in BM25 terms) and ``bm25_avg`` (the collection's mean length
  its sparse vector was encoded with; see :mod:`batonflow.rag.sparse`).

The chunk's text is stored once, inside ``_node_content`` (where llama-index reads it).
Collections written by earlier batonflow versions also hold it in a top-level ``text``; they
are read as they are (that copy is used, so their hits need no JSON decoding either).

A query reads only :data:`READ_FIELDS` of each hit, and a hit decodes ``_node_content`` only
when its text or metadata is first asked for (:class:`~batonflow.rag.chunks.Hit`).

So ``VectorStoreIndex.from_vector_store(QdrantVectorStore(client=..., collection_name=...))``
reads what batonflow ingests, and :class:`QdrantStore` reads collections llama-index wrote (by
their dense vectors; they have no BM25 vector). Collections from earlier batonflow versions
(dense vector ``"dense"``, metadata under ``"metadata"``) are read as they are.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .chunks import Chunk, Hit

SPARSE = "sparse"
DENSE = "text-dense"
#: Dense vector names of earlier layouts, looked for in this order after :data:`DENSE`
#: (``""``: llama-index's old unnamed vector).
LEGACY_DENSE = ("dense", "")
#: Payload fields batonflow writes next to the metadata keys.
RESERVED = frozenset(
    {"text", "source", "chunk", "content_hash", "source_chunks", "_node_content", "_node_type"}
    | {"document_id", "doc_id", "ref_doc_id", "metadata", "bm25_len", "bm25_avg"}
)
#: The payload fields a query reads: enough for a hit in any of the layouts above (a point
#: with none of ``_node_content``, ``metadata`` and ``text`` is read whole).
READ_FIELDS = ["_node_content", "text", "metadata", "source", "ref_doc_id", "document_id"]


@dataclass(frozen=True, slots=True)
class Layout:
    """The vectors a collection holds.

    Attributes:
        dense: the name of its dense vector (``None``: none).
        dense_size: the dense vector's size.
        sparse: the name of its BM25 sparse vector (``None``: none, e.g. made by llama-index).
    """

    dense: str | None
    dense_size: int | None
    sparse: str | None


def detect(dense: dict[str, int], sparse: set[str]) -> Layout:
    """The layout of a collection with these dense (name → size) and sparse vector names."""
    name = next((n for n in (DENSE, *LEGACY_DENSE) if n in dense), None)
    return Layout(
        dense=name,
        dense_size=dense[name] if name is not None else None,
        sparse=SPARSE if SPARSE in sparse else None,
    )


def payload_of(
    chunk: Chunk, content_hash: str | None = None, point_id: str | None = None
) -> dict[str, Any]:
    """The payload of ``chunk``: llama-index's fields plus batonflow's (see the module docs).

    Built here, field for field as llama-index's ``node_to_metadata_dict`` builds a
    ``TextNode``'s (a test pins the two equal), so a write neither imports llama-index nor
    pays for validating and dumping a pydantic node per chunk. Metadata holding other than
    JSON values (a date, a tuple) goes through llama-index, whose JSON dump converts them.
    ``point_id`` saves recomputing ``chunk.id`` when the caller has it.
    """
    pid = point_id if point_id is not None else chunk.id
    if not _plain(chunk.metadata):
        payload = _llama_payload(chunk, pid)
    else:
        payload = _copy(chunk.metadata)
        payload["_node_content"] = _node_json(pid, chunk)
        payload["_node_type"] = "TextNode"
        ref = chunk.source or "None"
        payload["document_id"] = payload["doc_id"] = payload["ref_doc_id"] = ref
    payload.pop("text", None)  # a metadata key named "text": the text lives in _node_content
    payload.update(source=chunk.source, chunk=chunk.index)
    if content_hash is not None:
        payload["content_hash"] = content_hash
    if chunk.source_chunks is not None:
        payload["source_chunks"] = chunk.source_chunks
    return payload


#: The JSON of llama-index's ``TextNode`` of a chunk (``json.dumps(node.dict())``'s bytes,
#: fields in its order), in four parts around the id, metadata, source and text.
_NODE_JSON = (
    '{"id_": ',
    ', "embedding": null, "metadata": ',
    ', "excluded_embed_metadata_keys": [], "excluded_llm_metadata_keys": [], '
    '"relationships": {"1": {"node_id": ',
    ', "node_type": null, "metadata": {}, "hash": null, "class_name": "RelatedNodeInfo"}}, '
    '"metadata_template": "{key}: {value}", "metadata_separator": "\\n", "text": ',
    ', "mimetype": "text/plain", "start_char_idx": null, "end_char_idx": null, '
    '"text_template": "{metadata_str}\\n\\n{content}", "class_name": "TextNode"}',
)
_quote = json.encoder.encode_basestring  # a JSON string, as json.dumps(ensure_ascii=False)
_dump = json.JSONEncoder(ensure_ascii=False).encode


def _node_json(pid: str, chunk: Chunk) -> str:
    """``_node_content`` of a chunk with plain JSON metadata, without building the node: its
    constant parts around the four values, each dumped as ``json.dumps`` does in a node."""
    id_, meta, source, text, end = _NODE_JSON
    metadata = _dump(chunk.metadata) if chunk.metadata else "{}"
    return (
        f"{id_}{_quote(pid)}{meta}{metadata}{source}{_quote(chunk.source)}"
        f"{text}{_quote(chunk.text)}{end}"
    )


def _llama_payload(chunk: Chunk, pid: str) -> dict[str, Any]:
    # Imported here: only metadata that is not plain JSON needs llama-index's dump.
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
    from llama_index.core.vector_stores.utils import node_to_metadata_dict

    node = TextNode(
        id_=pid,
        text=chunk.text,
        metadata=dict(chunk.metadata),
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=chunk.source)},
    )
    return node_to_metadata_dict(node, remove_text=False, flat_metadata=False)


def _plain(value: Any) -> bool:
    """Whether ``value`` is JSON as it is (str keys; str, int, float, bool, None, list, dict)."""
    if value is None or type(value) in (str, int, float, bool):
        return True
    if type(value) is list:
        return all(_plain(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    return False


def _copy(value: Any) -> Any:
    """A copy of plain JSON ``value`` whose lists and dicts are new (as a JSON dump gives)."""
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return value


_FLOAT = {float}


def dense_floats(vector: Sequence[float] | None) -> list[float] | None:
    """A dense vector as the list of floats the engines take (as given when it is one)."""
    if vector is None:
        return None
    if type(vector) is list and set(map(type, vector)) == _FLOAT:  # in C: ~1 us for 64
        return vector
    return [float(x) for x in vector]


def hit_of(point_id: Any, score: float, payload: dict[str, Any] | None) -> Hit:
    """A :class:`Hit` from a stored point, in batonflow's layout, llama-index's, or an older one.

    ``_node_content`` is kept undecoded in the hit until its text or metadata is read.
    """
    payload = payload or {}
    content = payload.get("_node_content")
    source = payload.get("source")
    if isinstance(content, str) and source and "text" not in payload:
        # batonflow's own layout, the common case: everything else is decoded when read.
        return Hit(point_id, None, float(score), str(source), None, node_json=content)
    text = payload.get("text")
    metadata = payload.get("metadata")
    content = payload.get("_node_content")
    node_json = content if isinstance(content, str) else None
    if not isinstance(metadata, dict):
        metadata = None
        if node_json is None:  # flat payload without a node: metadata at the top level
            metadata = {k: v for k, v in payload.items() if k not in RESERVED}
    if node_json is None and text is None:
        text = ""
    source = payload.get("source") or payload.get("ref_doc_id") or payload.get("document_id")
    if not source:
        meta = (
            metadata
            if metadata is not None
            else Hit("", "", 0.0, "", None, node_json=node_json).metadata
        )
        source = meta.get("file_path") or meta.get("source") or ""
    return Hit(
        id=point_id,
        text=None if text is None else str(text),
        score=float(score),
        source=str(source),
        metadata=None if metadata is None else dict(metadata),
        node_json=node_json,
    )


__all__ = [
    "DENSE",
    "LEGACY_DENSE",
    "READ_FIELDS",
    "RESERVED",
    "SPARSE",
    "Layout",
    "dense_floats",
    "detect",
    "hit_of",
    "payload_of",
]
