"""BM25 sparse encoding: tokenising, stemming, stopwords, saturation, stable ids."""

from __future__ import annotations

import subprocess
import sys

import pytest
from batonflow.rag.sparse import BM25SparseEncoder, term_id


def test_tokenize_lowercases_stems_and_drops_stopwords() -> None:
    """Unicode words are lowercased, stopwords dropped and the rest stemmed."""
    enc = BM25SparseEncoder()
    assert enc.tokenize("The Cars were RUNNING over the Brücke!") == ["car", "run", "brücke"]


def test_stemming_makes_word_forms_match() -> None:
    """A query word matches other forms of it (maintained / maintaining)."""
    enc = BM25SparseEncoder()
    doc = enc.encode_document("The engine is maintained yearly.")
    query = enc.encode_query("maintaining engines")
    assert set(query.indices) <= set(doc.indices)


def test_language_is_configurable() -> None:
    """Another Snowball language stems its own words and has no English stopwords."""
    enc = BM25SparseEncoder("german")
    assert enc.tokenize("die Häuser") == ["die", "haus"]
    assert BM25SparseEncoder(None).tokenize("Running dogs") == ["running", "dogs"]


def test_unknown_language_is_a_clear_error() -> None:
    """An unknown stemmer language names the choices."""
    with pytest.raises(ValueError, match="Unknown stemmer language 'klingon'.*language=None"):
        BM25SparseEncoder("klingon")


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"k1": -1}, id="k1"),
        pytest.param({"b": 2}, id="b"),
        pytest.param({"avg_len": 0}, id="avg_len"),
    ],
)
def test_bad_bm25_parameters_are_rejected(kwargs: dict) -> None:
    """Out-of-range k1, b or avg_len are refused with the valid ranges."""
    with pytest.raises(ValueError, match="use k1 >= 0, 0 <= b <= 1 and avg_len > 0"):
        BM25SparseEncoder(**kwargs)


def test_term_frequency_saturates() -> None:
    """Repeating a term raises its weight less and less, never past k1 + 1."""
    enc = BM25SparseEncoder(b=0.0)
    weights = [enc.encode_document(" ".join(["qdrant"] * n)).values[0] for n in (1, 2, 32, 64)]
    assert weights == sorted(weights)
    assert weights[1] - weights[0] > weights[3] - weights[2] > 0
    assert weights[-1] < enc.k1 + 1


def test_longer_documents_weigh_a_term_less() -> None:
    """Length normalisation: one mention in a long chunk counts less than in a short one."""
    enc = BM25SparseEncoder(avg_len=10)
    short = enc.encode_document("qdrant stores vectors")
    long = enc.encode_document("qdrant " + " ".join(f"filler{i}" for i in range(40)))
    qid = term_id("qdrant")
    assert short.values[short.indices.index(qid)] > long.values[long.indices.index(qid)]


def test_query_vector_is_term_presence() -> None:
    """A query vector has weight 1 per distinct term, sorted unique indices."""
    q = BM25SparseEncoder().encode_query("vector vectors Vector database")
    assert q.values == [1.0, 1.0]
    assert q.indices == sorted({term_id("vector"), term_id("databas")})


def test_only_stopwords_give_an_empty_vector() -> None:
    """A text of stopwords alone encodes to nothing."""
    enc = BM25SparseEncoder()
    assert enc.encode_query("what is the").indices == []
    assert enc.encode_document("").values == []


def test_term_ids_are_stable_across_processes() -> None:
    """Term ids do not depend on Python's salted hash(): a new process gets the same ids."""
    code = "from batonflow.rag.sparse import term_id; print(term_id('qdrant'), term_id('näh'))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123"},
    ).stdout.split()
    assert [int(x) for x in out] == [term_id("qdrant"), term_id("näh")]
    assert all(0 <= int(x) < 2**32 for x in out)
