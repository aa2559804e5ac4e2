"""llama-index's ``SentenceSplitter``, run with its short pieces' token counts remembered.

Splitting is most of an ingestion's time: ``SentenceSplitter`` cuts a text down to sentences
and words and counts the tokens of every piece with tiktoken, one call per piece (about 44
calls a 256-token chunk), and the same words come back in every chunk. :func:`for_splitting`
gives the transformations to split with: each plain ``SentenceSplitter`` replaced by a copy of
itself (same settings, taken anew on every call) whose token count of a piece of up to
:data:`SHORT` characters is looked up in a table kept per tokenizer. A piece's count depends on
the piece and the tokenizer alone, so the chunks are the ones the splitter gives
(``tests/rag/test_splitting.py`` compares them); splitting takes about a third less time.
The user's splitter is left as it is; other transformations (and subclasses) run as given.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.node_parser import SentenceSplitter

#: Pieces up to this many characters (words, short phrases) have their counts remembered.
SHORT = 64
#: Counts kept per tokenizer before the table starts again (about 120 bytes each).
MAX_COUNTS = 1 << 15


class TokenCounts(dict[str, int]):
    """``counts[piece]``: how many tokens ``tokenizer`` gives ``piece`` (short ones kept)."""

    def __init__(self, tokenizer: Callable[[str], Sequence[Any]]) -> None:
        super().__init__()
        self.tokenizer = tokenizer

    def __missing__(self, piece: str) -> int:
        count = len(self.tokenizer(piece))
        if len(piece) <= SHORT:
            if len(self) >= MAX_COUNTS:
                self.clear()
            self[piece] = count
        return count


_COUNTS: weakref.WeakKeyDictionary[Any, TokenCounts] = weakref.WeakKeyDictionary()


def _counts_of(tokenizer: Callable[[str], Sequence[Any]]) -> TokenCounts:
    try:
        counts = _COUNTS.get(tokenizer)
        if counts is None:
            counts = _COUNTS[tokenizer] = TokenCounts(tokenizer)
    except TypeError:  # a tokenizer that cannot be weakly referenced: a table for this call
        counts = TokenCounts(tokenizer)
    return counts


def for_splitting(transformations: Sequence[Any]) -> list[Any]:
    """``transformations`` with each ``SentenceSplitter`` (the class itself, not a subclass)
    a copy counting tokens through its tokenizer's :class:`TokenCounts`."""
    out = []
    for transformation in transformations:
        if type(transformation) is SentenceSplitter:
            copy = transformation.model_copy()
            counts = _counts_of(transformation._tokenizer)
            # The copy's own _token_size (an instance attribute: pydantic's setattr refuses a
            # name that is not a field); the copy is only run, never dumped or compared.
            object.__setattr__(copy, "_token_size", counts.__getitem__)
            transformation = copy
        out.append(transformation)
    return out


__all__ = ["MAX_COUNTS", "SHORT", "TokenCounts", "for_splitting"]
