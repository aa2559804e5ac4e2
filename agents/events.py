"""The events of the agent flows.

Two kinds live here:

* **Stream events**, written with ``ctx.write_event_to_stream`` so that callers can follow a run
  (``async for ev in handler.stream_events()``): :class:`AgentInput`, :class:`AgentStream`,
  :class:`ToolCall`, :class:`ToolCallResult`, :class:`AgentOutput`.
* **Flow events**, passed between the steps of the agents: :class:`PrepareEvent` (build the
  next prompt), :class:`LLMInputEvent` (call the LLM), :class:`RunToolEvent` (one per tool
  call, run concurrently) and :class:`ToolResultEvent` (joined with ``collect_events``). A
  subclass that overrides a step works with these.

All fields are plain data (str, dict, list), so the events serialize to JSON as they are. Field
names follow LlamaIndex's agent events (``current_agent_name``, ``tool_kwargs``, ...), so code
that reads them ports unchanged.
"""

from __future__ import annotations

from typing import Annotated, Any

from batonflow.core import Event, StartEvent
from llama_index.core.base.llms.types import ChatMessage
from pydantic import Field, WithJsonSchema


class AgentInput(Event):
    """The user's message an agent run starts from.

    Attributes:
        input: The user's message.
        current_agent_name: The agent's name (``name=`` of the agent).
    """

    input: str
    current_agent_name: str = "agent"


_MESSAGE_SCHEMA = WithJsonSchema(
    {
        "anyOf": [
            {"type": "string"},
            {"type": "object", "description": "a ChatMessage: {'role': ..., 'content': ...}"},
            {"type": "null"},
        ],
        "default": None,
    }
)


class AgentStart(StartEvent):
    """The start of an agent run (``agent.run(input="...")``).

    Attributes:
        input: The user's message (text or a ``ChatMessage``).
        user_msg: Another name for ``input`` (LlamaIndex's), used when ``input`` is not given.
        chat_history: The conversation so far (``ChatMessage`` objects or role/content dicts);
            replaces what the agent remembers.
        max_iterations: This run's bound on LLM calls, instead of the agent's.
    """

    input: Annotated[str | ChatMessage | None, _MESSAGE_SCHEMA] = None
    user_msg: Annotated[str | ChatMessage | None, _MESSAGE_SCHEMA] = None
    chat_history: Annotated[
        list[Any] | None,
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "array", "items": {"type": "object"}},
                    {"type": "null"},
                ],
                "default": None,
                "description": "messages as {'role': ..., 'content': ...}",
            }
        ),
    ] = None
    max_iterations: int | None = Field(None, description="this run's bound on LLM calls")


class AgentStream(Event):
    """A piece of the LLM's answer as it streams in.

    Attributes:
        delta: The new text.
        response: All the text of this LLM turn so far.
        current_agent_name: The agent's name.
    """

    delta: str
    response: str = ""
    current_agent_name: str = "agent"


class ToolCall(Event):
    """The LLM asked for a tool call; written before the tool runs.

    Attributes:
        tool_name: The tool's name.
        tool_kwargs: The arguments the LLM gave.
        tool_id: The call's id.
    """

    tool_name: str
    tool_kwargs: dict[str, Any] = Field(default_factory=dict)
    tool_id: str = ""


class ToolCallResult(Event):
    """A tool call finished; written after the tool ran (or failed).

    Attributes:
        tool_name: The tool's name.
        tool_kwargs: The arguments it was called with.
        tool_id: The call's id.
        tool_output: The output as text, or the error the LLM is shown.
        is_error: Whether the call failed.
    """

    tool_name: str
    tool_kwargs: dict[str, Any] = Field(default_factory=dict)
    tool_id: str = ""
    tool_output: str = ""
    is_error: bool = False


class AgentOutput(Event):
    """One LLM turn finished.

    Attributes:
        response: The text of the turn (the final answer when ``is_final``).
        tool_calls: The tool calls the LLM asked for in this turn.
        is_final: Whether this turn ends the run with an answer.
        current_agent_name: The agent's name.
    """

    response: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    is_final: bool = False
    current_agent_name: str = "agent"


class PrepareEvent(Event):
    """Flow event: build the next prompt (after the user's input or after tool results)."""


class LLMInputEvent(Event):
    """Flow event: the messages for the next LLM call, as dicts (see :mod:`.memory`).

    Attributes:
        messages: The system message, the conversation and this run's work so far.
    """

    messages: list[dict[str, Any]] = Field(default_factory=list)


class RunToolEvent(Event):
    """Flow event: run one tool call (the agents send one per call, so they run concurrently).

    Attributes:
        tool_name: The tool to run.
        tool_kwargs: Its arguments.
        tool_id: The call's id.
        index: The call's position in its LLM turn (results are put back in this order).
    """

    tool_name: str
    tool_kwargs: dict[str, Any] = Field(default_factory=dict)
    tool_id: str = ""
    index: int = 0


class ToolResultEvent(Event):
    """Flow event: the outcome of one :class:`RunToolEvent`.

    Attributes:
        tool_name: The tool that ran.
        tool_kwargs: Its arguments.
        tool_id: The call's id.
        index: The call's position in its LLM turn.
        output: The output as text, or the error text.
        is_error: Whether the call failed.
    """

    tool_name: str
    tool_kwargs: dict[str, Any] = Field(default_factory=dict)
    tool_id: str = ""
    index: int = 0
    output: str = ""
    is_error: bool = False


__all__ = [
    "AgentInput",
    "AgentOutput",
    "AgentStart",
    "AgentStream",
    "LLMInputEvent",
    "PrepareEvent",
    "RunToolEvent",
    "ToolCall",
    "ToolCallResult",
    "ToolResultEvent",
]
