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

import json
from typing import Annotated, Any, TypeVar

from batonflow.core import Event, StartEvent
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.tools import ToolOutput, ToolSelection
from pydantic import (
    BaseModel,
    Field,
    WithJsonSchema,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from .errors import AgentInputError
from .results import PydanticConversionWarning, as_model

_E = TypeVar("_E", bound="AgentInput | AgentSetup")


class AgentInput(Event):
    """The messages of an agent's next LLM call; streamed before each call, by every agent.

    Attributes:
        input: The messages the agent is about to send (system prompt, conversation, the
            turn's tool exchange), as in llama-index.
        current_agent_name: The agent's name (``name=`` of the agent).
    """

    input: str | list[ChatMessage]
    current_agent_name: str = "agent"


def messages_event(cls: type[_E], messages: list[ChatMessage], agent_name: str) -> _E:
    """An :class:`AgentInput` or :class:`AgentSetup` over ``messages``, without revalidation.

    The messages are ``ChatMessage`` objects the agent built; validating the whole list again
    for every event (pydantic runs ChatMessage's validators per message) made each turn of an
    agent loop cost in proportion to the history, so a long run was quadratic. Built with
    ``model_construct``, an event costs the same at any history length.
    """
    return cls.model_construct(input=messages, current_agent_name=agent_name)


class AgentSetup(Event):
    """An :class:`~batonflow.agents.AgentWorkflow` agent's LLM input, system prompt included.

    Attributes:
        input: The messages of the next LLM call.
        current_agent_name: The agent that makes it.
    """

    input: list[ChatMessage]
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
        tool_choice: The tool choice of the run's first LLM call (function calling only).
        early_stopping_method: What happens at ``max_iterations``: ``"force"`` (default:
            fail with MaxIterationsError) or ``"generate"`` (one last LLM call answers).
        memory: A llama-index memory (``Memory``, ``ChatMemoryBuffer``) for this run.
        output_cls: A pydantic model for this run's structured output.
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
    tool_choice: str | None = Field(
        None, description="the first LLM call's tool choice: 'required', 'none', 'auto', a tool"
    )
    early_stopping_method: str | None = Field(
        None,
        description="at max_iterations: 'force' (fail, the default) or 'generate' (answer)",
    )
    # Python objects, for runs started in code (not part of the JSON schema, not serialized).
    memory: SkipJsonSchema[Any] = Field(default=None, exclude=True)
    output_cls: SkipJsonSchema[Any] = Field(default=None, exclude=True)


class AgentWorkflowStartEvent(StartEvent):
    """The start of an agent run: ``workflow.run(user_msg="...", ...)``.

    Attributes:
        user_msg: The user's message (text or a ``ChatMessage``); ``input=`` is accepted too.
        chat_history: Messages to start from (``ChatMessage`` or role/content dicts); they
            replace what the memory holds.
        memory: A llama-index memory (``Memory``, ``ChatMemoryBuffer``) for this run.
        max_iterations: The most LLM calls of this run (default 20).
        early_stopping_method: ``"force"`` (default: raise MaxIterationsError at the bound)
            or ``"generate"`` (one last LLM call, without tools, writes the answer).
        output_cls: A pydantic model for this run's structured output.
        tool_choice: The first LLM call's tool choice (``"required"``, ``"none"``,
            ``"auto"`` or a tool's name); later calls are free.
    """

    user_msg: str | ChatMessage | None = None
    chat_history: list[Any] | None = None
    # Python objects, for runs started in code (not part of the JSON schema, not serialized).
    memory: SkipJsonSchema[Any] = Field(default=None, exclude=True)
    max_iterations: int | None = None
    early_stopping_method: str | None = None
    output_cls: SkipJsonSchema[Any] = Field(default=None, exclude=True)
    tool_choice: str | None = None

    @field_validator("chat_history", mode="before")
    @classmethod
    def _history_messages(cls, value: Any) -> Any:
        # role/content dicts become ChatMessages on the event, as llama-index's does; anything
        # else is left for run() to refuse with its clear error.
        if isinstance(value, list):
            return [ChatMessage.model_validate(m) if isinstance(m, dict) else m for m in value]
        return value


def history_messages(value: Any, owner: str) -> list[ChatMessage]:
    """Read a ``chat_history=`` run argument: ChatMessages or role/content dicts.

    Raises:
        AgentInputError: the value is not a list of messages.
    """
    if not isinstance(value, list | tuple):
        raise AgentInputError(
            f"{owner}.run(chat_history=...) needs a list of ChatMessage (or dicts like "
            f"{{'role': 'user', 'content': '...'}}), got {type(value).__name__}."
        )
    out = []
    for item in value:
        if isinstance(item, ChatMessage):
            out.append(item)
        elif isinstance(item, dict):
            out.append(ChatMessage.model_validate(item))
        else:
            raise AgentInputError(
                f"{owner}.run(chat_history=...) holds {item!r:.60}; each message must be a "
                "ChatMessage or a dict like {'role': 'user', 'content': '...'}."
            )
    return out


class AgentStream(Event):
    """A piece of the LLM's answer as it streams in.

    Attributes:
        delta: The new text.
        response: All the text of this LLM turn so far.
        current_agent_name: The agent's name.
        tool_calls: The tool calls seen so far in this turn (native tool calling).
        raw: The provider's raw chunk (not serialized).
        thinking_delta: New reasoning text, for models that stream their thinking.
    """

    delta: str
    response: str = ""
    current_agent_name: str = "agent"
    tool_calls: list[ToolSelection] = Field(default_factory=list)
    raw: Any | None = Field(default=None, exclude=True)
    thinking_delta: str | None = None


class AgentStreamStructuredOutput(Event):
    """The structured output of a run, written once it is generated.

    Attributes:
        output: The structured response as a dict.
    """

    output: dict[str, Any]

    def get_pydantic_model(self, model: type[BaseModel]) -> BaseModel | None:
        """The output validated as ``model`` (``None``, with a warning, if it does not fit)."""
        return as_model(self.output, model)

    def __str__(self) -> str:
        return json.dumps(self.output, indent=4)


def _json_safe(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str)) if isinstance(value, dict) else str(value)


