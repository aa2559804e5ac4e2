"""``batonflow._request_deltas``: a journaled LLM call's messages stored as what is new since an
earlier call, and rebuilt whole for the journal's readers."""

from __future__ import annotations

from typing import Any

import pytest
from batonflow import _request_deltas as deltas
from batonflow.testing._export import cassette_from_journal
from batonflow.testing.errors import CassetteError


def _msg(i: int) -> dict[str, str]:
    return {"role": "user", "content": f"message {i}"}


def _call(number: int, messages: list[Any], bases: list[deltas.Base]) -> dict[str, Any]:
    """One journaled LLM call as the journal's readers list it, compacted against ``bases``."""
    value = {
        "response": {"message": {"role": "assistant", "content": "ok"}},
        "cassette": [{"kind": "llm", "request": {"llm": "X", "messages": messages}}],
    }
    compact = deltas.compact_value(value, bases)
    bases.append((compact[deltas.REF_KEY], 0, messages))
    return {"step": "s", "execution": 0, "call": number, "value": compact, "created_at": number}


def _whole(calls: list[dict[str, Any]]) -> list[Any]:
    return [c["value"]["cassette"][0]["request"]["messages"] for c in deltas.expand(calls)]


def test_a_window_of_the_conversation_is_two_slices_of_the_earlier_call() -> None:
    """A system prompt, then the conversation without its oldest messages: two slices."""
    earlier = [_msg(i) for i in range(10)]
    later = [earlier[0], *earlier[4:], _msg(10), _msg(11)]
    bases: list[deltas.Base] = []
    calls = [_call(0, earlier, bases), _call(1, later, bases)]
    stored = calls[1]["value"]["cassette"][0]["request"]["messages"]
    assert stored["runs"] == [[0, 1], [4, 10]] and stored["new"] == [_msg(10), _msg(11)]
    assert _whole(calls) == [earlier, later]


def test_the_base_covering_most_messages_is_chosen() -> None:
    """Two agents taking turns: each call refers to its own agent's previous call."""
    a, b = [_msg(0), _msg(1)], [_msg(100), _msg(101)]
    bases: list[deltas.Base] = []
    calls = [_call(0, a, bases), _call(1, b, bases), _call(2, [*a, _msg(2)], bases)]
    stored = calls[2]["value"]["cassette"][0]["request"]["messages"]
    assert stored["base"] == [calls[0]["value"]["ref"], 0] and stored["new"] == [_msg(2)]
    assert _whole(calls)[2] == [*a, _msg(2)]


def test_messages_sharing_nothing_with_earlier_calls_are_kept_whole() -> None:
    """No base covers a message: the list is stored as it is."""
    bases: list[deltas.Base] = []
    calls = [_call(0, [_msg(0)], bases), _call(1, [_msg(1)], bases)]
    assert calls[1]["value"]["cassette"][0]["request"]["messages"] == [_msg(1)]


def test_a_chain_of_thousands_of_calls_is_rebuilt() -> None:
    """Each call refers to the one before: rebuilding is a loop, not a recursion."""
    bases: list[deltas.Base] = []
    messages: list[Any] = []
    calls = []
    for i in range(3000):
        messages = [*messages, _msg(i)]
        calls.append(_call(i, messages, bases[-1:]))
    assert _whole(calls)[-1] == [_msg(i) for i in range(3000)]


def test_values_without_a_ref_are_listed_as_they_are() -> None:
    """A step's own journaled values and calls of the old format are not touched."""
    calls = [
        {"call": 0, "value": 12},
        {"call": 1, "value": {"response": {}, "cassette": [{"request": {"messages": []}}]}},
    ]
    assert deltas.expand(calls) == calls


def test_a_call_whose_base_is_missing_stays_compact_and_does_not_export() -> None:
    """The listing shows what is stored; the export names the call and what to do."""
    bases: list[deltas.Base] = []
    first, second = _call(0, [_msg(0)], bases), _call(1, [_msg(0), _msg(1)], bases)
    assert deltas.is_compact(deltas.expand([second])[0]["value"]["cassette"][0])
    with pytest.raises(CassetteError, match=r"Run 'r1': journaled call #1 of step 's' keeps its"):
        cassette_from_journal("r1", [second])
    assert cassette_from_journal("r1", [first, second])[1]["request"]["messages"] == [
        _msg(0),
        _msg(1),
    ]


def test_a_cycle_of_references_is_left_compact() -> None:
    """Calls that refer to each other (a corrupted journal) do not loop."""
    bases: list[deltas.Base] = []
    a, b = _call(0, [_msg(0)], bases), _call(1, [_msg(0), _msg(1)], bases)
    a["value"]["cassette"][0]["request"]["messages"] = {
        "base": [b["value"]["ref"], 0],
        "runs": [[0, 1]],
        "new": [],
    }
    listed = deltas.expand([a, b])
    assert all(deltas.is_compact(c["value"]["cassette"][0]) for c in listed)
