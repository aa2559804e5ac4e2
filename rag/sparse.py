"""BM25-style sparse vectors, computed locally with no model download.

The embedded default retrieval of ``batonflow.rag``. A text becomes a sparse vector in two
moves:

1. **tokenise** (:mod:`batonflow.rag.tokenize`, pluggable): by default unicode words,
   lowercased, English stopwords dropped, stemmed with PyStemmer (Snowball), and CJK text as
   overlapping character bigrams;
2. **hash** each term to a stable 32-bit term id (CRC-32 of its UTF-8 bytes; never Python's
   salted ``hash()``, so ids agree across processes and machines).

A *document* vector holds, per term, the BM25 term-frequency part::

    tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avg_len))

Qdrant multiplies the query side by the term's IDF (the collection's sparse vector is created
with ``Modifier.IDF``, so IDF is always current for the whole collection). A *query* vector
is term presence (1.0 per distinct term), so the dot product Qdrant computes is the BM25 score.

Length normalisation needs an average document length. :class:`~batonflow.rag.QdrantStore`
gives the encoder its collection's real mean (in tokens after stopword removal): each point
records its length (``bm25_len``) and the mean it was encoded with (``bm25_avg``), the store
encodes a batch with the mean *including* that batch, and when ingestion or deletion moves the
mean more than 5% away from the one a point was encoded with, it re-encodes that point's
vector (see ``QdrantStore.mean_length``). ``avg_len`` here is only the fallback when the
encoder is used on its own.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from ._ascii_terms import AsciiTermIds
from .tokenize import ENGLISH_STOPWORDS, MultilingualTokenizer, Tokenizer


@dataclass(frozen=True, slots=True)
class SparseVector:
    """A sparse vector: parallel lists of term ids (sorted, unique) and their weights."""

    indices: list[int]
    values: list[float]


def term_id(stem: str) -> int:
    """The stable 32-bit id of a stem (CRC-32 of its UTF-8 bytes)."""
    return zlib.crc32(stem.encode("utf-8"))


class BM25SparseEncoder:
    """Turn texts into BM25-style sparse vectors for Qdrant (``Modifier.IDF`` adds the IDF).

    Args:
        language: Snowball stemmer language of Latin-script words (``Stemmer.algorithms()``
            lists them), or ``None`` to not stem them.
        tokenizer: a callable ``text -> list[str]`` to use instead of the default
            :class:`~batonflow.rag.tokenize.MultilingualTokenizer` (then ``language`` and
            ``stopwords`` are not used).
        stopwords: words to drop (lowercase). Defaults to :data:`ENGLISH_STOPWORDS` for English
            and to none for other languages.
        k1: term-frequency saturation; higher lets repeated terms count for more.
        b: length normalisation strength, from 0 (none) to 1 (full).
        avg_len: the average chunk length in tokens, after stopword removal, used when no
            other is given (a store passes its collection's real mean).

    Raises:
        ValueError: an unknown stemmer language or out-of-range parameter.
    """

    def __init__(
        self,
        language: str | None = "english",
        *,
        tokenizer: Tokenizer | None = None,
        stopwords: Iterable[str] | None = None,
        k1: float = 1.2,
        b: float = 0.75,
        avg_len: float = 256.0,
    ) -> None:
        if tokenizer is not None and not callable(tokenizer):
            raise ValueError(
                f"tokenizer= got {type(tokenizer).__name__}; pass a callable text -> list[str] "
                "(or leave it out for the multilingual default)."
            )
        if k1 < 0 or not 0 <= b <= 1 or avg_len <= 0:
            raise ValueError(
                f"BM25 parameters out of range (k1={k1}, b={b}, avg_len={avg_len}); "
                "use k1 >= 0, 0 <= b <= 1 and avg_len > 0."
            )
        self.language = language
        self.k1 = k1
        self.b = b
        self.avg_len = avg_len
        self.tokenizer: Tokenizer = tokenizer or MultilingualTokenizer(
            language, stopwords=stopwords
        )
        self._ascii = (
            AsciiTermIds(self.tokenizer)
            if type(self.tokenizer) is MultilingualTokenizer
            else None  # a tokenizer of the caller's (or a subclass): used as it is
        )

    def tokenize(self, text: str) -> list[str]:
        """The terms of ``text``, in order (stems, CJK bigrams), stopwords removed."""
        return self.tokenizer(text)

    def count_terms(self, text: str) -> tuple[dict[int, int], int]:
        """``{term id: count}`` of ``text``'s terms, and how many terms it has (its length).

        What :meth:`encode_document` weighs; the default tokenizer's ASCII texts are counted
        without building their terms (:mod:`batonflow.rag._ascii_terms`), with the same result.
        """
        fast = self._ascii
        if fast is not None and fast.tokenizer is self.tokenizer and text.isascii():
            counted = fast.count(text)
            if counted is not None:
                return counted
        stems = self.tokenize(text)
        # Ids counted (not stems): two stems colliding on an id add up.
        return Counter(map(_cached_term_id, stems)), len(stems)

    def encode_document(self, text: str, avg_len: float | None = None) -> SparseVector:
        """The BM25 term-frequency vector of one document (chunk)."""
        return self.weigh(*self.count_terms(text), avg_len)

    def encode_terms(self, stems: list[str], avg_len: float | None = None) -> SparseVector:
        """The BM25 term-frequency vector of a tokenised document (``avg_len``: the mean)."""
        return self.weigh(Counter(map(_cached_term_id, stems)), len(stems), avg_len)

    def weigh(
        self, counts: Mapping[int, int], length: int, avg_len: float | None = None
    ) -> SparseVector:
        """The BM25 term-frequency vector of a document of ``length`` terms counted as
        ``counts`` (:meth:`count_terms`), normalised by the mean length ``avg_len``."""
        if not counts:
            return SparseVector([], [])
        mean = avg_len if avg_len is not None and avg_len > 0 else self.avg_len
        norm = self.k1 * (1.0 - self.b + self.b * length / mean)
        k1_plus_1 = self.k1 + 1.0
        indices = sorted(counts)
        frequencies = list(map(counts.__getitem__, indices))
        # A chunk's counts take few values (mostly 1 to 3): each weight is computed once.
        weight = {n: n * k1_plus_1 / (n + norm) for n in set(frequencies)}
        return SparseVector(indices, list(map(weight.__getitem__, frequencies)))

    def encode_documents(
        self, texts: Iterable[str], avg_len: float | None = None
    ) -> list[SparseVector]:
        """:meth:`encode_document` for each text."""
        return [self.encode_document(text, avg_len) for text in texts]

    def encode_query(self, text: str) -> SparseVector:
        """The query vector: 1.0 for each distinct term (Qdrant weighs it by IDF)."""
        indices = sorted(self.count_terms(text)[0])
        return SparseVector(indices, [1.0] * len(indices))


# Stems repeat across chunks (a corpus has far fewer distinct stems than words).
_cached_term_id = lru_cache(maxsize=1 << 16)(term_id)


__all__ = ["ENGLISH_STOPWORDS", "BM25SparseEncoder", "SparseVector", "term_id"]