class ToolCall(Event):
    """The LLM asked for a tool call; written before the tool runs.

    Attributes:
        tool_name: The tool's name.
        tool_kwargs: The arguments the LLM gave.
        tool_id: The call's id.
        current_agent_name: The agent that asked for it (batonflow's; not in the repr, so
            ``print(event)`` prints what llama-index's prints).
    """

    tool_name: str
    tool_kwargs: dict[str, Any] = Field(default_factory=dict)
    tool_id: str = ""
    # batonflow's addition, left out of the repr so a printed event reads as llama-index's.
    current_agent_name: str = Field(default="agent", repr=False)


class ToolCallResult(Event):
    """A tool call finished; written after the tool ran (or failed).

    Attributes:
        tool_name: The tool's name.
        tool_kwargs: The arguments it was called with.
        tool_id: The call's id.
        tool_output: llama-index's ``ToolOutput``: ``.content`` is the text the LLM is shown
            (the error text when the call failed), ``.raw_output`` what the tool returned,
            ``.is_error`` whether the call failed.
        return_direct: Whether the tool's output ends the run as the answer.
        current_agent_name: The agent that asked for the call.

    ``is_error`` is read from ``tool_output.is_error`` (a property, not a field, so the repr and
    the fields are llama-index's); ``ToolCallResult(..., is_error=True)`` still builds one,
    setting it on the tool output. ``current_agent_name`` (batonflow's) is not in the repr.
    """

    tool_name: str
    tool_kwargs: dict[str, Any] = Field(default_factory=dict)
    tool_id: str = ""
    tool_output: ToolOutput
    return_direct: bool = False
    current_agent_name: str = Field(default="agent", repr=False)

    @model_validator(mode="before")
    @classmethod
    def _error_flag(cls, data: Any) -> Any:
        # Older callers pass is_error=...: it is the tool output's flag.
        if isinstance(data, dict) and "is_error" in data:
            data = dict(data)
            flag = bool(data.pop("is_error"))
            output = data.get("tool_output")
            if isinstance(output, str):
                name = data.get("tool_name", "")
                output = ToolOutput(content=output, tool_name=name, raw_input={}, raw_output=output)
            if isinstance(output, ToolOutput) and output.is_error != flag:
                output = output.model_copy(update={"is_error": flag})
            if output is not None:
                data["tool_output"] = output
        return data

    @property
    def is_error(self) -> bool:
        """Whether the call failed (``tool_output.is_error``)."""
        return bool(self.tool_output.is_error)

    @field_validator("tool_output", mode="before")
    @classmethod
    def _text_output(cls, value: Any, info: Any) -> Any:
        # A plain text output (older callers) becomes a ToolOutput carrying it.
        if isinstance(value, str):
            name = info.data.get("tool_name", "")
            return ToolOutput(content=value, tool_name=name, raw_input={}, raw_output=value)
        return value

    @field_serializer("tool_output")
    def _json_output(self, value: ToolOutput) -> dict[str, Any]:
        # What a tool returns can be anything (a query engine's Response, a client object):
        # the event is streamed and stored, so what JSON cannot hold is kept as its text.
        return {
            "tool_name": value.tool_name,
            "blocks": [block.model_dump(mode="json") for block in value.blocks],
            "raw_input": _json_safe(value.raw_input),
            "raw_output": _json_safe(value.raw_output),
            "is_error": value.is_error,
        }


