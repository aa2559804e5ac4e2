"""A scripted LLM: replays the responses you give it, offline, for tests and examples.

:class:`ScriptedLLM` is a llama-index-core ``LLM`` with native tool calling, so every flow of
:mod:`batonflow.agents` runs with it exactly as with OpenAI, without a network or a key::

    llm = ScriptedLLM([
        ScriptedResponse(tool_calls=[ScriptedToolCall("add", {"a": 2, "b": 3})]),
        "2 + 3 = 5",
    ])

Each LLM call (chat or completion, streamed or not) consumes the next entry of the script: a
string is the assistant's text; a :class:`ScriptedResponse` adds tool calls; an exception is
raised (to test failures and retries); a callable receives the messages and returns one of
those. Streaming splits the text into word-sized deltas. ``llm.calls`` records the messages of
each call, so tests can check what the LLM was shown.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import ToolSelection
from llama_index.core.tools import BaseTool
from pydantic import PrivateAttr


@dataclass(frozen=True, slots=True)
class ScriptedToolCall:
    """A tool call in a scripted response.

    Attributes:
        name: The tool to call.
        kwargs: Its arguments.
        id: The call id; ``call_<n>`` when not given.
    """

    name: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True, slots=True)
class ScriptedResponse:
    """A scripted assistant message: text and/or native tool calls, and the usage the call
    reports as ``(prompt_tokens, completion_tokens)`` (in ``additional_kwargs``, where
    llama-index's OpenAI LLM puts it; none by default)."""

    text: str = ""
    tool_calls: Sequence[ScriptedToolCall] = ()
    usage: tuple[int, int] | None = None

    def reported(self) -> dict[str, Any]:
        """The usage as a response's ``additional_kwargs`` (empty when none is scripted)."""
        if self.usage is None:
            return {}
        prompt, completion = self.usage
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }


#: One entry of a script.
ScriptEntry: TypeAlias = (
    str | ScriptedResponse | BaseException | Callable[[list[ChatMessage]], "str | ScriptedResponse"]
)

_PIECES = re.compile(r"\s*\S+\s*|\s+")


class ScriptOutOfResponsesError(RuntimeError):
    """The scripted LLM was called more often than its script has entries."""


