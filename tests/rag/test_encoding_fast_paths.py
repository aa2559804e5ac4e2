"""The write path's fast encodings give exactly what the plain ones give.

An ASCII text's BM25 counts come from a word -> term id table instead of the tokenizer's terms
(``batonflow.rag._ascii_terms``); a point id is spelled out instead of built as a ``UUID``.
Both are pinned here against the straightforward computation, so ranking and stored ids do
not move.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from collections import Counter

import pytest
from batonflow.rag import _ascii_terms
from batonflow.rag.chunks import point_id
from batonflow.rag.sparse import BM25SparseEncoder, SparseVector, term_id
from batonflow.rag.tokenize import MultilingualTokenizer

_WORDS = ["The", "engine", "OIL", "oil's", "running", "ran", "a", "of", "x_y", "42", "Über"]
_GLUE = [" ", "  ", "\n", "\t", ", ", ". ", "-", "'", "(", ")", "/", "\x1f", "_", "", "!?"]


def _texts(seed: int, n: int = 300) -> list[str]:
    """ASCII texts of words, stopwords, digits, underscores and every kind of separator."""
    rng = random.Random(seed)
    words = [w for w in _WORDS if w.isascii()] + [f"w{i}ing" for i in range(40)]
    return [
        "".join(rng.choice(words) + rng.choice(_GLUE) for _ in range(rng.randint(0, 40)))
        for _ in range(n)
    ] + ["", "...", "the of a", "UPPER lower MiXeD", "tab\tnew\nline\rcr\x0bvt\x0cff"]


def _reference(
    enc: BM25SparseEncoder, text: str, mean: float
) -> tuple[Counter[int], int, SparseVector]:
    """Counts, length and vector straight from the tokenizer's terms and the BM25 formula."""
    stems = enc.tokenize(text)
    counts = Counter(term_id(s) for s in stems)
    norm = enc.k1 * (1 - enc.b + enc.b * len(stems) / mean)
    indices = sorted(counts)
    values = [counts[i] * (enc.k1 + 1) / (counts[i] + norm) for i in indices]
    return counts, len(stems), SparseVector(indices, values)


@pytest.mark.parametrize(
    "encoder",
    [
        pytest.param(lambda: BM25SparseEncoder(), id="english"),
        pytest.param(lambda: BM25SparseEncoder("german"), id="german-no-stopwords"),
        pytest.param(lambda: BM25SparseEncoder(None), id="no-stemming"),
        pytest.param(
            lambda: BM25SparseEncoder(stopwords=["engine", "über", "w3ing"]), id="own-stopwords"
        ),
    ],
)
def test_ascii_counts_are_the_tokenizer_s(encoder) -> None:
    """count_terms and weigh of ASCII texts equal the tokenizer's terms counted and weighed."""
    enc = encoder()
    for round_ in range(2):  # the first round learns the words, the second reads the table
        for text in _texts(seed=round_):
            counts, length, vector = _reference(enc, text, 37.5)
            assert enc.count_terms(text) == (counts, length)
            assert enc.encode_document(text, 37.5) == vector
            assert enc.weigh(*enc.count_terms(text), 37.5) == vector
            assert enc.encode_query(text).indices == sorted(counts)


def test_the_word_table_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_WORDS distinct words the table starts again, and the counts stay right."""
    monkeypatch.setattr(_ascii_terms, "MAX_WORDS", 64)
    enc = BM25SparseEncoder()
    fast = enc._ascii
    assert fast is not None
    for i in range(100):
        text = " ".join(f"word{i}x{j}" for j in range(10)) + " shared words"
        counts, length, _ = _reference(enc, text, 10.0)
        assert enc.count_terms(text) == (counts, length)
        assert len(fast._ids) <= 64


def test_stopwords_changed_after_use_are_honoured() -> None:
    """Replacing the tokenizer's stopwords (or the tokenizer) takes effect on the next text."""
    enc = BM25SparseEncoder()
    assert enc.count_terms("engine oil")[1] == 2
    assert isinstance(enc.tokenizer, MultilingualTokenizer)
    enc.tokenizer.stopwords = frozenset({"engine"})
    assert enc.count_terms("engine oil") == ({term_id("oil"): 1}, 1)
    enc.tokenizer = lambda text: text.split()
    assert enc.count_terms("Engine oil")[0] == {term_id("Engine"): 1, term_id("oil"): 1}


def test_point_ids_are_uuid5_of_source_index_and_text_hash() -> None:
    """point_id is str(uuid5(namespace, 'source␟index␟sha256(text)')) for any input."""
    namespace = uuid.uuid5(uuid.NAMESPACE_URL, "https://batonflow.dev/rag/chunk")
    rng = random.Random(7)
    for i in range(3000):
        source = "".join(rng.choice("ab/ü汉 .\x1f") for _ in range(rng.randint(0, 12)))
        text = "".join(rng.choice("xyz é\n") for _ in range(rng.randint(0, 60)))
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        want = str(uuid.uuid5(namespace, f"{source}\x1f{i}\x1f{digest}"))
        assert point_id(source, i, text) == want