class AgentOutput(Event):
    """One LLM turn finished; also the result of an :class:`~batonflow.agents.AgentWorkflow` run.

    ``str(output)`` is the text of the response.

    Attributes:
        response: The assistant's message (a llama-index ``ChatMessage``; ``.content`` is its
            text). A plain string given here becomes an assistant message.
        structured_response: The structured output as a dict, when ``output_cls=`` or
            ``structured_output_fn=`` asked for one.
        tool_calls: The tool calls the LLM asked for in this turn (``ToolSelection`` objects). In
            a run's result, as in llama-index: every tool call of the run as its
            :class:`ToolCallResult` (with ``tool_output``); a run that a ``return_direct``
            tool ended lists ``ToolSelection`` objects.
        is_final: Whether this turn ends the run with an answer.
        current_agent_name: The agent's name.
        raw: The provider's raw response (not serialized).
        retry_messages: Messages sent back to the LLM to fix its output (ReAct format errors).
    """

    response: ChatMessage = Field(
        default_factory=lambda: ChatMessage(role=MessageRole.ASSISTANT, content="")
    )
    structured_response: dict[str, Any] | None = None
    tool_calls: list[ToolSelection | ToolCallResult] = Field(default_factory=list)
    is_final: bool = False
    current_agent_name: str = "agent"
    raw: Any | None = Field(default=None, exclude=True)
    retry_messages: list[ChatMessage] = Field(default_factory=list)

    @field_validator("response", mode="before")
    @classmethod
    def _text_response(cls, value: Any) -> Any:
        if isinstance(value, str):
            return ChatMessage(role=MessageRole.ASSISTANT, content=value)
        return value

    def get_pydantic_model(self, model: type[BaseModel]) -> BaseModel | None:
        """The structured response validated as ``model`` (``None`` if there is none).

        Warns with :class:`PydanticConversionWarning` and returns ``None`` when it does not fit.
        """
        return as_model(self.structured_response, model)

    def __str__(self) -> str:
        return self.response.content or ""


class PrepareEvent(Event):
    """Flow event: build the next prompt (after the user's input or after tool results)."""


class LLMInputEvent(Event):
    """Flow event: the messages for the next LLM call.

    Attributes:
        messages: The system message and the memory's window of the conversation (the agent's
            turn adds the current turn's tool exchange). Role/content dicts are read too.
    """

    messages: list[ChatMessage] = Field(default_factory=list)


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
    "AgentSetup",
    "AgentStart",
    "AgentStream",
    "AgentStreamStructuredOutput",
    "AgentWorkflowStartEvent",
    "LLMInputEvent",
    "PrepareEvent",
    "PydanticConversionWarning",
    "RunToolEvent",
    "ToolCall",
    "ToolCallResult",
    "ToolResultEvent",
    "history_messages",
    "messages_event",
]
