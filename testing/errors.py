"""The errors of :mod:`batonflow.testing`.

::

    CassetteError                 a cassette file is missing or is not a cassette
    └── CassetteMismatchError     the code sent a call other than the cassette holds
                                  (also an AssertionError: a replay that differs fails a test)
"""

from __future__ import annotations


class CassetteError(Exception):
    """A cassette cannot be used; the message says which file and what to do."""


class CassetteMismatchError(CassetteError, AssertionError):
    """A replayed run made an LLM or tool call the cassette does not hold; the message shows
    the two requests' differing fields (``messages[0].content: cassette ... now ...``)."""