class ScriptedLLM(FunctionCallingLLM):
    """An offline LLM that replays a script of responses (see the module docs).

    Args:
        responses: The script, consumed one entry per call.
        function_calling: Whether the LLM reports native tool calling (``True``), so that the
            :class:`~batonflow.agents.FunctionCallingAgent` accepts it.
        model: The model name it reports.
    """

    model: str = "scripted"
    function_calling: bool = True

    _script: list[ScriptEntry] = PrivateAttr(default_factory=list)
    _calls: list[list[ChatMessage]] = PrivateAttr(default_factory=list)
    _tools_offered: list[list[str]] = PrivateAttr(default_factory=list)
    _options: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    def __init__(
        self,
        responses: Iterable[ScriptEntry] = (),
        *,
        function_calling: bool = True,
        model: str = "scripted",
        **kwargs: Any,
    ) -> None:
        super().__init__(function_calling=function_calling, model=model, **kwargs)
        self._script = list(responses)
        self._calls = []
        self._tools_offered = []
        self._options = []

    @classmethod
    def class_name(cls) -> str:
        return "ScriptedLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            model_name=self.model,
            is_chat_model=True,
            is_function_calling_model=self.function_calling,
        )

    @property
    def calls(self) -> list[list[ChatMessage]]:
        """The messages of each call so far (a completion prompt is one user message)."""
        return self._calls

    @property
    def tools_offered(self) -> list[list[str]]:
        """The tool names offered in each ``chat_with_tools`` call so far."""
        return self._tools_offered

    @property
    def options(self) -> list[dict[str, Any]]:
        """The extra keyword arguments of each ``chat_with_tools`` call (``tool_choice``...)."""
        return self._options

    @property
    def remaining(self) -> int:
        """How many script entries are left."""
        return len(self._script)

    def add(self, *responses: ScriptEntry) -> None:
        """Append entries to the script."""
        self._script.extend(responses)

    # -- the script ------------------------------------------------------------------------

    def _next(self, messages: list[ChatMessage]) -> ScriptedResponse:
        self._calls.append(list(messages))
        if not self._script:
            raise ScriptOutOfResponsesError(
                f"ScriptedLLM ran out of responses at call {len(self._calls)}; add more "
                "entries to its script (ScriptedLLM([...]) or llm.add(...))."
            )
        entry = self._script.pop(0)
        if isinstance(entry, BaseException):
            raise entry
        if callable(entry) and not isinstance(entry, str | ScriptedResponse):
            entry = entry(list(messages))
        if isinstance(entry, str):
            return ScriptedResponse(text=entry)
        if isinstance(entry, ScriptedResponse):
            return entry
        raise TypeError(
            f"A ScriptedLLM script entry gave {entry!r}; use a str, a ScriptedResponse, an "
            "exception, or a callable returning a str or ScriptedResponse."
        )

    def _message(self, response: ScriptedResponse, *, with_tools: bool = True) -> ChatMessage:
        blocks: list[Any] = [TextBlock(text=response.text)] if response.text else []
        if with_tools:
            for i, call in enumerate(response.tool_calls):
                blocks.append(
                    ToolCallBlock(
                        tool_call_id=call.id or f"call_{len(self._calls)}_{i}",
                        tool_name=call.name,
                        tool_kwargs=dict(call.kwargs),
                    )
                )
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks)

    def _chunks(self, response: ScriptedResponse) -> Generator[ChatResponse, None, None]:
        pieces = _PIECES.findall(response.text) or [""]
        text = ""
        for i, piece in enumerate(pieces):
            text += piece
            last = i == len(pieces) - 1
            partial = ScriptedResponse(text=text, tool_calls=response.tool_calls if last else ())
            yield ChatResponse(
                message=self._message(partial),
                delta=piece,
                additional_kwargs=response.reported() if last else {},
            )

    # -- llama-index LLM interface -----------------------------------------------------------

    # Each public method is wrapped by llama-index's instrumentation callbacks, as real LLMs
    # are, so tracing (batonflow.observability) sees scripted calls as LLM spans.

    def _chat(self, messages: Sequence[ChatMessage], kwargs: dict[str, Any]) -> ChatResponse:
        self._note_tools(kwargs)
        response = self._next(list(messages))
        return ChatResponse(message=self._message(response), additional_kwargs=response.reported())

    def _stream_chat(
        self, messages: Sequence[ChatMessage], kwargs: dict[str, Any]
    ) -> ChatResponseGen:
        self._note_tools(kwargs)
        return self._chunks(self._next(list(messages)))

    def _complete(self, prompt: str) -> CompletionResponse:
        response = self._next([ChatMessage(content=prompt)])
        return CompletionResponse(text=response.text, additional_kwargs=response.reported())

    def _stream_complete(self, prompt: str) -> CompletionResponseGen:
        response = self._next([ChatMessage(content=prompt)])

        def gen() -> CompletionResponseGen:
            for chunk in self._chunks(ScriptedResponse(text=response.text, usage=response.usage)):
                yield CompletionResponse(
                    text=chunk.message.content or "",
                    delta=chunk.delta,
                    additional_kwargs=chunk.additional_kwargs,
                )

        return gen()

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """Return the next scripted response."""
        return self._chat(messages, kwargs)

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        """Stream the next scripted response in word-sized deltas."""
        return self._stream_chat(messages, kwargs)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """Return the next scripted response's text."""
        return self._complete(prompt)

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        """Stream the next scripted response's text."""
        return self._stream_complete(prompt)

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """Async :meth:`chat`."""
        return self._chat(messages, kwargs)

    @llm_chat_callback()
    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        """Async :meth:`stream_chat`."""
        chunks = self._stream_chat(messages, kwargs)

        async def gen() -> AsyncGenerator[ChatResponse, None]:
            for chunk in chunks:
                yield chunk

        return gen()

    @llm_completion_callback()
    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        """Async :meth:`complete`."""
        return self._complete(prompt)

    @llm_completion_callback()
    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseAsyncGen:
        """Async :meth:`stream_complete`."""
        chunks = self._stream_complete(prompt)

        async def gen() -> AsyncGenerator[CompletionResponse, None]:
            for chunk in chunks:
                yield chunk

        return gen()

    # -- tool calling --------------------------------------------------------------------------

    def _note_tools(self, kwargs: dict[str, Any]) -> None:
        tools = kwargs.get("tools")
        if tools is not None:
            self._tools_offered.append([t.metadata.get_name() for t in tools])
            self._options.append({k: v for k, v in kwargs.items() if k != "tools"})

    def _prepare_chat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        messages = list(chat_history or [])
        if isinstance(user_msg, str):
            messages.append(ChatMessage(role=MessageRole.USER, content=user_msg))
        elif user_msg is not None:
            messages.append(user_msg)
        return {
            "messages": messages,
            "tools": list(tools),
            "tool_required": tool_required,
            **kwargs,
        }

    def get_tool_calls_from_response(
        self, response: ChatResponse, error_on_no_tool_call: bool = True, **kwargs: Any
    ) -> list[ToolSelection]:
        """The tool calls of a response (the ``ToolCallBlock``s of its message)."""
        calls = [
            ToolSelection(
                tool_id=block.tool_call_id or "",
                tool_name=block.tool_name,
                tool_kwargs=block.tool_kwargs if isinstance(block.tool_kwargs, dict) else {},
            )
            for block in response.message.blocks
            if isinstance(block, ToolCallBlock)
        ]
        if not calls and error_on_no_tool_call:
            raise ValueError("Expected at least one tool call, but the response has none.")
        return calls


__all__ = [
    "ScriptEntry",
    "ScriptOutOfResponsesError",
    "ScriptedLLM",
    "ScriptedResponse",
    "ScriptedToolCall",
]
