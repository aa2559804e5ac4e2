"""A store write builds llama-index's payload itself: the same fields, no llama-index import."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from batonflow.rag.layout import payload_of
from batonflow.rag.store import Chunk
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.utils import node_to_metadata_dict


def _llama_index_payload(chunk: Chunk, content_hash: str | None) -> dict[str, Any]:
    """The payload as llama-index's QdrantVectorStore builds it, with batonflow's fields."""
    node = TextNode(
        id_=chunk.id,
        text=chunk.text,
        metadata=dict(chunk.metadata),
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=chunk.source)},
    )
    payload = node_to_metadata_dict(node, remove_text=False, flat_metadata=False)
    payload.pop("text", None)
    payload.update(source=chunk.source, chunk=chunk.index)
    if content_hash is not None:
        payload["content_hash"] = content_hash
    if chunk.source_chunks is not None:
        payload["source_chunks"] = chunk.source_chunks
    return payload


@pytest.mark.parametrize(
    ("chunk", "content_hash"),
    [
        pytest.param(Chunk("Change the oil.", "cars.md", 0), None, id="plain"),
        pytest.param(
            Chunk(
                'Ünïcödé "quotes" \\ and\nnewlines 汉字 \u2028',
                "docs/ü.md",
                3,
                metadata={"file_name": "ü.md", "n": 2, "f": 0.5, "ok": True, "none": None},
                content_hash="abc",
                source_chunks=7,
            ),
            "abc",
            id="unicode-and-scalars",
        ),
        pytest.param(
            Chunk(
                "t", "s", 1, metadata={"text": "a key named text", "nested": {"a": [1, {"b": 2}]}}
            ),
            "h",
            id="nested-and-text-key",
        ),
        pytest.param(Chunk("t", "", 0), None, id="empty-source"),
        pytest.param(
            Chunk("t", "s", 0, metadata={"when": datetime.date(2026, 12, 2), "pair": (1, 2)}),
            "h",
            id="not-json-metadata",
        ),
    ],
)
def test_the_payload_is_llama_index_s(chunk: Chunk, content_hash: str | None) -> None:
    """payload_of gives what llama-index's node_to_metadata_dict gives, byte for byte."""
    ours = payload_of(chunk, content_hash)
    theirs = _llama_index_payload(chunk, content_hash)
    assert ours == theirs
    assert list(ours) == list(theirs)
    assert json.loads(ours["_node_content"]) == json.loads(theirs["_node_content"])


def test_the_payload_does_not_share_the_chunk_s_metadata() -> None:
    """Changing a written payload leaves the chunk's metadata as it was."""
    chunk = Chunk("t", "s", 0, metadata={"tags": ["a"], "more": {"k": 1}})
    payload = payload_of(chunk)
    payload["tags"].append("b")
    payload["more"]["k"] = 2
    assert chunk.metadata == {"tags": ["a"], "more": {"k": 1}}


def test_the_first_write_of_chunks_imports_no_llama_index() -> None:
    """A process that writes chunks (and queries them) never imports llama-index."""
    code = textwrap.dedent(
        """
        import sys
        from batonflow.rag import QdrantStore
        from batonflow.rag.store import Chunk

        with QdrantStore(location=":memory:") as store:
            store.upsert([
                Chunk("Change the engine oil.", "cars.md", 0, metadata={"lang": "en"},
                      dense=[0.1, 0.2], content_hash="h", source_chunks=1),
            ])
            assert [h.source for h in store.query("engine oil")] == ["cars.md"]
        # (the bare "llama_index" namespace package, empty, is imported by the check that
        # the extra is installed)
        loaded = sorted(m for m in sys.modules if m.startswith("llama_index."))
        print(loaded)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
