"""BM25-style sparse vectors, computed locally with no model download.

The embedded default retrieval of ``batonflow.rag``. A text becomes a sparse vector in four
moves:

1. **tokenise**: unicode words (``\\w+``), lowercased;
2. **drop stopwords** (a built-in English list; pass your own for other languages);
3. **stem** with PyStemmer (Snowball; English by default, any of ``Stemmer.algorithms()``);
4. **hash** each stem to a stable 32-bit term id (CRC-32 of its UTF-8 bytes; never Python's
   salted ``hash()``, so ids agree across processes and machines).

A *document* vector holds, per term, the BM25 term-frequency part::

    tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avg_len))

Qdrant multiplies the query side by the term's IDF (the collection's sparse vector is created
with ``Modifier.IDF``, so IDF is always current for the whole collection). A *query* vector
is term presence (1.0 per distinct term), so the dot product Qdrant computes is the BM25 score.

Length normalisation needs an average document length. Chunks are encoded one at a time
(ingestion is incremental; a corpus-wide pass would force re-encoding everything whenever the
average moved), so ``avg_len`` is a fixed *estimate* in tokens after stopword removal. The
default, 256, fits chunks of a few hundred words (``SentenceSplitter``'s default 1024-token
chunks hold roughly that many content words); set it to your corpus's typical chunk length if
yours differ a lot. Its only effect is how much long chunks are penalised against short ones.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import Stemmer

_WORD = re.compile(r"\w+", re.UNICODE)

#: English stopwords: function words that carry no topic (kept short on purpose: words such as
#: "not" or "first" are left in because queries use them to mean something).
_ENGLISH_STOPWORDS_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself nor of off on once only or other ought our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve
"""
ENGLISH_STOPWORDS: frozenset[str] = frozenset(_ENGLISH_STOPWORDS_TEXT.split())


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
        language: Snowball stemmer language (``Stemmer.algorithms()`` lists them), or ``None``
            to not stem at all.
        stopwords: words to drop (lowercase). Defaults to :data:`ENGLISH_STOPWORDS` for English
            and to none for other languages.
        k1: term-frequency saturation; higher lets repeated terms count for more.
        b: length normalisation strength, from 0 (none) to 1 (full).
        avg_len: the estimated average chunk length in tokens, after stopword removal.

    Raises:
        ValueError: an unknown stemmer language or out-of-range parameter.
    """

    def __init__(
        self,
        language: str | None = "english",
        *,
        stopwords: Iterable[str] | None = None,
        k1: float = 1.2,
        b: float = 0.75,
        avg_len: float = 256.0,
    ) -> None:
        if language is not None and language not in Stemmer.algorithms():
            raise ValueError(
                f"Unknown stemmer language {language!r}; pass one of "
                f"{', '.join(Stemmer.algorithms())}, or language=None to not stem."
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
        if stopwords is None:
            stopwords = ENGLISH_STOPWORDS if language in ("english", "porter") else ()
        self.stopwords = frozenset(word.lower() for word in stopwords)
        self._stemmer = Stemmer.Stemmer(language) if language is not None else None

    def tokenize(self, text: str) -> list[str]:
        """The stems of ``text``, in order, stopwords removed."""
        words = [w for w in _WORD.findall(text.lower()) if w not in self.stopwords]
        if self._stemmer is None:
            return words
        return list(self._stemmer.stemWords(words))

    def encode_document(self, text: str) -> SparseVector:
        """The BM25 term-frequency vector of one document (chunk)."""
        stems = self.tokenize(text)
        if not stems:
            return SparseVector([], [])
        counts: dict[int, int] = {}
        for stem, n in Counter(stems).items():
            tid = _cached_term_id(stem)
            counts[tid] = counts.get(tid, 0) + n  # two stems colliding on an id add up
        norm = self.k1 * (1.0 - self.b + self.b * len(stems) / self.avg_len)
        k1_plus_1 = self.k1 + 1.0
        indices = sorted(counts)
        values = [counts[i] * k1_plus_1 / (counts[i] + norm) for i in indices]
        return SparseVector(indices, values)

    def encode_documents(self, texts: Iterable[str]) -> list[SparseVector]:
        """:meth:`encode_document` for each text."""
        return [self.encode_document(text) for text in texts]

    def encode_query(self, text: str) -> SparseVector:
        """The query vector: 1.0 for each distinct term (Qdrant weighs it by IDF)."""
        indices = sorted({_cached_term_id(stem) for stem in self.tokenize(text)})
        return SparseVector(indices, [1.0] * len(indices))


# Stems repeat across chunks (a corpus has far fewer distinct stems than words).
_cached_term_id = lru_cache(maxsize=1 << 16)(term_id)


__all__ = ["ENGLISH_STOPWORDS", "BM25SparseEncoder", "SparseVector", "term_id"]
