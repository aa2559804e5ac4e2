"""Ingestion splits with llama-index's SentenceSplitter, its short pieces' token counts kept.

The chunks must be exactly the splitter's own; the user's splitter is left untouched.
"""

from __future__ import annotations

import random

import pytest
from batonflow.rag import _splitting
from batonflow.rag._splitting import for_splitting
from batonflow.rag.loading import split_documents
from llama_index.core import Document
from llama_index.core.ingestion import run_transformations
from llama_index.core.node_parser import SentenceSplitter, TokenTextSplitter
from llama_index.core.schema import MetadataMode


def _documents(seed: int) -> list[Document]:
    """Texts of sentences, paragraphs, CJK, very long words and punctuation, with metadata."""
    rng = random.Random(seed)
    words = ["engine", "oil", "change", "Qdrant", "vectors", "天空是蓝色", "naïve", "x" * 90]
    words += [f"w{i}" for i in range(200)]
    docs = []
    for i in range(12):
        paragraphs = [
            " ".join(rng.choice(words) + rng.choice(["", ",", ".", "!", ";"]) for _ in range(n))
            for n in (rng.randint(1, 120) for _ in range(rng.randint(1, 6)))
        ]
        meta = {"source": f"doc{i}"} if i % 2 else {"file_path": f"d/{i}.md", "tag": "x" * 40}
        docs.append(Document(text="\n\n".join(paragraphs), metadata=meta))
    return docs


@pytest.mark.parametrize(
    "splitter",
    [
        pytest.param(lambda: SentenceSplitter(chunk_size=256, chunk_overlap=20), id="256"),
        pytest.param(lambda: SentenceSplitter(chunk_size=64, chunk_overlap=10), id="64"),
        pytest.param(lambda: SentenceSplitter(chunk_size=128, chunk_overlap=0), id="no-overlap"),
    ],
)
def test_the_chunks_are_the_splitter_s(splitter) -> None:
    """split_documents gives the texts and embedding texts the plain splitter gives."""
    for seed in range(3):
        docs = _documents(seed)
        plain = run_transformations(docs, [splitter()])
        pending = split_documents(docs, splitter())
        assert [p.text for p in pending] == [n.get_content() for n in plain]
        assert [p.embed_text for p in pending] == [
            n.get_content(metadata_mode=MetadataMode.EMBED) for n in plain
        ]


def test_token_counts_of_words_are_remembered_across_calls() -> None:
    """A second split of the same words asks the tokenizer about few pieces (the long ones
    and the metadata, which the splitter counts itself)."""
    calls: list[str] = []

    def tokenizer(text: str) -> list[str]:
        calls.append(text)
        return text.split()

    splitter = SentenceSplitter(chunk_size=64, chunk_overlap=0, tokenizer=tokenizer)
    docs = [Document(text=" ".join(f"word{i % 50}" for i in range(400)), metadata={"s": "a"})]
    first = split_documents(docs, splitter)
    asked = len(calls)
    calls.clear()
    again = split_documents(docs, splitter)
    assert [p.text for p in again] == [p.text for p in first]
    assert len(calls) < asked / 5


def test_the_user_s_splitter_is_left_as_it_is() -> None:
    """The splitter given is not changed; subclasses and other parsers run as given."""
    splitter = SentenceSplitter(chunk_size=64, chunk_overlap=8)
    before = splitter.to_dict()
    (copy,) = for_splitting([splitter])
    assert copy is not splitter and "_token_size" not in vars(splitter)
    assert splitter.to_dict() == before == copy.to_dict()

    class Mine(SentenceSplitter):
        pass

    mine = Mine(chunk_size=64, chunk_overlap=8)
    token = TokenTextSplitter(chunk_size=64, chunk_overlap=8)
    assert for_splitting([mine, token]) == [mine, token]


def test_the_counts_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_COUNTS pieces the table starts again; the chunks stay the splitter's."""
    monkeypatch.setattr(_splitting, "MAX_COUNTS", 16)
    splitter = SentenceSplitter(chunk_size=64, chunk_overlap=5)
    docs = _documents(9)
    pending = split_documents(docs, splitter)
    assert [p.text for p in pending] == [
        n.get_content() for n in run_transformations(docs, [splitter])
    ]
    assert len(_splitting._counts_of(splitter._tokenizer)) <= 16
