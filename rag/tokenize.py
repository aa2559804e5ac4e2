"""Tokenizers for BM25: text → the terms its sparse vector is built from.

The default, :class:`MultilingualTokenizer`, handles any language without a model:

* **CJK** (Chinese, Japanese kana, Korean Hangul) has no spaces between words, so each run of
  CJK characters becomes its overlapping character **bigrams**, as Lucene's ``CJKAnalyzer``
  does (``"天空是蓝色"`` → ``天空 空是 是蓝 蓝色``; a lone character stays a unigram). A query's
  bigrams then match a document's wherever the same two characters follow each other, which
  finds words of any length without a dictionary.
* **Other scripts** are split into unicode words, lowercased, stopwords dropped, and stemmed
  with PyStemmer (Snowball): Latin-script words with the ``language`` given (English by
  default), and words in a script only one Snowball language of PyStemmer writes (Cyrillic:
  Russian, Greek, Arabic, Devanagari: Hindi, Tamil, Armenian) with that language's stemmer.
* Text is NFKC-normalised first, so full-width ``ＡＢＣ１２３`` matches ``abc123`` (Lucene's
  ``CJKWidthFilter`` does the same).

Any callable ``text -> list[str]`` can replace it: ``BM25SparseEncoder(tokenizer=...)``
(e.g. a jieba word segmenter for Chinese). Documents and queries must use the same one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping

import Stemmer

#: A tokenizer: text in, the terms of its sparse vector out (in order, repeats kept).
Tokenizer = Callable[[str], list[str]]

# Han (with extensions A-B and compatibility ideographs), kana, Hangul syllables and jamo.
_CJK = (
    "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002a6df"
)
_TOKEN = re.compile(f"([{_CJK}]+)|([^\\W{_CJK}]+)")
_ASCII_WORD = re.compile(r"\w+")

#: Scripts written by a single Snowball language of PyStemmer: (first, last code point, language).
SCRIPT_LANGUAGES: tuple[tuple[int, int, str], ...] = (
    (0x0370, 0x03FF, "greek"),
    (0x0400, 0x04FF, "russian"),
    (0x0530, 0x058F, "armenian"),
    (0x0600, 0x06FF, "arabic"),
    (0x0900, 0x097F, "hindi"),
    (0x0B80, 0x0BFF, "tamil"),
)

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


def cjk_bigrams(run: str) -> list[str]:
    """The overlapping character bigrams of a run of CJK characters (a lone one: itself)."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


class MultilingualTokenizer:
    """CJK bigrams plus Snowball stemming per script (see the module docs).

    Args:
        language: the Snowball language for Latin-script words (``Stemmer.algorithms()`` lists
            them), or ``None`` to not stem them.
        stopwords: words to drop (lowercase). Defaults to :data:`ENGLISH_STOPWORDS` for English
            and to none for other languages.
        script_languages: stem words of other scripts too (``True``: with
            :data:`SCRIPT_LANGUAGES`), or a mapping ``{(first, last): language}`` of your own,
            or ``False`` to leave them unstemmed.

    Raises:
        ValueError: an unknown stemmer language.
    """

    def __init__(
        self,
        language: str | None = "english",
        *,
        stopwords: Iterable[str] | None = None,
        script_languages: bool | Mapping[tuple[int, int], str] = True,
    ) -> None:
        known = Stemmer.algorithms()
        if script_languages is True:
            scripts = [(lo, hi, lang) for lo, hi, lang in SCRIPT_LANGUAGES]
        elif script_languages:
            scripts = [(lo, hi, lang) for (lo, hi), lang in script_languages.items()]
        else:
            scripts = []
        for name in [language, *(lang for _, _, lang in scripts)]:
            if name is not None and name not in known:
                raise ValueError(
                    f"Unknown stemmer language {name!r}; pass one of {', '.join(known)}, or "
                    "language=None to not stem."
                )
        self.language = language
        if stopwords is None:
            stopwords = ENGLISH_STOPWORDS if language in ("english", "porter") else ()
        self.stopwords = frozenset(word.lower() for word in stopwords)
        self._latin = Stemmer.Stemmer(language) if language is not None else None
        self._scripts = [(lo, hi, Stemmer.Stemmer(lang)) for lo, hi, lang in scripts]

    def _stemmer_for(self, word: str) -> Stemmer.Stemmer | None:
        code = ord(word[0])
        if code < 0x0370:  # Latin (and digits)
            return self._latin
        for lo, hi, stemmer in self._scripts:
            if lo <= code <= hi:
                return stemmer
        return None  # a script no configured stemmer writes: the word as it is

    def ascii_term(self, word: str) -> str | None:
        """The term of one lowercase ASCII word of a text (``None``: a stopword, dropped)."""
        if word in self.stopwords:
            return None
        return self._latin.stemWord(word) if self._latin is not None else word

    def __call__(self, text: str) -> list[str]:
        """The terms of ``text``, in order (see the module docs)."""
        if text.isascii():  # the common case: plain words, stemmed in one call
            words = [w for w in _ASCII_WORD.findall(text.lower()) if w not in self.stopwords]
            return list(self._latin.stemWords(words)) if self._latin is not None else words
        terms: list[str] = []
        word_at: list[int] = []
        for cjk, word in _TOKEN.findall(unicodedata.normalize("NFKC", text).lower()):
            if cjk:
                terms.extend(cjk_bigrams(cjk))
            elif word not in self.stopwords:
                word_at.append(len(terms))
                terms.append(word)
        for i in word_at:
            stemmer = self._stemmer_for(terms[i])
            if stemmer is not None:
                terms[i] = stemmer.stemWord(terms[i])
        return terms


__all__ = [
    "ENGLISH_STOPWORDS",
    "SCRIPT_LANGUAGES",
    "MultilingualTokenizer",
    "Tokenizer",
    "cjk_bigrams",
]
