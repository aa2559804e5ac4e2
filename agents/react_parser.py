"""Parse the text a ReAct LLM writes into a thought, tool actions, or a final answer.

The format (the ReAct prompt asks for it)::

    Thought: I need to add the numbers first.
    Action: add
    Action Input: {"a": 2, "b": 3}

Several ``Action`` / ``Action Input`` pairs may follow one thought; they run concurrently.
When done::

    Thought: I can answer now.
    Answer: 5

Lenient where it costs nothing: keywords are case-insensitive, ``Final Answer:`` is ``Answer:``
(also inside a Thought's line, when nothing else follows the Thought, as llama-index reads it),
the JSON may sit in a code fence or be a Python dict literal, text after the JSON is ignored,
and anything from a made-up ``Observation:`` on is dropped (the agent writes the real ones).
Text with none of the keywords is taken as a direct answer. Everything else that does not fit
raises :class:`ReActParseError`, whose message is written for the LLM to correct itself.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

_KEYWORD = re.compile(
    r"^[ \t>*_#]*(thought|action input|action|final answer|answer|observation)[ \t*_]*:",
    re.IGNORECASE | re.MULTILINE,
)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_INLINE_ANSWER = re.compile(r"(?:final )?answer:", re.IGNORECASE)

FORMAT_REMINDER = (
    "Reply in this format: 'Thought: <your reasoning>' and then either 'Action: <tool name>' "
    "followed by 'Action Input: <arguments as a JSON object>', or 'Answer: <your final answer>'."
)


class ReActParseError(ValueError):
    """The LLM's output does not follow the ReAct format; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class ReActAction:
    """One tool call the LLM asked for."""

    tool_name: str
    tool_kwargs: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ReActStep:
    """One parsed LLM turn: a thought, then either actions or an answer."""

    thought: str = ""
    actions: tuple[ReActAction, ...] = field(default_factory=tuple)
    answer: str | None = None


def parse_action_input(text: str) -> dict[str, Any]:
    """Parse an ``Action Input`` into keyword arguments.

    Raises:
        ReActParseError: the text is not a JSON object (nor a Python dict literal).
    """
    body = _FENCE.sub("", text.strip()).strip()
    start = body.find("{")
    if start == -1:
        raise ReActParseError(
            f"the Action Input {body[:200]!r} is not a JSON object; give the tool's arguments "
            'as a JSON object, e.g. {"a": 1}'
        )
    try:
        value, _ = json.JSONDecoder().raw_decode(body[start:])
    except json.JSONDecodeError:
        end = body.rfind("}")
        try:
            value = ast.literal_eval(body[start : end + 1])
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise ReActParseError(
                f"the Action Input {body[:200]!r} is not valid JSON; give the tool's arguments "
                'as a JSON object with double-quoted keys, e.g. {"a": 1}'
            ) from None
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ReActParseError(
            f"the Action Input {body[:200]!r} is not a JSON object with string keys; give the "
            'tool\'s arguments as a JSON object, e.g. {"a": 1}'
        )
    return value


def parse_react_output(text: str) -> ReActStep:
    """Parse one LLM turn.

    Args:
        text: What the LLM wrote.

    Returns:
        The thought and either the actions (several run concurrently) or the final answer.

    Raises:
        ReActParseError: the text has keywords but does not fit the format (an Action with no
            Action Input, arguments that are not a JSON object, a Thought with neither Action
            nor Answer, an empty output).
    """
    matches = list(_KEYWORD.finditer(text))
    if not matches:
        if not text.strip():
            raise ReActParseError("the output is empty")
        return ReActStep(answer=text.strip())

    segments: list[tuple[str, str]] = []
    for i, match in enumerate(matches):
        keyword = match.group(1).lower()
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        if keyword == "observation":
            break  # the LLM made up an observation; the agent supplies the real one
        keyword = "answer" if keyword == "final answer" else keyword
        if keyword == "answer":
            # The answer is the rest of the turn, even if it contains words like "Thought:".
            segments.append((keyword, text[match.end() :].strip()))
            break
        segments.append((keyword, text[match.end() : end].strip()))

    preamble = text[: matches[0].start()].strip()
    thoughts = [preamble] if preamble else []
    actions: list[ReActAction] = []
    pending: str | None = None  # an Action still waiting for its Action Input
    answer: str | None = None
    for keyword, content in segments:
        if keyword == "thought":
            thoughts.append(content)
        elif keyword == "action":
            if pending is not None:
                raise ReActParseError(f"the Action {pending!r} has no 'Action Input:' line")
            pending = content.splitlines()[0].strip().strip("`'\"") if content else ""
            if not pending:
                raise ReActParseError("an 'Action:' line names no tool")
        elif keyword == "action input":
            if pending is None:
                raise ReActParseError("an 'Action Input:' line follows no 'Action:' line")
            actions.append(ReActAction(pending, parse_action_input(content)))
            pending = None
        else:
            answer = content
    if pending is not None:
        raise ReActParseError(f"the Action {pending!r} has no 'Action Input:' line")
    thought = "\n".join(t for t in thoughts if t)
    if actions:
        return ReActStep(thought=thought, actions=tuple(actions))
    if answer is not None:
        return ReActStep(thought=thought, answer=answer)
    inline = _INLINE_ANSWER.search(thought)
    if inline is not None and thought[inline.end() :].strip():
        # "Answer:" inside the Thought's line, as llama-index's parser reads it too.
        return ReActStep(
            thought=thought[: inline.start()].strip(), answer=thought[inline.end() :].strip()
        )
    raise ReActParseError("the output has a Thought but neither an Action nor an Answer")


__all__ = [
    "FORMAT_REMINDER",
    "ReActAction",
    "ReActParseError",
    "ReActStep",
    "parse_action_input",
    "parse_react_output",
]
