"""The ReAct output parser: thoughts, actions, answers, and malformed output."""

from __future__ import annotations

import pytest
from batonflow.agents.react_parser import (
    ReActAction,
    ReActParseError,
    parse_action_input,
    parse_react_output,
)


@pytest.mark.parametrize(
    ("text", "thought", "actions"),
    [
        pytest.param(
            'Thought: add them\nAction: add\nAction Input: {"a": 2, "b": 3}',
            "add them",
            [ReActAction("add", {"a": 2, "b": 3})],
            id="one-action",
        ),
        pytest.param(
            'Thought: both\nAction: add\nAction Input: {"a": 1}\nAction: mul\nAction Input: {"b": 2}',
            "both",
            [ReActAction("add", {"a": 1}), ReActAction("mul", {"b": 2})],
            id="two-actions",
        ),
        pytest.param(
            'thought: x\naction: `add`\naction input: ```json\n{"a": 1}\n```',
            "x",
            [ReActAction("add", {"a": 1})],
            id="lowercase-backticks-fenced-json",
        ),
        pytest.param(
            "Thought: py\nAction: add\nAction Input: {'a': 1, 'b': None}",
            "py",
            [ReActAction("add", {"a": 1, "b": None})],
            id="python-dict-literal",
        ),
        pytest.param(
            'Thought: t\nAction: add\nAction Input: {"a": 1} because I must\n',
            "t",
            [ReActAction("add", {"a": 1})],
            id="trailing-text-after-json",
        ),
        pytest.param(
            'Thought: t\nAction: add\nAction Input: {"a": 1}\nObservation: 99\nAnswer: 99',
            "t",
            [ReActAction("add", {"a": 1})],
            id="made-up-observation-dropped",
        ),
    ],
)
def test_actions_are_parsed(text: str, thought: str, actions: list[ReActAction]) -> None:
    """Actions with their JSON arguments come out in order, with the thought."""
    step = parse_react_output(text)
    assert step.thought == thought
    assert list(step.actions) == actions
    assert step.answer is None


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        pytest.param("Thought: done\nAnswer: 42", "42", id="answer"),
        pytest.param("Thought: done\nFinal Answer: it is 42.", "it is 42.", id="final-answer"),
        pytest.param(
            "Thought: ok\nAnswer: line one\nThought: not a keyword here",
            "line one\nThought: not a keyword here",
            id="answer-takes-rest",
        ),
        pytest.param("Paris is the capital.", "Paris is the capital.", id="plain-text-is-answer"),
        # llama-index's own agent tests script this (a typo for "\nAnswer:"); its parser and
        # this one read the answer from inside the Thought's line.
        pytest.param(r"Thought: The result is 8\Answer: The sum is 8", "The sum is 8", id="inline"),
    ],
)
def test_answers_are_parsed(text: str, answer: str) -> None:
    """An Answer (or plain text with no keyword) is the final answer."""
    step = parse_react_output(text)
    assert step.answer == answer
    assert step.actions == ()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        pytest.param("", "empty", id="empty"),
        pytest.param(
            "Thought: hmm, not sure", "neither an Action nor an Answer", id="thought-only"
        ),
        pytest.param(
            "Thought: I will give the Answer:", "neither an Action nor", id="inline-empty"
        ),
        pytest.param("Thought: t\nAction: add", "has no 'Action Input:' line", id="no-input"),
        pytest.param(
            "Thought: t\nAction: add\nAction: mul\nAction Input: {}",
            "'add' has no 'Action Input",
            id="input-missing-between",
        ),
        pytest.param(
            "Thought: t\nAction Input: {}", "follows no 'Action:' line", id="input-without-action"
        ),
        pytest.param("Thought: t\nAction:\nAction Input: {}", "names no tool", id="empty-action"),
        pytest.param(
            "Thought: t\nAction: add\nAction Input: 5", "not a JSON object", id="not-object"
        ),
        pytest.param(
            'Thought: t\nAction: add\nAction Input: {"a": }', "not valid JSON", id="bad-json"
        ),
        pytest.param("Thought: t\nAction: add\nAction Input: {1: 2}", "string keys", id="int-keys"),
    ],
)
def test_malformed_output_raises_parse_error(text: str, match: str) -> None:
    """Output that does not fit the format raises ReActParseError saying what is wrong."""
    with pytest.raises(ReActParseError, match=match):
        parse_react_output(text)


def test_action_input_empty_object() -> None:
    """An empty JSON object means a call with no arguments."""
    assert parse_action_input("{}") == {}
