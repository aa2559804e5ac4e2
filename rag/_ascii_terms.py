"""The default tokenizer's ASCII case, counted as term ids without building the terms.

:class:`~batonflow.rag.tokenize.MultilingualTokenizer` gives an ASCII text's terms as: the
lowercased ``\\w+`` words, stopwords dropped, each stemmed; the encoder then hashes each term
(:func:`~batonflow.rag.sparse.term_id`) and counts the ids. A word's id depends on the word
alone, so :class:`AsciiTermIds` keeps ``word -> id`` (``-1`` for a stopword) and counts a text
in three C passes: one ``bytes.translate`` (lowercase, and every non-word byte a space), a
``split`` and a count of the looked-up ids. The ids, counts and lengths are the ones the
tokenizer and the encoder give (``tests/rag/test_encoding_fast_paths.py`` pins them); it is about five
times faster, which matters because every stored chunk is encoded.
"""

from __future__ import annotations

import zlib
from _collections import _count_elements  # type: ignore[import-not-found]  # Counter's C loop

from .tokenize import MultilingualTokenizer

#: Lowercases ASCII letters and turns every byte that ``\w`` does not match into a space.
_WORDS = bytes(
    c + 32 if 65 <= c <= 90 else c if (48 <= c <= 57 or 97 <= c <= 122 or c == 95) else 32
    for c in range(256)
)
_STOPWORD = -1
#: Words kept before the table starts again (about 100 bytes each): a corpus's vocabulary
#: repeats, so the common words stay cached and memory stays bounded.
MAX_WORDS = 1 << 16


class AsciiTermIds:
    """Term ids and counts of ASCII texts as ``tokenizer`` and ``term_id`` would give them."""

    def __init__(self, tokenizer: MultilingualTokenizer) -> None:
        self.tokenizer = tokenizer
        self._stopwords = tokenizer.stopwords
        self._ids: dict[bytes, int] = {}

    def count(self, text: str) -> tuple[dict[int, int], int] | None:
        """``{term id: count}`` and the number of terms of an ASCII ``text``.

        ``None`` when the tokenizer's stopwords were replaced since (the caller then uses the
        tokenizer itself).
        """
        if self.tokenizer.stopwords is not self._stopwords:
            return None
        words = text.encode("ascii").translate(_WORDS).split()
        ids = self._ids
        counts: dict[int, int] = {}
        _count_elements(counts, map(ids.get, words))
        if None in counts:  # words not seen yet: learn them, then count again
            ids = self._learn(words)
            counts = {}
            _count_elements(counts, map(ids.get, words))
        return counts, len(words) - counts.pop(_STOPWORD, 0)

    def _learn(self, words: list[bytes]) -> dict[bytes, int]:
        """The table, with the words of a text it lacked (started again when full)."""
        ids = self._ids
        missing = [w for w in words if w not in ids]
        if len(ids) + len(missing) > MAX_WORDS:
            ids = self._ids = {}
            missing = words
        term = self.tokenizer.ascii_term
        for word in missing:
            stem = term(word.decode("ascii"))
            ids[word] = _STOPWORD if stem is None else zlib.crc32(stem.encode("utf-8"))
        return ids


__all__ = ["MAX_WORDS", "AsciiTermIds"]
